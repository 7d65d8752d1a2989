"""The history of a cluster test, from etcd and from the target, and the
checks made on it (tests/integration/cluster-join-leave.sh).

    cluster_history.py record ENDPOINTS PREFIX OUT
        Watches every key under PREFIX from revision 1 (the whole history,
        none of it missed however late the watch starts) and appends each
        event to OUT as a JSON line, with the time it was received. Runs
        until SIGTERM; on a member that stops answering it watches through
        the next one, from the revision after the last it wrote.

    cluster_history.py check --events OUT --requests LOG --prefix PREFIX
            --ttl S --begin MS --end MS [--dead AGENT=MS ...] [--mark NAME=MS ...]
            [--moves MARK:FROM:TO ...] [--log AGENT=DAEMON_LOG ...]
        Reads the events and the Azure emulator's request log (each request
        with `who`, the client id whose token it carries: the agent) and
        prints one line per check, "PASS text" or "FAIL text", and figures
        as "# ..." lines. See check() for what is checked."""

import base64
import http.client
import json
import re
import signal
import sys
import time
import urllib.parse


DECISION = re.compile(r"^(?:(?:info|notice|warning|error): )?([^ :]+): .*\bscale (out|in) (\d+) -> (\d+)")


def b64(s):
    return base64.b64encode(s.encode()).decode()


def unb64(s):
    return base64.b64decode(s or "").decode("utf-8", "replace")


def prefix_end(s):
    return s[:-1] + chr(ord(s[-1]) + 1)


# ------------------------------------------------------------------ record
def record(endpoints, prefix, out):
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    next_rev = 1
    urls = endpoints.split(",")
    n = 0
    with open(out, "a") as f:
        while not stop:
            url = urllib.parse.urlsplit(urls[n % len(urls)])
            n += 1
            try:
                conn = http.client.HTTPConnection(url.hostname, url.port, timeout=2)
                body = {"create_request": {"key": b64(prefix), "range_end": b64(prefix_end(prefix)),
                                           "start_revision": next_rev}}
                conn.request("POST", "/v3/watch", json.dumps(body), {"Content-Type": "application/json"})
                resp = conn.getresponse()
                if resp.status != 200:
                    raise OSError("watch: HTTP %d" % resp.status)
                buf = ""
                dec = json.JSONDecoder()
                while not stop:
                    try:
                        chunk = resp.read1(65536)
                    except TimeoutError:
                        continue
                    if not chunk:
                        raise OSError("watch: the stream ended")
                    buf += chunk.decode("utf-8", "replace")
                    while True:
                        buf = buf.lstrip()
                        try:
                            msg, end = dec.raw_decode(buf)
                        except ValueError:
                            break
                        buf = buf[end:]
                        t = time.time()
                        res = msg.get("result") or {}
                        if res.get("compact_revision") and int(res["compact_revision"]) > next_rev:
                            raise SystemExit("the history was compacted past revision %d" % next_rev)
                        for ev in res.get("events") or []:
                            kv = ev["kv"]
                            rev = int(kv.get("mod_revision", 0))
                            f.write(json.dumps({"t": t, "type": ev.get("type", "PUT"), "key": unb64(kv["key"]),
                                                "value": unb64(kv.get("value")), "rev": rev,
                                                "create": int(kv.get("create_revision", 0))}) + "\n")
                            next_rev = max(next_rev, rev + 1)
                        f.flush()
            except (OSError, http.client.HTTPException):
                if not stop:
                    time.sleep(0.2)


# ------------------------------------------------------------------- check
class Report:
    def __init__(self):
        self.failed = 0

    def check(self, ok, text, details=()):
        print("%s %s" % ("PASS" if ok else "FAIL", text))
        if not ok:
            self.failed += 1
            for d in list(details)[:10]:
                print("# " + str(d))

    @staticmethod
    def figure(text):
        print("# " + text)


def load_events(path, prefix):
    owners, fences = [], []
    with open(path) as f:
        for line in f:
            e = json.loads(line)
            rest = e["key"][len(prefix):]
            if rest.startswith("/owners/"):
                e["group"] = rest[len("/owners/"):]
                owners.append(e)
            elif rest.startswith("/actions/") and e["type"] == "PUT":
                e["group"] = rest[len("/actions/"):]
                e.update(json.loads(e["value"]))
                fences.append(e)
    return owners, fences


