#!/usr/bin/env python3
"""Warm pools measured on a real hypervisor: libvirtd + QEMU (TCG), with the
tiny guest of test-qemu-e2e.py (the Debian cloud kernel and a busybox
initramfs that burns its vCPU from boot until a key is pressed).

For a clone (cold) and for a warm pool of one member in each state
(stopped, saved, paused), tests/helpers/warm-bench calls the libvirt
driver's set_capacity for one member and reports the wall-clock times
around the call; the member is ready when the guest answers a key on its
keyboard (it prints "idle" on its serial console, a file): keys are sent
every 100 ms from the call on. Before the call, the parked member's
footprint is read: the resident memory of its QEMU process (paused), the
size of its managed-save image (saved) and of its overlay. Once the member
is ready, the bench waits for the pool's refill (a new member parked).

Prints a Markdown table (the median of ROUNDS runs per mode, and the
range) for docs/warm-pools.md, and TAP results. Not part of `make check`
(it takes minutes); run it as root from the build directory:

    top_srcdir=.. AUTOSCALED_DRIVER_DIR=drivers/.libs python3 ../tests/integration/bench-warm-qemu.py

It needs what test-qemu-e2e.py needs, and skips as it does without them."""
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from tap import comment as note, done, ok

TOP_SRCDIR = os.environ.get("top_srcdir", ".")
spec = importlib.util.spec_from_file_location("e2e", os.path.join(TOP_SRCDIR, "tests/integration/test-qemu-e2e.py"))
e2e = importlib.util.module_from_spec(spec)
spec.loader.exec_module(e2e)
e2e.BUDGET = 3600.0          # the bench's own bound on virsh timeouts

BENCH = os.environ.get("WARM_BENCH", "tests/helpers/warm-bench")
ROUNDS = int(os.environ.get("WARM_ROUNDS", "3"))
WARMUP = 20                  # s a warm member runs before it is parked: the guest has booted
READY_TIMEOUT = 120.0
MODES = ["cold", "stopped", "saved", "paused"]
SAVE_DIR = "/var/lib/libvirt/qemu/save"


def console(img, name):
    try:
        with open(os.path.join(img, "%s-console.log" % name), errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def rss_kib(name):
    for pid in e2e.qemu_pids(name):
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            if ("guest=%s," % name).encode() not in f.read():
                continue
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    return 0


def file_kib(path):
    try:
        return os.stat(path).st_blocks // 2
    except OSError:
        return 0


def remove(name, pool):
    e2e.virsh("destroy", name, check=False)
    e2e.virsh("undefine", name, "--managed-save", check=False)
    e2e.virsh("vol-delete", name + ".qcow2", "--pool", pool, check=False)


def one(mode, group, template, pool, img):
    """One scale-out; returns (call_ms, ready_ms, footprint) or raises."""
    args = [BENCH, group, mode, "uri=" + e2e.URI, "template=" + template, "volume_mode=overlay",
            "shutdown_timeout=5"]
    if mode != "cold":
        args += ["warm_pool.size=1", "warm_pool.state=" + mode, "warm_pool.warmup=%d" % WARMUP,
                 "warm_pool.refill=1"]
    p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, AUTOSCALED_DRIVER_DIR=e2e.DRIVER_DIR))
    name = group + "-1"
    foot = {}
    try:
        if mode != "cold":
            line = p.stdout.readline()
            if line.strip() != "parked":
                raise RuntimeError("warm-bench: %r %s" % (line, p.stderr.read()))
            if mode in ("saved", "paused") and "userspace up" not in console(img, name):
                raise RuntimeError("the guest had not booted when it was parked: %r" % console(img, name))
            foot = {"rss": rss_kib(name), "save": file_kib(os.path.join(SAVE_DIR, name + ".save")),
                    "overlay": file_kib(os.path.join(img, name + ".qcow2"))}
            p.stdin.write("go\n")
            p.stdin.flush()
        out = p.stdout.readline()
        if not out.startswith("took "):
            p.stdin.close()
            raise RuntimeError("warm-bench %s failed: %r %s" % (mode, out, p.stderr.read().strip()[-500:]))
        _, took, t0, t1 = out.split()
        if took != name:
            raise RuntimeError("took %s, expected %s" % (took, name))
        t0, t1 = int(t0), int(t1)
        before = console(img, name).count("idle from")
        deadline = time.time() + READY_TIMEOUT
        while console(img, name).count("idle from") <= before:
            if time.time() > deadline:
                raise RuntimeError("%s never answered a key: %r" % (name, console(img, name)[-300:]))
            e2e.virsh("send-key", name, "KEY_A", check=False, timeout=10)
            time.sleep(0.1)
        ready = time.time() * 1000
        # The refill, once the member is ready, so that the new warm
        # member's boot does not slow the one measured.
        if mode != "cold":
            p.stdin.write("refill\n")
            p.stdin.flush()
        out, err = p.communicate(timeout=300)
    except Exception:
        p.kill()
        p.wait()
        raise
    if p.returncode != 0:
        raise RuntimeError("warm-bench %s failed: %s" % (mode, err.strip()[-500:]))
    if mode != "cold":
        if not out.startswith("refilled ") or e2e.virsh("domstate", group + "-2", check=False).strip() not in (
                {"paused": "paused", "saved": "shut off", "stopped": "shut off"}[mode],):
            raise RuntimeError("the pool was not refilled with %s-2: %r %s" % (group, out, err.strip()[-300:]))
        foot["refill"] = int(out.split()[1])
    return t1 - t0, ready - t0, foot


