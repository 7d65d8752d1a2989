#!/bin/bash
# The group's state follows it from owner to owner through etcd (the
# group's record, PREFIX/state/GROUP), on a real three-member etcd with the
# filepool test driver (its pool file is the target; each agent's call log
# is what it sent):
#  - an operator's pin is the owner's: another agent refuses it and names
#    the owner; after a kill -9 of the owner, the new owner continues from
#    its record, pinned, and sends nothing the signals ask for until it is
#    unpinned;
#  - a restart of the whole cluster with every agent's state directory
#    emptied (the hosts replaced) keeps the scale-in stabilization window:
#    the load drops, both agents stop and start again with no state file,
#    and the group is scaled in no earlier than the window after the drop,
#    because the owner continues from the record the last owner wrote when
#    it stopped, and its forecaster continues from the forecast record.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/integration/etcd-lib.sh"

: "${top_builddir:=.}" "${AUTOSCALED:=$top_builddir/autoscaled}"
CTL="$top_builddir/autoscalectl"
POOL_DRIVERS="$top_builddir/tests/helpers/.libs"
AUTOSCALED_DRIVER_DIR=$POOL_DRIVERS
export AUTOSCALED_DRIVER_DIR
[ -x "$AUTOSCALED" ] || skip_all "the daemon is not built"
[ -f "$POOL_DRIVERS/filepool.so" ] || skip_all "the filepool test driver is not built"
need_etcd
command -v etcdctl >/dev/null 2>&1 || skip_all "etcdctl is not installed (Debian: etcd-client)"

TTL=3
WINDOW_S=40
T=$(mktemp -d "${TMPDIR:-/var/tmp}/autoscaled-cstate.XXXXXX")
trap 'filepool_cleanup "$T" a b' EXIT

start_etcd 3 "$T" || { echo "Bail out! etcd did not start"; exit 1; }

set_load() { filepool_set_load "$T" "$1"; }
write_conf() {
	filepool_conf "$1" "$T" "$TTL" "" 'forecast = { mode = "observe"; };' \
		"scale_in = { stabilization = \"${WINDOW_S}s\"; };"
}
start_agent() { cluster_agent_start "$1" "$T"; }
owned_by() { filepool_owned_by "$1"; }
pool_is() { filepool_is "$T" "$1"; }
members_2() { [ "$(etcd_get_prefix /test/members/ | wc -l)" -eq 2 ]; }
record_by() { etcd_get_prefix /test/state/g | grep -q "\"agent\":\"$1\""; }
logged() { grep -q "$2" "$T/$1/daemon.log"; }
# The calls of agent $1 at or after time $2 (ms).
calls_since() { awk -v t="$2" '$1 >= t' "$T/$1/calls.g"; }

set_load 10
write_conf a
write_conf b
start_agent a
check "agent a owns the group (its pin)" wait_for 20 owned_by agent-a
check "the group is at its minimum, 1" wait_for 20 pool_is 1
start_agent b
check "both agents are members" wait_for 30 members_2
check "a writes the group's record" wait_for 20 record_by agent-a

# An operator's pin is the owner's.
out=$("$CTL" -s "$T/b/admin.sock" pin g 3 --for 1h 2>&1)
check "a pin sent to b, which does not own the group, is refused" test $? -ne 0
check "... naming the owner ($out)" eval 'echo "$out" | grep -q "managed by agent .agent-a."'
check "a pin sent to a, the owner, is taken" "$CTL" -s "$T/a/admin.sock" pin g 3 --for 1h
check "the pool goes to 3" wait_for 20 pool_is 3
check "a's record says pinned" wait_for 10 eval 'etcd_get_prefix /test/state/g | grep -q "\"pin\":{\"count\":3,"'

# The owner dies; the pin does not.
set_load 50
unwatch_pid "$PID_a"
kill -9 "$PID_a"
wait "$PID_a" 2>/dev/null
t_kill=$(date +%s%3N)
check "b owns the group" wait_for 30 owned_by agent-b
check "b continues from a's record, pinned" \
	wait_for 20 logged b "continuing from the record agent 'agent-a' left.*pinned"
check "b shows the group pinned at 3" \
	wait_for 20 eval '"$CTL" -s "$T/b/admin.sock" show g | grep -q "^pinned: *3 "'
check "b sent nothing while pinned, though the load asks for 5" test -z "$(calls_since b "$t_kill")"
check "the pool is still 3" pool_is 3
check "b unpins it" "$CTL" -s "$T/b/admin.sock" unpin g
check "b then follows the load: the pool goes to 5" wait_for 30 pool_is 5

# A restart of the whole cluster, every state directory emptied, keeps the
# scale-in window. a comes back first; b, which owns the group until then
# (a's pin wins once a is a member), writes its last record when it stops.
start_agent a
check "a owns the group again (its pin)" wait_for 30 owned_by agent-a
check "a continued from b's record" wait_for 20 logged a "continuing from the record agent 'agent-b' left"
set_load 10
t_drop=$(date +%s%3N)
# The newest high recommendation is at most an interval (1 s) before the
# drop; the agents stop at once, the history of the window in the record.
# b first: stopped after a, b could see a leave, take the group over and
# write the last record itself before its own SIGTERM (seen on a loaded
# machine under ASan).
stop_pid "$PID_b" TERM
stop_pid "$PID_a" TERM
check "a's last record is final" eval 'etcd_get_prefix /test/state/g | grep -q "\"agent\":\"agent-a\".*\"final\":true"'
check "... and so is its forecast record" eval 'etcd_get_prefix /test/forecast/g | grep -q "\"agent\":\"agent-a\".*\"final\":true"'
rm -rf "$T/a/state" "$T/b/state"
mkdir -p "$T/a/state" "$T/b/state"
: > "$T/a/daemon.log"
t_restart=$(date +%s%3N)
# a first, so that it is the first owner after the restart (with b first,
# b would own the group until a is a member: right, but another path).
start_agent a
check "after the restart a owns the group" wait_for 30 owned_by agent-a
start_agent b
check "a continues from its own last record (no state file left)" \
	wait_for 20 logged a "continuing from the record agent 'agent-a' left when it gave the group up"
check "a's forecaster continues from the forecast record" wait_for 10 logged a "forecast history of 1 signal taken from etcd"
check "... without a hold of its own (the record was its writer's last)" \
	eval '! logged a "waits a full window"'
echo "# load dropped at 0 ms; agents stopped and restarted with empty state directories $((t_restart - t_drop)) ms later"
check "the group is scaled in in the end" wait_for $((WINDOW_S + 40)) pool_is 1
first_in=$(cat "$T/a/calls.g" "$T/b/calls.g" |
	awk -v t="$t_drop" '$1 >= t && ($2 == "remove" || ($2 == "set_capacity" && $4 < $3)) { print $1 }' |
	sort -n | head -1)
check "a scale-in was sent" test -n "$first_in"
echo "# first scale-in $((first_in - t_drop)) ms after the drop (window ${WINDOW_S} s)"
check "no scale-in before the window after the drop (less the interval before it)" \
	test $((first_in - t_drop)) -ge $(((WINDOW_S - 2) * 1000))

stop_pid "$PID_a" TERM
stop_pid "$PID_b" TERM
tap_done
