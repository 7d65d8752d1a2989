#!/usr/bin/env python3
"""The daemon's systemd contract, with a NOTIFY_SOCKET receiver made here.

Asserts READY=1, STATUS=, the watchdog ping at half of WATCHDOG_USEC,
RELOADING=1 (with MONOTONIC_USEC) then READY=1 after SIGHUP with a good
configuration, the old configuration kept after SIGHUP with a broken one,
and STOPPING=1 on SIGTERM. Prints TAP."""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

TOP_SRCDIR = os.environ.get("top_srcdir", ".")
DAEMON = os.environ.get("AUTOSCALED", "./autoscaled")
sys.path.insert(0, os.path.join(TOP_SRCDIR, "tests", "helpers"))
from cloudtest import dead, unwatch, watch  # noqa: E402
from tap import done, ok as check  # noqa: E402


CONFIG = """
agent = {{ interval = "1s"; state_directory = "{state}"; admin_socket = "{state}/admin.sock"; }};
groups = (
  {{
    name = "{name}";
    driver = "libvirt";
    driver_options = {{ uri = "test:///default"; template = "test"; }};
    min = 1; max = 4; default = 1;
    signals = (
      {{ name = "queue"; source = "exec"; type = "average"; target = 5.0;
         source_options = {{ command = [ "/bin/echo", "3" ]; }}; poll_interval = "1s"; }}
    );
  }}
);
"""


def recv_all(sock, until, timeout):
    """Collects datagrams until one contains `until` or timeout passes, or
    at once when the daemon is gone (what it sent before is kept)."""
    got = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        gone = dead()
        sock.settimeout(max(0.01, min(0.2, deadline - time.monotonic())))
        try:
            data = sock.recv(4096).decode()
        except socket.timeout:
            if gone:
                break
            continue
        got.append(data)
        if until and until in data:
            break
    return got


def main():
    tmp = tempfile.mkdtemp(prefix="autoscaled-notify-")
    proc = None
    try:
        conf = os.path.join(tmp, "autoscaled.conf")
        with open(conf, "w") as f:
            f.write(CONFIG.format(state=tmp, name="web"))
        sock_path = os.path.join(tmp, "notify.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(sock_path)
        env = dict(os.environ)
        env["NOTIFY_SOCKET"] = sock_path
        env["WATCHDOG_USEC"] = "400000"  # pings expected every 200 ms
        log = open(os.path.join(tmp, "daemon.log"), "w")
        proc = subprocess.Popen([DAEMON, "-f", "--dry-run", "-c", conf], env=env,
                                stdout=log, stderr=subprocess.STDOUT)
        watch(proc, "autoscaled", os.path.join(tmp, "daemon.log"))
        env["WATCHDOG_PID"] = str(proc.pid)
        msgs = recv_all(sock, "READY=1", 20)
        text = "\n".join(msgs)
        check("READY=1" in text, "READY=1 sent at start-up", text)
        check(any(m.startswith("STATUS=") or "\nSTATUS=" in m for m in msgs), "STATUS= lines sent", text)

        # The watchdog: WATCHDOG_PID was not set when the daemon started,
        # so sd_watchdog_enabled() relies on WATCHDOG_USEC alone.
        msgs = recv_all(sock, None, 1.5)
        pings = sum(m.count("WATCHDOG=1") for m in msgs)
        check(pings >= 3, "WATCHDOG=1 pinged at half of WATCHDOG_USEC", "%d pings in 1.5 s" % pings)

        # A good reload: RELOADING=1 with MONOTONIC_USEC, then READY=1.
        with open(conf, "w") as f:
            f.write(CONFIG.format(state=tmp, name="web2"))
        proc.send_signal(signal.SIGHUP)
        msgs = [m for m in recv_all(sock, "READY=1", 10) if m.strip() != "WATCHDOG=1"]
        text = "\n".join(msgs)
        i_rel = text.find("RELOADING=1")
        i_ready = text.find("READY=1", i_rel if i_rel >= 0 else 0)
        check(i_rel >= 0 and "MONOTONIC_USEC=" in text, "RELOADING=1 with MONOTONIC_USEC on SIGHUP", text)
        check(i_rel >= 0 and i_ready > i_rel, "READY=1 after RELOADING=1", text)

        # A broken reload: the daemon keeps running on the previous config
        # and says why in STATUS=.
        with open(conf, "w") as f:
            f.write("groups = ( { name = \"web\"; min = 5; max = 2; } );\n")
        proc.send_signal(signal.SIGHUP)
        msgs = [m for m in recv_all(sock, "READY=1", 10) if m.strip() != "WATCHDOG=1"]
        text = "\n".join(msgs)
        check("Reload failed" in text and "autoscaled.conf:" in text,
              "a broken config on SIGHUP: STATUS= says why, naming file and line", text)
        time.sleep(0.5)
        check(proc.poll() is None, "the daemon keeps running after a broken reload")
        log.flush()
        with open(os.path.join(tmp, "daemon.log")) as f:
            daemon_log = f.read()
        check("web2" in daemon_log and "previous configuration stays" in daemon_log,
              "the journal (stderr here) says the previous configuration stays", daemon_log[-2000:])

        # From here on the daemon is meant to exit.
        unwatch(proc)
        proc.send_signal(signal.SIGTERM)
        msgs = recv_all(sock, "STOPPING=1", 10)
        check("STOPPING=1" in "\n".join(msgs), "STOPPING=1 on SIGTERM", "\n".join(msgs))
        try:
            rc = proc.wait(10)
        except subprocess.TimeoutExpired:
            rc = None
        check(rc == 0, "clean exit on SIGTERM", "exit status %r" % rc)
    finally:
        if proc and proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)

    return done()


if __name__ == "__main__":
    sys.exit(main())
