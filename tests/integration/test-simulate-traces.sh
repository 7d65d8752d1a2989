#!/bin/sh
# `autoscaled simulate` on the trace inputs operators have, end to end:
#   - honest evaluation: a trace cut anywhere (at a step boundary, inside a
#     step, inside a window, inside a gap, before its rows get denser) gives
#     the same per-step decisions before the cut as the whole trace, for the
#     HPA baseline and the recommended configuration;
#   - the same trace gzip, bzip2 and xz compressed, under names that say
#     nothing, gives the same results as the plain file;
#   - SWF job logs and time,duration request logs replay;
#   - --warmup, --initial-instances and --peak-instances are reported;
#   - memory stays flat as the trace grows: a 1-day and a 20-day gzip trace
#     at 1 s steps replay in the same peak RSS.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ -n "${AUTOSCALED:-}" ] && "$AUTOSCALED" simulate --help 2>/dev/null | grep -q -- --trace; then
	SIM="$AUTOSCALED simulate"
else
	SIM="$top_builddir/bench/simulate-bench"
fi
export SIM top_srcdir tmp
exec python3 - <<'PY'
import csv, gzip, bz2, lzma, json, os, resource, shlex, subprocess, sys

sim = shlex.split(os.environ["SIM"])
top = os.environ["top_srcdir"]
tmp = os.environ["tmp"]
n = 0
fails = 0
print("1..12", flush=True)


def ok(cond, what):
    global n, fails
    n += 1
    if not cond:
        fails += 1
    print("%s %d - %s" % ("ok" if cond else "not ok", n, what), flush=True)


def run(args, check=True):
    r = subprocess.run(sim + args, capture_output=True, text=True)
    if check and r.returncode != 0:
        sys.stderr.write("simulate %s failed:\n%s\n" % (" ".join(args), r.stderr))
    return r


def steps(path):
    with open(path) as f:
        return list(csv.DictReader(f))