def intervals(owners):
    """Each group's owners, in order: dicts agent, token, start, end (None:
    still owned), start_rev, end_rev. A second key created while one is
    held would be two owners at once: returned as errors."""
    per, errors = {}, []
    for e in owners:
        lst = per.setdefault(e["group"], [])
        cur = lst[-1] if lst and lst[-1]["end"] is None else None
        if e["type"] == "PUT":
            if e["create"] != e["rev"]:
                # The same key rewritten: it must still be the same owner's.
                if not cur or e["value"] != cur["agent"]:
                    errors.append("group %s: owner key rewritten by %s at revision %d (owner: %s)" %
                                  (e["group"], e["value"], e["rev"], cur["agent"] if cur else None))
                continue
            if cur:
                errors.append("group %s: %s created an owner key at revision %d while %s held it" %
                              (e["group"], e["value"], e["rev"], cur["agent"]))
                cur["end"], cur["end_rev"] = e["t"], e["rev"]
            lst.append({"agent": e["value"], "token": e["create"], "start": e["t"], "end": None,
                        "start_rev": e["rev"], "end_rev": None})
        elif cur:
            cur["end"], cur["end_rev"] = e["t"], e["rev"]
    return per, errors


def emulator_writes(path):
    """The writes the emulator received, in order, with the capacity of the
    set before each (replayed from the log: every set starts at 1)."""
    with open(path) as f:
        reqs = json.load(f)
    cap, writes = {}, []
    for r in sorted(reqs, key=lambda r: r["time"]):
        parts = r["path"].split("/")
        if "virtualMachineScaleSets" not in parts:
            continue
        i = parts.index("virtualMachineScaleSets")
        tail = parts[i + 2:]
        if r["method"] == "PATCH" and not tail:
            kind = "capacity"
            want = ((r.get("json") or {}).get("sku") or {}).get("capacity")
        elif r["method"] == "POST" and tail == ["delete"]:
            kind = "delete"
            want = len((r.get("json") or {}).get("instanceIds") or [])
        else:
            continue
        group = parts[i + 1]
        before = cap.get(group, 1)
        ok = 200 <= r.get("status", 0) < 300
        if ok:
            cap[group] = want if kind == "capacity" else before - want
        writes.append({"t": r["time"], "group": group, "who": r.get("who"), "kind": kind, "n": want,
                       "before": before, "status": r.get("status", 0), "ok": ok})
    return writes


def emulator_reads(path):
    """The reads of a scale set or of its VMs the emulator received: (time,
    set, who)."""
    with open(path) as f:
        reqs = json.load(f)
    reads = []
    for r in reqs:
        parts = r["path"].split("/")
        if r["method"] != "GET" or "virtualMachineScaleSets" not in parts:
            continue
        i = parts.index("virtualMachineScaleSets")
        if i + 1 < len(parts):
            reads.append((r["time"], parts[i + 1], r.get("who")))
    return reads


