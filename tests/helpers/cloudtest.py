"""Helpers of the cloud driver tests: running the probe against a driver
plugin, temporary files and test keys. TAP output is tap.py's (Tap here is
its registry of test functions)."""

import datetime
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

top_srcdir = os.environ.get("top_srcdir") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
top_builddir = os.environ.get("top_builddir") or os.getcwd()
sys.path.insert(0, os.path.join(top_srcdir, "tests", "emulators"))
sys.path.insert(0, os.path.join(top_srcdir, "tests", "integration"))

from tap import Tests as Tap  # noqa: E402,F401  (the tests import it from here)

PROBE = os.path.join(top_builddir, "tests", "helpers", "cloud-probe")


os.environ.setdefault("AUTOSCALED_DRIVER_DIR", os.path.join(top_builddir, "drivers", ".libs"))


class Result:
    def __init__(self, proc, elapsed):
        self.stderr = proc.stderr
        self.returncode = proc.returncode
        self.elapsed = elapsed
        self.ops = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]

    def op(self, i):
        return self.ops[i]


def probe(driver, options, ops, timeout=120, env=None):
    args = [PROBE, driver, "-g", "test"]
    for k, v in options.items():
        args += ["-o", "%s=%s" % (k, v)]
    start = time.time()
    proc = subprocess.run(args + list(ops), capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))
    # 0: every operation succeeded, 1: one failed (which tests may want);
    # anything else (a usage error, a crash, a sanitizer's report) fails
    # the test at once, whatever it looks at next.
    check(proc.returncode in (0, 1), "cloud-probe exited with status %d" % proc.returncode, proc.stderr[-3000:],
          proc.stdout)
    return Result(proc, time.time() - start)


def check(cond, what, *details):
    if not cond:
        raise AssertionError(what + "".join("\n" + str(d) for d in details))


def check_refused(url, status):
    """A plain GET of URL (no credentials, no special header) is answered
    with the HTTP error STATUS."""
    try:
        urllib.request.urlopen(url, timeout=5)
        check(False, "accepted")
    except urllib.error.HTTPError as e:
        check(e.code == status, str(status), e.code)


def private_file(directory, name, content, mode=0o600):
    path = os.path.join(directory, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as f:
        f.write(content)
    os.chmod(path, mode)
    return path


def rsa_key(directory):
    """A fresh RSA key for this run (never committed): (private PEM, public key file)."""
    priv = os.path.join(directory, "key.pem")
    pub = os.path.join(directory, "pub.pem")
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", priv],
                   check=True, capture_output=True)
    subprocess.run(["openssl", "pkey", "-in", priv, "-pubout", "-out", pub], check=True, capture_output=True)
    with open(priv) as f:
        pem = f.read()
    os.unlink(priv)
    return pem, pub


def free_port():
    """A loopback TCP port free at the moment, chosen at random below the
    kernel's ephemeral range: ports from bind(0) are the ones outgoing
    connections use too, and one may take it before the server under test
    listens. Still a race with other tests: a server that cannot listen
    should be started again on another port."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        lo = int(f.read().split()[0])
    hi = lo - 1 if lo > 11000 else 60000
    for _ in range(200):
        p = random.randrange(10000, hi)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", p))
            except OSError:
                continue
        return p
    raise OSError("no free port")


def tempdir():
    return tempfile.TemporaryDirectory(prefix="autoscaled-cloud-")


# A process the test depends on (the daemon, a server it started) that dies
# fails every wait at once instead of letting each run out its timeout; the
# first wait to see it gone says so, with its exit status and the last lines
# of its log, as TAP comments.
_watched = []


class Watched:
    def __init__(self, proc, name, log_path):
        self.proc = proc
        self.name = name
        self.log_path = log_path
        self.told = False


def watch(proc, name="autoscaled", log_path=None):
    """proc (a Popen) must stay alive while the test waits."""
    _watched.append(Watched(proc, name, log_path))
    return proc


def unwatch(proc):
    """proc may end from now on (the test is stopping it)."""
    _watched[:] = [w for w in _watched if w.proc is not proc]


def log_tail(path, n=25):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()[-n:]
    except OSError:
        return []


def dead():
    """The watched processes that are gone; each is reported once."""
    gone = []
    for w in _watched:
        if w.proc.poll() is None:
            continue
        gone.append(w)
        if w.told:
            continue
        w.told = True
        print("# %s (pid %d) is gone (exit status %s); the waits that need it fail at once" %
              (w.name, w.proc.pid, w.proc.returncode), flush=True)
        if w.log_path:
            print("# last lines of %s:" % w.log_path, flush=True)
            for line in log_tail(w.log_path):
                print("#   " + line, flush=True)
    return gone


def wait_for(pred, timeout, interval=0.2):
    """Calls pred() until it returns a true value (returned) or timeout
    seconds have passed (the last value, false). Returns at once when a
    watched process is gone and pred() still fails (what the process did
    before it died is still seen)."""
    deadline = time.monotonic() + timeout
    while True:
        gone = dead()
        v = pred()
        if v or gone or time.monotonic() >= deadline:
            return v
        time.sleep(interval)


def evaluations_since(sock, group, since):
    """How many decisions (one per evaluation) the daemon on admin socket
    sock made on group after since (seconds since the epoch), by the admin
    API's history."""
    ctl = os.path.join(top_builddir, "autoscalectl")
    p = subprocess.run([ctl, "-s", sock, "--json", "history", group], capture_output=True, text=True, timeout=30)
    try:
        decisions = json.loads(p.stdout)["decisions"] if p.returncode == 0 else []
    except ValueError:
        return 0
    n = 0
    for d in decisions:
        t = datetime.datetime.strptime(d["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
        n += t.timestamp() > since
    return n


def wait_evaluations(sock, groups, n, timeout=30):
    """Waits until the daemon has evaluated each of groups n more times:
    that nothing happens is shown by decisions that did not act, not by
    time that passed."""
    since = time.time()
    return wait_for(lambda: all(evaluations_since(sock, g, since) >= n for g in groups), timeout)


def start_daemon(conf, log_path, args=(), env=None, name="autoscaled"):
    """The built daemon in the foreground on conf, its output in log_path,
    watched."""
    daemon = os.environ.get("AUTOSCALED", os.path.join(top_builddir, "autoscaled"))
    log = open(log_path, "a")
    try:
        proc = subprocess.Popen([daemon, "-f", "-c", conf] + list(args), stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=dict(os.environ, **(env or {})))
    finally:
        log.close()
    return watch(proc, name, log_path)


def stop(proc, timeout=15, sig=signal.SIGTERM):
    """Stops a process the test started; its exit status, None when it had
    to be killed."""
    unwatch(proc)
    if proc.poll() is not None:
        return proc.returncode
    proc.send_signal(sig)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None
