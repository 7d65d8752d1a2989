#!/usr/bin/env python3
"""Every configuration the project ships is one the daemon starts with.

Each one (etc/, the recipes of etc/examples/, bench/configs/, the examples of autoscaled.conf(5) and the
README's, and the signals of docs/sources.md, each in a group) is first checked with `autoscaled -n` exactly as shipped, then
started for real: only what must point at the test targets is rewritten
(libvirt URIs to the test hypervisor, cloud endpoints to the emulators, the
state directory, the admin socket and the metrics port), the daemon runs
until it has observed every group (its READY), answers on its admin socket,
and stops cleanly on SIGTERM. A config that `-n` calls OK and the daemon then
refuses fails here. Prints TAP."""
import glob
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

top_srcdir = os.environ.get("top_srcdir", ".")
top_builddir = os.environ.get("top_builddir", ".")
sys.path.insert(0, os.path.join(top_srcdir, "tests", "emulators"))
from gce import GceEmulator  # noqa: E402
from azure import AzureEmulator  # noqa: E402
from tap import done, ok as check, skip, skip_all  # noqa: E402

DAEMON = os.environ.get("AUTOSCALED", os.path.join(top_builddir, "autoscaled"))
CTL = os.path.join(top_builddir, "autoscalectl")
START_TIMEOUT = 40  # the daemon's own READY timeout is 30 s


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- the configurations the project ships ---------------------------------

def man_examples():
    """The .EX blocks of autoscaled.conf(5)'s EXAMPLES, as a reader types them."""
    text = open(os.path.join(top_srcdir, "man", "autoscaled.conf.5")).read()
    section = text.split("\n.SH EXAMPLES\n", 1)[1].split("\n.SH ", 1)[0]
    blocks = re.findall(r"^\.EX\n(.*?)^\.EE$", section, re.S | re.M)
    return [b.replace("\\-", "-").replace("\\(dq", '"').replace("\\e", "\\") for b in blocks]


def readme_examples():
    """The configuration blocks of README.md (``` fences holding `groups = (`)."""
    text = open(os.path.join(top_srcdir, "README.md")).read()
    return [b for b in re.findall(r"^```[a-z]*\n(.*?)^```$", text, re.S | re.M) if "groups = (" in b]


def shipped():
    """(name, main text, {relative path: text of an included file})."""
    out = []
    recipes = glob.glob(os.path.join(top_srcdir, "etc", "examples", "*.conf"))
    # The five use cases of docs/recipes.md; a new recipe is found by the glob.
    check(len(recipes) >= 5, "etc/examples has its recipes", len(recipes))
    # docs/recipes.md names the files rather than copying them, so it
    # cannot drift from what is tested; every recipe needs its paragraph.
    page = open(os.path.join(top_srcdir, "docs", "recipes.md")).read()
    for path in sorted(recipes):
        rel = os.path.relpath(path, top_srcdir)
        check("`%s`" % rel in page, "docs/recipes.md describes %s" % rel)
    for path in sorted(glob.glob(os.path.join(top_srcdir, "etc", "*.conf")) + recipes +
                       glob.glob(os.path.join(top_srcdir, "bench", "configs", "*.conf"))):
        out.append((os.path.relpath(path, top_srcdir), open(path).read(), {}))
    man = man_examples()
    # The second example is conf.d/workers.conf, which the first includes.
    check(len(man) == 2, "autoscaled.conf(5) has its two examples", len(man))
    if len(man) == 2:
        out.append(("autoscaled.conf(5) examples", man[0], {"conf.d/workers.conf": man[1]}))
    for i, text in enumerate(readme_examples()):
        out.append(("README.md example %d" % (i + 1), text, {}))
    # docs/sources.md shows signals; each runs in a group of its own.
    docs = open(os.path.join(top_srcdir, "docs", "sources.md")).read()
    signals = [b for b in re.findall(r"^```\n(\{.*?)^```$", docs, re.S | re.M) if "source = " in b]
    check(len(signals) >= 2, "docs/sources.md has its signal examples", len(signals))
    for i, sig in enumerate(signals):
        out.append(("docs/sources.md signal %d" % (i + 1),
                    'groups = ( { name = "docs"; driver = "libvirt";\n'
                    '  driver_options = { uri = "test:///default"; template = "test"; }; min = 1; max = 2;\n'
                    "  signals = ( %s ); } );\n" % sig, {}))
    return out