def run(tmp, state):
    services = e2e.Services(tmp)
    state["services"] = services
    services.start()
    img = tempfile.mkdtemp(prefix="autoscaled-bench-", dir=e2e.IMAGES)
    state["img"] = img
    os.chmod(img, 0o755)
    pool = os.path.basename(img)
    group = "wb-" + pool.rsplit("-", 1)[1]
    template = group + "-template"
    state.update(pool=pool, group=group, template=template)
    release, size = e2e.build_guest(tmp, img)
    note("guest: kernel %s, initramfs %d KiB" % (release, size // 1024))
    e2e.virsh("pool-create-as", pool, "dir", "--target", img)
    state["pool_created"] = True
    volume = template + ".qcow2"
    e2e.virsh("vol-create-as", pool, volume, "16M", "--format", "qcow2")
    xml = e2e.TEMPLATE_XML.format(name=template, img=img, volume=volume, until=int(time.time() + 7200))
    # The console to a file, which the driver gives each member its own of.
    xml = xml.replace("<serial type='pty'/>\n    <console type='pty'>\n      <target type='serial'/>\n    </console>",
                      "<serial type='file'><source path='%s/console.log' append='on'/></serial>" % img)
    if "console.log" not in xml:
        raise RuntimeError("the template's console was not found to replace")
    path = os.path.join(tmp, "template.xml")
    with open(path, "w") as f:
        f.write(xml)
    e2e.virsh("define", path)
    results = {m: [] for m in MODES}
    for r in range(ROUNDS):
        for mode in MODES:
            try:
                call, ready, foot = one(mode, group, template, pool, img)
            except Exception as ex:
                ok(False, "%s, round %d" % (mode, r + 1), str(ex))
                remove(group + "-1", pool)
                remove(group + "-2", pool)
                continue
            results[mode].append((call, ready, foot))
            ok(True, "%s, round %d: call %.0f ms, ready %.0f ms%s" % (
                mode, r + 1, call, ready, "" if not foot else
                ", RSS %d KiB, save image %d KiB, overlay %d KiB; the pool refilled %d ms after the call" %
                (foot["rss"], foot["save"], foot["overlay"], foot["refill"])))
            for n in (group + "-1", group + "-2"):
                remove(n, pool)
                try:
                    os.unlink(os.path.join(img, n + "-console.log"))
                except OSError:
                    pass
    note("")
    note("| scale-out by | driver call (ms) | call to ready (ms) | parked member holds |")
    note("|---|---|---|---|")
    for mode in MODES:
        v = results[mode]
        if not v:
            continue
        calls = [c for c, _, _ in v]
        readies = [rd for _, rd, _ in v]
        foot = v[-1][2]
        holds = "nothing (no warm member)" if mode == "cold" else \
            "RSS %d MiB" % (statistics.median([f["rss"] for _, _, f in v]) // 1024) if mode == "paused" else \
            "save image %d MiB on disk, no memory" % (statistics.median([f["save"] for _, _, f in v]) // 1024) \
            if mode == "saved" else "overlay %d KiB on disk, no memory" % foot["overlay"]
        note("| %s | %.0f (%.0f-%.0f) | %.0f (%.0f-%.0f) | %s |" % (
            "clone" if mode == "cold" else mode, statistics.median(calls), min(calls), max(calls),
            statistics.median(readies), min(readies), max(readies), holds))


def main():
    e2e.requirements()
    if not os.path.exists(BENCH):
        e2e.skip_all("%s is not built (make check builds it)" % BENCH)
    tmp = tempfile.mkdtemp(prefix="autoscaled-bench-")
    state = {"seen": set()}
    try:
        run(tmp, state)
    except Exception as ex:
        ok(False, "the bench ran to its end", str(ex))
    finally:
        e2e.cleanup(state)
        shutil.rmtree(tmp, ignore_errors=True)
    return done()


if __name__ == "__main__":
    sys.exit(main())