# Six hours of load at 10 s rows, then 5 s rows (a csv's rows may get
# denser), with 20 minutes without rows (a row's value holds through them):
# time,value in epoch seconds.
t0 = 1795766400
rows = []
t = t0
import math
while t < t0 + 6 * 3600:
    if not (t0 + 2 * 3600 <= t < t0 + 2 * 3600 + 1200):
        v = 40 + 30 * math.sin((t - t0) / 2400.0) + (25 if (t // 10) % 37 == 0 else 0)
        rows.append((t, max(0.0, v)))
    t += 10 if t < t0 + 4 * 3600 else 5
full = os.path.join(tmp, "full.csv")
with open(full, "w") as f:
    f.write("time,value\n")
    for t, v in rows:
        f.write("%d,%.3f\n" % (t, v))

common = ["--group", "pool", "--format", "csv", "--capacity-per-instance", "8", "--boot-delay", "120s",
          "--step", "15s"]
# Cuts: at a step boundary, inside a step, inside the 60 s window, inside the
# gap, and before the rows get denser.
cuts = [t0 + 3600, t0 + 3600 + 25, t0 + 5400 + 50, t0 + 2 * 3600 + 600, t0 + 4 * 3600 - 5, t0 + 5 * 3600 + 7]
for conf in ("hpa", "recommended"):
    cpath = os.path.join(top, "bench", "configs", conf + ".conf")
    for initial in (["--initial-instances", "5"], []):
        whole = os.path.join(tmp, "whole.steps")
        r = run(["-c", cpath, "--trace", full, "--csv", whole] + common + initial)
        a = steps(whole) if r.returncode == 0 else []
        bad = []
        for cut in cuts:
            part = os.path.join(tmp, "part.csv")
            with open(part, "w") as f:
                f.write("time,value\n")
                for t, v in rows:
                    if t < cut:
                        f.write("%d,%.3f\n" % (t, v))
            pst = os.path.join(tmp, "part.steps")
            r = run(["-c", cpath, "--trace", part, "--csv", pst] + common + initial)
            b = steps(pst) if r.returncode == 0 else []
            if not b:
                bad.append((cut, "no run"))
                continue
            for i, s in enumerate(b):
                w = a[i] if i < len(a) else None
                if w is None or int(s["time_ms"]) >= cut * 1000:
                    if w is None:
                        bad.append((cut, "extra step %d" % i))
                    break
                for k in ("time_ms", "desired", "action", "ready", "billed"):
                    if s[k] != w[k]:
                        bad.append((cut, "step %d %s %s vs %s" % (i, k, w[k], s[k])))
                if int(s["time_ms"]) + 15000 <= cut * 1000 and s["demand"] != w["demand"]:
                    bad.append((cut, "step %d demand %s vs %s" % (i, w["demand"], s["demand"])))
        ok(a and not bad, "%s%s: decisions before each cut are those of the whole trace %s" % (
            conf, " (initial given)" if initial else "", bad[:3]))

# Compressed: the same results, told by the first bytes, whatever the name.
plain = run(["-c", os.path.join(top, "bench/configs/recommended.conf"), "--trace", full, "--json"] + common)
same = plain.returncode == 0
for name, opener in (("a.gz", gzip.open), ("b.dat", bz2.open), ("c.csv", lzma.open)):
    p = os.path.join(tmp, name)
    with opener(p, "wb") as f, open(full, "rb") as g:
        f.write(g.read())
    r = run(["-c", os.path.join(top, "bench/configs/recommended.conf"), "--trace", p, "--json"] + common)
    if r.returncode != 0:
        same = False
        continue
    m1, m2 = json.loads(plain.stdout), json.loads(r.stdout)
    for k in ("vm_hours", "oracle_vm_hours", "tau_u", "actions_out", "actions_in", "steps"):
        same = same and m1[k] == m2[k]
ok(same, "gzip, bzip2 and xz replay as the plain file")

# A truncated gzip file is an error, not a shorter trace.
with open(os.path.join(tmp, "a.gz"), "rb") as f:
    data = f.read()
with open(os.path.join(tmp, "cut.gz"), "wb") as f:
    f.write(data[: len(data) // 2])
r = run(["-c", os.path.join(top, "bench/configs/recommended.conf"), "--trace", os.path.join(tmp, "cut.gz")]
        + common, check=False)
ok(r.returncode != 0 and "corrupt or truncated" in r.stderr, "a truncated gzip trace is refused")

# SWF and request logs.
conf = os.path.join(top, "bench/configs/recommended.conf")
r = run(["-c", conf, "--group", "pool", "--trace", os.path.join(top, "tests/data/traces/small.swf"), "--format",
         "swf", "--capacity-per-instance", "2", "--step", "5s", "--json"])
m = json.loads(r.stdout) if r.returncode == 0 else {}
ok(m.get("steps") == 42 and m.get("oracle_vm_hours", 0) > 0, "an SWF job log replays (210 s of jobs)")
r = run(["-c", conf, "--group", "pool", "--trace", os.path.join(top, "tests/data/traces/requests.csv"), "--format",
         "requests", "--capacity-per-instance", "1", "--step", "1s", "--json"])
m = json.loads(r.stdout) if r.returncode == 0 else {}
ok(m.get("steps") == 4, "a time,duration request log replays (4 s of requests)")

# --warmup and the initial pool are reported.
r = run(["-c", conf, "--trace", full, "--json", "--warmup", "1h", "--initial-instances", "3"] + common)
m = json.loads(r.stdout) if r.returncode == 0 else {}
ok(m.get("warmup_steps") == 240 and m.get("initial_instances") == 3 and m.get("initial_instances_given") is True
   and m.get("scored_from_ms") == (t0 + 3600) * 1000 and abs(m.get("hours", 0) - 5.0) < 0.01,
   "--warmup 1h scores the rest; the initial pool is shown")
r = run(["-c", conf, "--trace", full, "--warmup", "7d"] + common, check=False)
ok(r.returncode != 0 and "warm-up covers the whole trace" in r.stderr, "a warm-up longer than the trace is refused")

# Capacity sized from the peak: a setup pass over the whole trace, shown.
pk = os.path.join(tmp, "peak.steps")
r = run(["-c", conf, "--group", "pool", "--format", "csv", "--trace", full, "--boot-delay", "120s", "--step", "15s",
         "--peak-instances", "20", "--json", "--csv", pk])
m = json.loads(r.stdout) if r.returncode == 0 else {}
peak = max(float(s["demand"]) for s in steps(pk) if s["demand"]) if r.returncode == 0 else -1
ok(m.get("peak_instances") == 20 and abs(m.get("peak_demand", 0) - peak) < 1e-3 * peak
   and abs(m.get("capacity_per_instance", 0) * 20 - m.get("peak_demand", 0)) < 1e-9 * peak,
   "--peak-instances 20 sizes the capacity from the busiest step and shows it")

# Bounded memory: peak RSS of 1 day and of 20 days at 1 s steps, nasa format
# (one line of per-second counts), gzip compressed.


def nasa_gz(path, days):
    with gzip.open(path, "wt", compresslevel=1) as f:
        for d in range(days):
            f.write(" ".join(str(int(6 + 5 * math.sin(i / 9000.0) + (i * 7919) % 5)) for i in range(86400)))
            f.write(" ")


def peak_rss(args):
    pid = os.fork()
    if pid == 0:
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        os.execvp(sim[0], sim + args)
    _, status, ru = os.wait4(pid, 0)
    return os.waitstatus_to_exitcode(status), ru.ru_maxrss


rss = {}
for days in (1, 20):
    p = os.path.join(tmp, "n%d.gz" % days)
    nasa_gz(p, days)
    rc, rss[days] = peak_rss(["-c", conf, "--group", "pool", "--trace", p, "--format", "nasa",
                              "--capacity-per-instance", "0.5", "--boot-delay", "120s", "--step", "1s"])
    if rc != 0:
        rss[days] = None
ok(rss[1] and rss[20] and rss[20] < rss[1] + 2048,
   "peak RSS of 20 days at 1 s steps stays that of 1 day (%s KiB vs %s KiB)" % (rss[20], rss[1]))
sys.exit(1 if fails else 0)
PY