# --- rewriting what must point at the test targets -------------------------

def set_agent(text, d, metrics_port):
    """Points the state directory and the admin socket into d and the metrics
    port at a free one; drops admin_group (no such group here)."""
    values = {"state_directory": '"%s/state"' % d, "admin_socket": '"%s/admin.sock"' % d}
    text = re.sub(r'^\s*admin_group\s*=\s*"[^"]*"\s*;.*$', "", text, flags=re.M)
    text = re.sub(r'(metrics_listen\s*=\s*)"[^"]*"', r'\1"127.0.0.1:%d"' % metrics_port, text)
    m = re.search(r"^\s*agent\s*=\s*\{", text, re.M)
    if not m:
        return "agent = { %s };\n" % " ".join("%s = %s;" % kv for kv in values.items()) + text
    missing = []
    for key, value in values.items():
        text, n = re.subn(r"(%s\s*=\s*)\"[^\"]*\"" % key, lambda mm, v=value: mm.group(1) + v, text)
        if n == 0:
            missing.append("%s = %s;" % (key, value))
    return text[:m.end()] + " " + " ".join(missing) + text[m.end():]


def driver_blocks(text):
    """(driver name, start, end) of each group's driver_options { ... } body."""
    out = []
    for m in re.finditer(r'driver\s*=\s*"([^"]+)"\s*;', text):
        o = re.compile(r"driver_options\s*=\s*\{").search(text, m.end())
        if o:
            end = text.index("}", o.end())
            out.append((m.group(1), o.end(), end))
    return out


def option(body, key):
    m = re.search(r'\b%s\s*=\s*"([^"]*)"' % key, body)
    return m.group(1) if m else None


def test_uris(m):
    """A URI becomes the test hypervisor's; a list of them (one per host)
    stays a list of as many, so that weights still match it."""
    value = m.group(2)
    if value.startswith("["):
        n = len(re.findall(r'"[^"]*"', value))
        return m.group(1) + "[ " + ", ".join(['"test:///default"'] * n) + " ]"
    return m.group(1) + '"test:///default"'


def source_blocks(text, source):
    """(start, end) of the source_options { ... } body of each signal of source."""
    out = []
    for m in re.finditer(r'\bsource\s*=\s*"%s"\s*;' % re.escape(source), text):
        # The options may come before or after the source within the signal.
        sig_start = text.rfind("{", 0, m.start())
        o = re.compile(r"source_options\s*=\s*\{").search(text, sig_start)
        if o:
            out.append((o.end(), text.index("}", o.end())))
    return out


def retarget(text, gce, gurl, az, aurl):
    """Libvirt URIs to the test hypervisor; cloud groups and the cloud
    monitoring sources to the emulators, which learn the groups the
    configuration names."""
    for source, extra in (("gce_monitoring", ' monitoring_base = "%s/v3"; metadata_host = "%s"; '
                           % (gurl, gurl.split("//")[1])),
                          ("azure_monitor", ' arm_base = "%s"; imds_base = "%s"; ' % (aurl, aurl))):
        for start, end in reversed(source_blocks(text, source)):
            text = text[:start] + extra + text[start:]
    for driver, start, end in reversed(driver_blocks(text)):
        body = text[start:end]
        if driver == "libvirt":
            body = re.sub(r'(\buri\s*=\s*)("[^"]*"|\[[^\]]*\])', test_uris, body)
        elif driver == "gce-mig":
            zone, region = option(body, "zone"), option(body, "region")
            gce.add_group(option(body, "project"), "zones" if zone else "regions", zone or region,
                          option(body, "name"), 2)
            body = ' compute_base = "%s/compute/v1"; metadata_host = "%s"; ' % (gurl, gurl.split("//")[1]) + body
        elif driver == "azure-vmss":
            az.add_set(option(body, "subscription"), option(body, "resource_group"), option(body, "name"), 2)
            body = ' arm_base = "%s"; imds_base = "%s"; ' % (aurl, aurl) + body
        text = text[:start] + body + text[end:]
    return text