def check(a):
    rep = Report()
    ttl = a.ttl
    begin, end = a.begin / 1000.0, a.end / 1000.0
    dead = {k: int(v) / 1000.0 for k, v in (x.split("=") for x in a.dead)}
    marks = sorted((int(v) / 1000.0, k) for k, v in (x.split("=") for x in a.mark))
    owners, fences = load_events(a.events, a.prefix)
    per, errors = intervals(owners)
    writes = emulator_writes(a.requests)
    groups = sorted(per)

    rep.check(not errors, "no group ever had two owner keys at once", errors)

    # Every fence passed with the token of the owner at its revision (etcd's
    # compare; this checks that the agents wrote no action any other way).
    bad = []
    for f in fences:
        own = [iv for iv in per.get(f["group"], [])
               if iv["start_rev"] < f["rev"] and (iv["end_rev"] is None or f["rev"] < iv["end_rev"])]
        if not own or own[0]["agent"] != f["agent"] or own[0]["token"] != f["token"]:
            bad.append("fence of %s on %s at revision %d (token %d); owner then: %s" %
                       (f["agent"], f["group"], f["rev"], f["token"], own[0] if own else None))
    rep.check(fences and not bad, "each of the %d fenced actions carries its owner's token" % len(fences), bad)

    # The agents' own logs: each fenced action is one the agent decided
    # and logged ("scale out 2 -> 3"), by the agent that fenced it.
    if a.log:
        unlogged, undone = [], 0
        for spec in a.log:
            agent, path = spec.split("=", 1)
            decided = {}
            with open(path, errors="replace") as f:
                for line in f:
                    m = DECISION.match(line)
                    if m:
                        k = (m.group(1), "scale_" + m.group(2), int(m.group(3)), int(m.group(4)))
                        decided[k] = decided.get(k, 0) + 1
            for fe in fences:
                if fe["agent"] != agent:
                    continue
                k = (fe["group"], fe["operation"], fe["from"], fe["count"])
                if decided.get(k, 0) > 0:
                    decided[k] -= 1
                else:
                    unlogged.append("%s: %s %s %d -> %d at revision %d" % ((agent,) + k + (fe["rev"],)))
            undone += sum(decided.values())
        rep.figure("decisions to act logged without a fence (refused, or cut short by a stop or a kill): %d"
                   % undone)
        rep.check(not unlogged, "every fenced action is a decision its agent logged", unlogged)

    # The orphan windows: a group is owned while it has an owner key of an
    # agent that is alive (a killed agent's keys count for nothing from the
    # kill, though etcd keeps them until the lease ends).
    longest, where, orphaned, by_mark = 0.0, None, 0, {}
    for g in groups:
        spans = sorted((iv["start"], min(iv["end"] if iv["end"] is not None else end, dead.get(iv["agent"], end)))
                       for iv in per[g])
        t = begin
        for s, e in spans + [(end, end)]:
            if s > t:
                gap = min(s, end) - t
                orphaned += 1
                if gap > longest:
                    longest, where = gap, "group %s from %+.2f s" % (g, t - begin)
                phase = ([m for tm, m in marks if tm <= t] or ["start"])[-1]
                by_mark[phase] = max(by_mark.get(phase, 0.0), gap)
            t = max(t, e)
            if t >= end:
                break
    rep.figure("orphan windows: %d, the longest %.2f s (%s), bound %d s (two TTLs)" %
               (orphaned, longest, where, 2 * ttl))
    rep.figure("the longest orphan window after each mark: " +
               ", ".join("%s %.2f s" % (m, by_mark.get(m, 0.0)) for m in ["start"] + [m for _, m in marks]))
    rep.check(longest <= 2 * ttl, "no group was without a live owner for more than two TTLs (longest %.2f s)"
              % longest)

    # Each write the target received carries the identity of an agent and
    # follows a fence of that agent on that group, and no ownership change
    # of the group (the key deleted or another created) was seen between
    # that fence and the write: the write came from the owner, while it
    # owned the group. Times are the watcher's receipt of each event (later
    # than etcd's commit) against the emulator's receipt of the request, so
    # a change seen before the write happened before it.
    unowned, anonymous, unfenced, wrong, refused, conflicts_after_kill = [], [], [], [], [], []
    for w in writes:
        if not w["who"]:
            anonymous.append(w)
            continue
        mine = [f for f in fences if f["group"] == w["group"] and f["agent"] == w["who"]
                and f["time_ms"] / 1000.0 <= w["t"]]
        if not mine:
            unfenced.append(w)
            # Without a fence, the owner keys alone say whose turn it was.
            if not any(iv["agent"] == w["who"] and iv["start"] <= w["t"] and (iv["end"] is None or w["t"] <= iv["end"])
                       for iv in per.get(w["group"], [])):
                unowned.append("%s wrote %s at %+.3f s without owning it" % (w["who"], w["group"], w["t"] - begin))
            continue
        f = mine[-1]
        change = [e for e in owners if e["group"] == w["group"] and e["rev"] > f["rev"] and e["t"] < w["t"]
                  and (e["type"] == "DELETE" or e["create"] == e["rev"])]
        if change:
            unowned.append("%s wrote %s at %+.3f s after the owner key changed (%s of %s at %+.3f s)" %
                           (w["who"], w["group"], w["t"] - begin, change[0]["type"], change[0]["value"] or "-",
                            change[0]["t"] - begin))
        if w["kind"] == "capacity":
            if f["operation"] != "scale_out" or w["n"] != f["count"] or w["n"] < w["before"]:
                wrong.append("%s: capacity %d -> %d for the fenced %s %d -> %d" %
                             (w["group"], w["before"], w["n"], f["operation"], f["from"], f["count"]))
        elif f["operation"] != "scale_in" or w["n"] != f["from"] - f["count"]:
            wrong.append("%s: %d deleted (capacity %d) for the fenced %s %d -> %d" %
                         (w["group"], w["n"], w["before"], f["operation"], f["from"], f["count"]))
        if w["status"] in (409, 412):
            # A killed agent's operation may still run on the target (its
            # call had passed its fence): the new owner's write is refused
            # and retried. Any other conflict is two live writers.
            last = [x for x in writes if x["group"] == w["group"] and x["ok"] and x["t"] < w["t"]]
            if last and last[-1]["who"] in dead and dead[last[-1]["who"]] < w["t"]:
                conflicts_after_kill.append(w)
                continue
            refused.append("%s on %s at %+.3f s: %d" % (w["who"], w["group"], w["t"] - begin, w["status"]))
    n_out = sum(1 for w in writes if w["kind"] == "capacity")
    rep.figure("target writes: %d (%d capacity raises, %d deletions) from %s" %
               (len(writes), n_out, len(writes) - n_out,
                ", ".join("%s %d" % (k, sum(1 for w in writes if w["who"] == k))
                          for k in sorted({w["who"] for w in writes if w["who"]}))))
    rep.check(writes and not anonymous, "every write the target received names the agent that sent it", anonymous)
    rep.check(not unfenced, "every write follows a fenced action of its sender on its group", unfenced)
    rep.check(not unowned, "no write reached the target after its sender's ownership ended (two agents never "
              "act on one group at overlapping times)", unowned)
    rep.check(not wrong, "every write goes the way its fenced action said, to its count (none in the wrong "
              "direction)", wrong)
    rep.figure("writes refused (409) while a killed agent's operation still ran: %d" % len(conflicts_after_kill))
    rep.check(not refused, "the target refused no write as conflicting (409 or 412) with a live agent's", refused)
    rep.check(n_out > 0 and len(writes) > n_out, "groups scaled both out and in during the run")

    # Scaling went on through every membership change: writes between
    # each mark and the next.
    edges = [(begin, "start")] + marks + [(end, "end")]
    for (t0, m0), (t1, m1) in zip(edges, edges[1:]):
        n = sum(1 for w in writes if t0 <= w["t"] < t1)
        rep.figure("%d writes between %s and %s (%.1f s)" % (n, m0, m1, t1 - t0))
        rep.check(n > 0, "groups were acted on between %s and %s" % (m0, m1))

    # Moves: an owner key created by an agent other than the group's
    # previous owner, counted by the mark it follows.
    moves, by_phase = {}, {}
    for g in groups:
        for prev, iv in zip(per[g], per[g][1:]):
            if iv["agent"] != prev["agent"]:
                phase = ([m for t, m in marks if t <= iv["start"]] or ["start"])[-1]
                key = "%s -> %s after %s" % (prev["agent"], iv["agent"], phase)
                moves[key] = moves.get(key, 0) + 1
                by_phase.setdefault(phase, []).append((prev["agent"], iv["agent"], g))
    rep.figure("moves: " + ", ".join("%s: %d" % kv for kv in sorted(moves.items())))
    # Hashing moves only the share of the agent that came or went: after
    # each mark, every move is FROM -> TO as expected ('*': any agent).
    for spec in a.moves:
        phase, frm, to = spec.split(":")
        got = by_phase.get(phase, [])
        odd = ["%s: %s -> %s" % (g, p, n) for p, n, g in got if frm not in ("*", p) or to not in ("*", n)]
        rep.check(got and not odd, "after %s, %d groups moved, each from %s to %s" %
                  (phase, len(got), frm.replace("*", "another agent"), to.replace("*", "another agent")), odd)
    # observe = "owned": an agent reads a set only around its own holdings
    # of it: from two TTLs before it takes the owner key (hashing gives it
    # the group before the previous owner has given it back) to two TTLs
    # after it lost it (an observation under way, a lease that ran out).
    reads, stray, per_agent = emulator_reads(a.requests), [], {}
    for t, g, who in reads:
        per_agent[who] = per_agent.get(who, 0) + 1
        if not any(iv["agent"] == who and iv["start"] - 2 * ttl <= t and
                   (iv["end"] is None or t <= iv["end"] + 2 * ttl) for iv in per.get(g, [])):
            stray.append("%s read %s at %+.3f s" % (who, g, t - begin))
    rep.figure("target reads: %d (%s)" % (len(reads), ", ".join("%s %d" % kv for kv in sorted(
        per_agent.items(), key=lambda kv: str(kv[0])))))
    if a.reads_owned:
        rep.check(reads and not stray, "each of the %d reads of a set came from its owner (observe = owned)" %
                  len(reads), stray[:20])
    owned_at = {}
    for t, m in marks + [(end, "end")]:
        owned_at[m] = {g: next((iv["agent"] for iv in per[g] if iv["start"] <= t and
                                (iv["end"] is None or iv["end"] > t)), None) for g in groups}
        rep.figure("owners at %s: %s" % (m, ", ".join(
            "%s %d" % (ag, sum(1 for o in owned_at[m].values() if o == ag))
            for ag in sorted({o for o in owned_at[m].values() if o}))))
    print("SUMMARY longest_orphan_s=%.2f orphan_windows=%d writes=%d moves=%d" %
          (longest, orphaned, len(writes), sum(moves.values())))
    return 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "record":
        record(*sys.argv[2:5])
        return 0
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["check"])
    ap.add_argument("--events", required=True)
    ap.add_argument("--requests", required=True)
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--ttl", type=float, required=True)
    ap.add_argument("--begin", type=int, required=True)
    ap.add_argument("--end", type=int, required=True)
    ap.add_argument("--dead", action="append", default=[])
    ap.add_argument("--mark", action="append", default=[])
    ap.add_argument("--moves", action="append", default=[])
    ap.add_argument("--log", action="append", default=[])
    ap.add_argument("--reads-owned", action="store_true")
    return check(ap.parse_args())


if __name__ == "__main__":
    sys.exit(main())
