#!/bin/bash
# Restarts after kill -9, on the filepool test driver (its pool is a file,
# so it outlives the daemon as a real backend does):
#  1. in the middle of a scale-in stabilization window: the restarted
#     daemon scales in when the running one would have, not earlier, and
#     not a whole window later (the history was restored, not lost);
#  2. the same with a corrupt state file: a warning naming the file and a
#     safe start that holds scale-in for a full window after the restart;
#  3. within a scale-in rate-limit period: no second step before it ends;
#  4. in the middle of a scale-out and of a scale-in: the action in flight
#     is in the state file, reconciled with what the pool shows, counted,
#     and the pool never goes past the target.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/integration/ops-lib.sh"

WINDOW=10

# The time (ms) of the first call after $1 (ms) matching $2, or nothing.
first_call_after() { awk -v t="$1" -v re="$2" '$1 > t && $0 ~ re { print $1; exit }' "$T/calls"; }
has_call_after() { test -n "$(first_call_after "$1" "$2")"; }
last_field_in_state() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))$1)" "$T/state/web.state"; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (a - b) / 1000 }'; }

# --- 1. kill -9 inside the scale-in window --------------------------------
set_load 60
write_conf "" "" "${WINDOW}s"
start_daemon || { not_ok "the daemon starts"; tap_done; exit 1; }
check "the pool scales out to 6" wait_for 15 pool_is 6
sleep 2
t0=$(now_ms)
set_load 20
sleep 7
kill9_daemon
t_kill=$(now_ms)
check "the state file holds the scale-in window's recommendations" \
	test "$(last_field_in_state '["engine"]["down_recs"][0][1]')" -eq 6
start_daemon || not_ok "the daemon restarts"
wait_for $((WINDOW + 15)) has_call_after "$t0" '^[0-9]+ remove'
t_in=$(first_call_after "$t0" '^[0-9]+ remove')
if [ -z "$t_in" ]; then
	not_ok "the restarted daemon scales in at all"
else
	d=$(secs "$t_in" "$t0"); dk=$(secs "$t_in" "$t_kill")
	check "no scale-in before the window that started before the kill ends (${d} s >= ${WINDOW} s after the drop)" \
		test "$((t_in - t0))" -ge $((WINDOW * 1000))
	check "the window was restored, not restarted: scale-in ${dk} s after the restart (< ${WINDOW} s)" \
		test "$((t_in - t_kill))" -lt $((WINDOW * 1000))
fi
check "the pool ends at 2" wait_for 5 pool_is 2
stop_daemon

# --- 2. a corrupt state file: warning and safe start ----------------------
set_load 60
start_daemon
check "back to 6" wait_for 15 pool_is 6
kill9_daemon
# Truncated in the middle, as a crash during a write without rename would.
head -c 200 "$T/state/web.state" > "$T/state/web.state.cut" && mv "$T/state/web.state.cut" "$T/state/web.state"
set_load 20
t_restart=$(now_ms)
start_daemon
check "the warning names the file and the safe start" \
	wait_for 5 grep -q "ignoring corrupt state file '$T/state/web.state'.*safe start: no scale-in of 'web' for $WINDOW s" "$T/daemon.log"
check "show reports the safe start" eval 'ctl show web | grep -q "^safe start: *no scale-in before"'
wait_for $((WINDOW + 15)) has_call_after "$t_restart" '^[0-9]+ remove'
t_in=$(first_call_after "$t_restart" '^[0-9]+ remove')
check "safe start: no scale-in for a full window after the restart ($(secs "${t_in:-0}" "$t_restart") s)" \
	test -n "$t_in" -a "$((${t_in:-0} - t_restart))" -ge $((WINDOW * 1000))
cp "$T/state/web.state" "$T/good.state"
for kind in "garbage" "version" "unsorted"; do
	kill9_daemon
	cp "$T/good.state" "$T/state/web.state"
	case $kind in
	garbage) printf '\x00\x01 not json' > "$T/state/web.state" ;;
	version) sed -i 's/"format":[[:space:]]*1/"format": 7/' "$T/state/web.state" ;;
	unsorted) python3 -c '
