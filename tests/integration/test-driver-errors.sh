#!/bin/bash
# A driver operation that fails: the driver's own words reach every decision
# record (a "last_error" object and the sentence), the admin API's group view
# and autoscalectl show, besides the log; a reload keeps it and the next
# success of the same operation clears it. The filepool test driver fails on demand through its
# fault file.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/integration/ops-lib.sh"

# show_json PYTHON: runs PYTHON with `d` the group's view and `r` its last
# decision record.
show_json() {
	ctl --json show web 2>/dev/null | python3 -c 'import json,sys
d=json.load(sys.stdin); r=d.get("last_decision") or {}
'"$1"
}

set_load 10
POOL_OPTIONS="fail = \"$T/fail\";" write_conf
start_daemon || { not_ok "the daemon starts"; cat "$T/daemon.log"; tap_done; exit 1; }
check "the pool follows the load to 1" wait_for 30 pool_is 1
check "no error before any failure" show_json 'assert d["last_error"] is None and r["last_error"] is None'

echo "set_capacity quota 'CPUS' exceeded in region 'r1'" > "$T/fail"
set_load 30
check "the failed scale-out shows in the group view with the driver's message" wait_for 15 show_json '
e=d["last_error"]
assert e["operation"]=="scale_out" and e["error"]=="No space left on device", e
assert e["message"]=="filepool: set_capacity refused: quota '"'CPUS'"' exceeded in region '"'r1'"'", e
assert e["time"].startswith("20")'
# The record of the next evaluation, a second later, carries it.
check "the decision record carries last_error" wait_for 5 show_json '
e=r["last_error"]; assert e["operation"]=="scale_out" and "quota" in e["message"], r'
check "the record's sentence says the last scale-out failed and why" show_json '
assert "; last scale-out failed: filepool: set_capacity refused: quota" in r["explanation"], r["explanation"]'
check "the log has the sentence too" wait_for 5 grep -q "last scale-out failed: filepool: set_capacity refused" "$T/daemon.log"
check "the pool stayed at 1" pool_is 1
out=$(ctl show web)
check "autoscalectl show has a last error line" test -n "$(echo "$out" | grep -E "^last error: +scale_out at 20.*quota 'CPUS' exceeded")"

# A reload takes the driver's handle over; the driver keeps logging through
# the host it was opened with, which must outlive the old configuration.
refusals() { grep -c "error: web: filepool: set_capacity refused" "$T/daemon.log"; }
before=$(refusals)
ctl reload >/dev/null
check "a reload keeps the error" show_json 'assert d["last_error"]["operation"]=="scale_out"'
more_refusals() { [ "$(refusals)" -gt "$before" ]; }
check "after the reload the driver's errors still name the group" wait_for 5 more_refusals
check "the daemon survived the reload" kill -0 "$DAEMON_PID"

rm -f "$T/fail"
check "once the cloud accepts, the pool goes to 3" wait_for 30 pool_is 3
check "the successful scale-out clears the error in the view and the record" wait_for 10 show_json '
assert d["last_error"] is None and r["last_error"] is None and "failed" not in r["explanation"], d'
out=$(ctl show web)
check "autoscalectl show has no last error line" test -z "$(echo "$out" | grep '^last error')"

echo "observe the API answered 503 three times" > "$T/fail"
check "a failed observation shows in the group view" wait_for 10 show_json '
e=d["last_error"]; assert e["operation"]=="observe" and e["message"].endswith("503 three times"), e'
rm -f "$T/fail"
check "the next observation clears it" wait_for 10 show_json 'assert d["last_error"] is None'

echo "remove instance 'vm-2' is protected" > "$T/fail"
set_load 10
check "a failed scale-in shows with its operation" wait_for 15 show_json '
e=r["last_error"]; assert e["operation"]=="scale_in" and "protected" in e["message"], r
assert "; last scale-in failed: filepool: remove refused:" in r["explanation"], r'
rm -f "$T/fail"
check "once the cloud accepts, the pool goes down to 1" wait_for 20 pool_is 1
check "the successful scale-in clears the error" wait_for 10 show_json 'assert d["last_error"] is None and r["last_error"] is None'
stop_daemon
tap_done
