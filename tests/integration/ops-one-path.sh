#!/bin/bash
# One decision path: the daemon, `autoscaled explain` and `autoscaled
# simulate` give the same decision and the same hold reason for the same
# inputs. The daemon runs a sequence on the filepool driver (a scale-out, a
# pause, a partial observation, a pin); the inputs it recorded in its
# decision records (time, count, signal value, the agent's own inputs) are
# then replayed through explain, one call after the other on the state the
# previous one saved, and through simulate, with the agent's inputs as an
# --agent-inputs file, and each step is compared with the daemon's.
#
# The group has no stabilization window and no rate limit, so that each
# decision depends on its inputs and not on the wall-clock spacing of the
# daemon's evaluations, which simulate replays on a regular virtual clock.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/integration/ops-lib.sh"

# The pool starts with one instance, which simulate's warm pool matches.
printf 'next 2\nweb-1 %s\n' "$(now_ms)" > "$T/pool"
set_load 10
POOL_OPTIONS="partial = \"$T/partial\";"
write_conf "" "" 0
start_daemon || { not_ok "the daemon starts"; tap_done; exit 1; }
check "the pool holds at 1 for a load of 10" wait_evaluations 2

# last_hold_is REASON: the newest decision held for REASON.
last_hold_is() {
	ctl --json history web 2>/dev/null | python3 -c '
import json, sys
d = sorted(json.load(sys.stdin)["decisions"], key=lambda r: r["time"])
sys.exit(0 if d and d[-1]["hold"] == sys.argv[1] else 1)' "$1"
}

set_load 35
check "a load of 35: scaled out to 4" wait_for 30 pool_is 4
wait_evaluations 2
ctl pause web >/dev/null
check "paused: the daemon holds for its own reason" wait_for 30 last_hold_is paused
set_load 60
# The hold reason stays "paused", but the load now asks for more: an
# operator must see that at INFO.
check "paused: the decision on the new load is at INFO" \
	wait_for 30 grep -Eq "^web: queue 60 vs 10/instance -> 6.*paused by an operator: not acting" "$T/daemon.log"
wait_evaluations 2
check "paused: nothing was started" pool_is 4
ctl resume web >/dev/null
check "resumed: scaled out to 6" wait_for 30 pool_is 6
wait_evaluations 2
touch "$T/partial"
set_load 20
check "a partial observation holds a scale-in for its own reason" wait_for 30 last_hold_is partial_observation
wait_evaluations 2
check "partial: nothing was removed" pool_is 6
rm -f "$T/partial"
check "a full observation: scaled in to 2" wait_for 30 pool_is 2
wait_evaluations 2
ctl pin web 5 --for 1h >/dev/null
check "pinned at 5: scaled out to 5" wait_for 30 pool_is 5
check "pinned: the decisions hold for the pin" wait_for 30 last_hold_is pinned
wait_evaluations 2
ctl unpin web >/dev/null
check "unpinned: back to 2" wait_for 30 pool_is 2
wait_evaluations 2

ctl --json history web > "$T/history.json"