import json,sys
s=json.load(open(sys.argv[1])); s["engine"]["down_recs"]=[[2000000000000,3],[1000000000000,2]]
json.dump(s,open(sys.argv[1],"w"))' "$T/state/web.state" ;;
	esac
	: > "$T/daemon.log"
	start_daemon
	check "a state file with $kind: a warning and a running daemon" \
		eval 'wait_for 5 grep -q "ignoring corrupt state file" "$T/daemon.log" && ctl show web >/dev/null'
done
stop_daemon

# --- 3. kill -9 inside a rate-limit period ----------------------------------
SCALE_IN_POLICIES='{ type = "instances"; value = 1; period = "15s"; }'
write_conf "" "" "0s"
# A fresh start (the last start above was a safe one) on a pool of 6 that
# no recent scale-out made.
rm -f "$T/state/web.state"
printf 'next 7\nvm-1 1\nvm-2 1\nvm-3 1\nvm-4 1\nvm-5 1\nvm-6 1\n' > "$T/pool"
set_load 60
start_daemon
check "three evaluations of a load of 6 instances" wait_evaluations 3
check "6 instances, no action" test "$(pool_size)" -eq 6
t1=$(now_ms)
set_load 20
wait_for 10 has_call_after "$t1" '^[0-9]+ remove'
t_first=$(first_call_after "$t1" '^[0-9]+ remove')
check "one instance removed first (rate limit 1 per 15 s)" wait_for 5 pool_is 5
sleep 2
kill9_daemon
start_daemon
wait_for 25 has_call_after "${t_first:-0}" '^[0-9]+ remove'
t_second=$(first_call_after "${t_first:-0}" '^[0-9]+ remove')
check "after the restart the next step waits for the period ($(secs "${t_second:-0}" "${t_first:-0}") s >= 15 s)" \
	test -n "$t_second" -a "$((${t_second:-0} - ${t_first:-0}))" -ge 15000
stop_daemon
SCALE_IN_POLICIES=

# --- 4. kill -9 in the middle of a scale-out and of a scale-in --------------
STEP_MS=1500
write_conf "" "" "2s"
set_load 20
start_daemon
check "down to 2 (one at a time)" wait_for 30 pool_is 2
t2=$(now_ms)
set_load 60
check "the scale-out is under way" wait_for 10 pool_is 4
kill9_daemon
check "the state file records the scale-out in flight (2 -> 6)" \
	test "$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["in_flight"]["direction"], s["in_flight"]["to"])' "$T/state/web.state")" = "out 6"
start_daemon
check "reconciled: the log says it stopped at 4" wait_for 10 grep -q "scale-out from 2 to 6 in flight before the restart stopped at 4" "$T/daemon.log"
check "the pool completes to 6" wait_for 30 pool_is 6
check "three more evaluations" wait_evaluations 3
check "and stays at 6: nothing was created twice" pool_is 6
n=$(awk -v t="$t2" '$1 > t && /set_capacity/' "$T/calls" | wc -l)
check "two calls: the interrupted 2 -> 6 and the completing 4 -> 6 ($n)" test "$n" -eq 2 -a -n "$(awk -v t="$t2" '$1 > t && /set_capacity 4 6/' "$T/calls")"

set_load 20
check "the scale-in is under way" wait_for 15 pool_is 4
kill9_daemon
check "the state file records the scale-in in flight (to 2)" \
	test "$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["in_flight"]["direction"], s["in_flight"]["to"])' "$T/state/web.state")" = "in 2"
start_daemon
check "reconciled: it stopped at 4" wait_for 10 grep -Eq "scale-in from [56] to 2 in flight before the restart stopped at 4" "$T/daemon.log"
check "the pool ends at 2" wait_for 30 pool_is 2
check "three more evaluations" wait_evaluations 3
check "never below 2: the interrupted removal was not repeated" pool_is 2
stop_daemon
tap_done