# --- running ---------------------------------------------------------------

def write_tree(d, main, includes):
    os.makedirs(d, exist_ok=True)
    conf = os.path.join(d, "autoscaled.conf")
    with open(conf, "w") as f:
        f.write(main)
    for rel, text in includes.items():
        os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
        with open(os.path.join(d, rel), "w") as f:
            f.write(text)
    return conf


def check_n(name, conf):
    """autoscaled -n from the project's root, as the README runs it."""
    p = subprocess.run([DAEMON, "-n", "-c", conf], cwd=top_srcdir, capture_output=True, text=True, timeout=60)
    if "not available in this build" in p.stderr:
        skip("%s: -n" % name, "a source this build lacks: " + p.stderr.strip())
        return None
    return check(p.returncode == 0 and "configuration OK" in p.stdout, "%s: autoscaled -n says OK" % name,
                 (p.stdout + p.stderr).strip())


def start(name, conf, d):
    sock = os.path.join(d, "admin.sock")
    log_path = os.path.join(d, "daemon.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen([DAEMON, "-f", "-c", conf], cwd=top_srcdir, stdout=log, stderr=subprocess.STDOUT)
    ready = died = False
    deadline = time.time() + START_TIMEOUT
    try:
        while time.time() < deadline:
            text = open(log_path).read()
            if "ready:" in text:
                ready = "every group observed" in text or "no groups configured" in text
                break
            if proc.poll() is not None:
                died = True
                break
            time.sleep(0.1)
        text = open(log_path).read()
        tail = "\n".join(text.splitlines()[-15:])
        check(not died, "%s: the daemon starts and keeps running" % name,
              "exit %s\n%s" % (proc.returncode, tail))
        check(ready, "%s: the daemon observes every group (READY)" % name, tail)
        if not died:
            st = subprocess.run([CTL, "-s", sock, "status"], capture_output=True, text=True, timeout=10)
            check(st.returncode == 0, "%s: it answers on its admin socket" % name, st.stdout + st.stderr)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = proc.wait()
            if not died:
                check(rc == 0, "%s: SIGTERM stops it cleanly" % name, "exit %s" % rc)


def main():
    if not os.path.exists(os.path.join(os.environ.get("AUTOSCALED_DRIVER_DIR", ""), "libvirt.so")):
        skip_all("built without the libvirt driver")
    gce, az = GceEmulator(), AzureEmulator()
    gurl, aurl = gce.start(), az.start()
    tmp = tempfile.TemporaryDirectory(prefix="autoscaled-shipped.")
    try:
        configs = shipped()
        check(len(configs) >= 10, "every shipped configuration is found (%d)" % len(configs),
              [c[0] for c in configs])
        for i, (name, text, includes) in enumerate(configs):
            d = os.path.join(tmp.name, str(i))
            if check_n(name, write_tree(os.path.join(d, "as-shipped"), text, includes)) is None:
                continue
            run = os.path.join(d, "run")
            os.makedirs(run)
            main_text = retarget(set_agent(text, run, free_port()), gce, gurl, az, aurl)
            incl = {rel: retarget(t, gce, gurl, az, aurl) for rel, t in includes.items()}
            start(name, write_tree(run, main_text, incl), run)
    finally:
        gce.stop()
        az.stop()
        tmp.cleanup()
    return done()


if __name__ == "__main__":
    sys.exit(main())