# What-ifs on the live daemon's state: the engine runs on the group's
# windows, history, pause and pin with the given inputs, and nothing acts.
calls_before=$(wc -l < "$T/calls")
out=$(ctl --json explain web --what-if --value queue=60)
check "what-if: a load of 60 would scale out to 6, from the daemon's state" python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["what_if"] is True and d["start"] == "daemon_state", d
assert (d["current"], d["desired"], d["action"], d["hold"]) == (2, 6, "scale_out", "none"), d
assert d["explanation"].startswith("what-if on the daemon'"'"'s state: queue 60 vs 10/instance -> 6"), d' "$out"
out=$(ctl explain web --what-if --value queue=5 --current 3 --partial)
check "what-if: a partial observation holds the scale-in (text: ${out##*action: })" \
	eval 'echo "$out" | grep -q "^action: none (hold: partial_observation)"'
ctl pause web >/dev/null
out=$(ctl --json explain web --what-if --value queue=60)
check "what-if on a paused group: the pause holds" python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert (d["hold"], d["desired"], d["override"]) == ("paused", 2, "paused"), d' "$out"
ctl resume web >/dev/null
err=$(ctl explain web --what-if --value mem=1 2>&1); rc=$?
check "what-if: a signal the group does not have is refused (rc $rc): $err" \
	eval '[ $rc -ne 0 ] && echo "$err" | grep -q "no signal .mem."'
err=$(ctl explain web --value queue=1 2>&1); rc=$?
check "--value without --what-if is a usage error (rc $rc)" test $rc -eq 2
check "the what-ifs started nothing" test "$(wc -l < "$T/calls")" -eq "$calls_before" -a "$(pool_size)" -eq 2
stop_daemon

python3 - "$T" "$AUTOSCALED" <<'PY' > "$T/replay.out" 2>&1
import json, os, subprocess, sys

T, autoscaled = sys.argv[1], sys.argv[2]
conf = os.path.join(T, "autoscaled.conf")
recs = sorted(json.load(open(os.path.join(T, "history.json")))["decisions"], key=lambda r: r["time"])
# The admin API keeps the last 100 records: the replay needs all of them
# from the daemon's first evaluation on.
if not recs or len(recs) >= 100:
    print("want 1 to 99 records from the start, got %d" % len(recs))
    sys.exit(1)
fails = 0

def same(step, who, rec, hold, desired, action):
    global fails
    want = (rec["hold"], rec["desired"], rec["action"])
    if (hold, desired, action) != want:
        fails += 1
        print("step %d (%s, current %d): daemon %s, %s %s" % (step, rec["time"], rec["current"], want, who,
                                                              (hold, desired, action)))

def value(rec):
    s = rec["signals"][0]
    return s["value"] if s["valid"] else None

# explain, one evaluation after the other on the state the previous saved.
prev = None
for k, rec in enumerate(recs):
    inp = rec["inputs"]
    if inp["paused"] or inp["pin"]:
        # The operator's word, as the daemon had it at this step.
        if prev is None:
            prev = os.path.join(T, "explain-0.init")
            subprocess.run([autoscaled, "explain", "-c", conf, "--group", "web", "--current", "0",
                            "--at", rec["time"], "--save-state", prev], check=True, stdout=subprocess.DEVNULL)
            st = json.load(open(prev))
            st["engine"] = {"version": st["engine"]["version"], "up_recs": [], "down_recs": [], "events": [],
                            "last_action_ms": 0, "last_action_dir": "none", "no_scale_in_before_ms": 0}
            st["in_flight"] = None
        else:
            st = json.load(open(prev))
        st["pause"] = {"until_ms": 0} if inp["paused"] else None
        st["pin"] = dict(inp["pin"], until_ms=0) if inp["pin"] else None
        json.dump(st, open(prev, "w"))
    elif prev is not None:
        st = json.load(open(prev))
        st["pause"] = st["pin"] = None
        json.dump(st, open(prev, "w"))
    out = os.path.join(T, "explain-%d.state" % k)
    args = [autoscaled, "explain", "-c", conf, "--group", "web", "--current", str(rec["current"]),
            "--at", rec["time"], "--save-state", out]
    if value(rec) is not None:
        args += ["--value", "queue=%r" % value(rec)]
    if prev:
        args += ["--state", prev]
    if inp["partial"]:
        args += ["--partial"]
    if inp["busy"] and inp["in_flight"]:
        args += ["--in-flight", inp["in_flight"]]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        print("explain failed at step %d: %s" % (k, p.stderr))
        sys.exit(1)
    d = json.loads(p.stdout)
    if k == 0 and d["start"] != "empty_state":
        fails += 1
        print("the first explain does not say it starts from an empty state")
    same(k, "explain", rec, d["hold"], d["desired"], d["action"])
    prev = out

# simulate: the same values on a virtual clock. Step k + 1 is measured over
# step k of the trace, so the daemon's k-th record is simulate's step k + 1.
with open(os.path.join(T, "trace.csv"), "w") as f:
    f.write("time,value\n")
    for k, rec in enumerate(recs + recs[-1:]):
        if value(rec) is None:
            print("the daemon's record %d has no value: the trace cannot say so" % k)
            sys.exit(1)
        f.write("%d,%r\n" % (k, value(rec)))
events, was = [], {"paused": False, "pin": None, "partial": False, "in_flight": None}
for k, rec in enumerate(recs):
    inp, t = rec["inputs"], k + 1
    if inp["paused"] != was["paused"]:
        events.append("%d %s" % (t, "pause" if inp["paused"] else "resume"))
    if inp["pin"] != was["pin"]:
        events.append("%d %s" % (t, "pin %d%s" % (inp["pin"]["count"], " forced" if inp["pin"]["forced"] else "")
                                 if inp["pin"] else "unpin"))
    if inp["partial"] != was["partial"]:
        events.append("%d %s" % (t, "partial" if inp["partial"] else "full"))
    fl = inp["in_flight"] if inp["busy"] else None
    if fl != was["in_flight"]:
        events.append("%d in-flight %s" % (t, fl or "none"))
    was = {"paused": inp["paused"], "pin": inp["pin"], "partial": inp["partial"], "in_flight": fl}
open(os.path.join(T, "agent.txt"), "w").write("".join(e + "\n" for e in events))
p = subprocess.run([autoscaled, "simulate", "-c", conf, "--group", "web", "--trace", os.path.join(T, "trace.csv"),
                    "--format", "csv", "--boot-delay", "0", "--capacity-per-instance", "10", "--step", "1",
                    "--agent-inputs", os.path.join(T, "agent.txt"), "--csv", os.path.join(T, "steps.csv")],
                   capture_output=True, text=True)
if p.returncode != 0:
    print("simulate failed: %s" % p.stderr)
    sys.exit(1)
rows = [l.rstrip("\n").split(",") for l in open(os.path.join(T, "steps.csv"))][1:]
head = "t_s,time_ms,demand,required,ready,billed,desired,action,hold".split(",")
rows = [dict(zip(head, r)) for r in rows]
current = int(rows[0]["billed"])
for k, rec in enumerate(recs):
    r = rows[k + 1]
    if current != rec["current"]:
        fails += 1
        print("step %d: the daemon's count is %d, simulate's %d" % (k, rec["current"], current))
    action = {"1": "scale_out", "-1": "scale_in", "0": "none"}[r["action"]]
    same(k, "simulate", rec, r["hold"], int(r["desired"]), action)
    current = int(r["billed"])
holds = sorted({r["hold"] for r in recs})
print("%d steps, holds %s" % (len(recs), " ".join(holds)))
sys.exit(1 if fails else 0)
PY
rc=$?
sed 's/^/# /' "$T/replay.out"
check "explain and simulate give the daemon's decision and hold reason at every step" test $rc -eq 0
for reason in paused partial_observation pinned; do
	check "the sequence has $reason holds" grep -q "holds.* $reason\b" "$T/replay.out"
done
tap_done
