#!/bin/bash
# Reloads on the filepool test driver, which logs every call it receives:
#  1. a reload that changes the group's driver options while a scale-out
#     runs (SIGHUP), and again while a scale-in runs (autoscalectl reload):
#     the pool receives exactly one call for each action, the new options
#     are used only after that call, and the pool never passes the target;
#     The same when a reload removes the group in the middle of a
#     scale-out and the next one adds it again;
#  2. groups whose configuration did not change keep their runtime: their
#     sources are not polled again and a scale-in waiting in its
#     stabilization window does not start that window again.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/integration/ops-lib.sh"

# As ops-lib.sh's, but a daemon that died ends the wait at once.
wait_for() {
	local n=$(($1 * 5)); shift
	while [ "$n" -gt 0 ]; do
		"$@" && return 0
		[ -z "$DAEMON_PID" ] || kill -0 "$DAEMON_PID" 2>/dev/null || return 1
		sleep 0.2
		n=$((n - 1))
	done
	return 1
}
# count_calls RE: how many calls in the log match RE.
count_calls() { grep -cE "$1" "$T/calls"; }
# The pool's counter: one more than the number of instances ever created.
pool_next() { awk '/^next/ { print $2 }' "$T/pool"; }
alive() { kill -0 "$DAEMON_PID" 2>/dev/null; }
log_has() { grep -q "$1" "$T/daemon.log"; }
# decided_after GROUP MS: GROUP recorded a decision after MS (epoch ms).
decided_after() {
	ctl --json history "$1" 2>/dev/null | python3 -c 'import datetime, json, sys
v = json.load(sys.stdin)["decisions"]
t = datetime.datetime.strptime(v[-1]["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
sys.exit(0 if int(t.timestamp() * 1000) > int(sys.argv[1]) else 1)' "$2" 2>/dev/null
}
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (a - b) / 1000 }'; }

# --- 1. driver options change during a driver call ------------------------
# Each instance takes a second to create or remove, so that the calls last
# long enough for a reload to land inside them.
export STEP_MS=1000
set_load 10
write_conf
start_daemon || { not_ok "the daemon starts"; cat "$T/daemon.log"; tap_done; exit 1; }
check "the pool starts at 1" wait_for 10 pool_is 1
check "after one set_capacity call" test "$(count_calls ' set_capacity ')" -eq 1

set_load 40
check "the scale-out to 4 starts" wait_for 10 grep -q ' set_capacity 1 4$' "$T/calls"
# A changed option of the driver (a fault file that does not exist changes
# nothing else), so the reload must replace the driver's handle.
POOL_OPTIONS="fail = \"$T/no-fault\";" write_conf
kill -HUP "$DAEMON_PID"
check "the reload is done" wait_for 10 log_has "agent: reloaded"
check "the call in flight reports to the new configuration" \
	wait_for 10 log_has "the scale-out started before the reload has ended"
check "the scale-out completes" wait_for 15 log_has "scaled out from 1 to 4"
check "the new handle opens after the call" wait_for 10 log_has "driver 'filepool' opened"
# Evaluations on the new handle's observations, which would repeat the
# action if it were not recorded.
check "the group goes on deciding" wait_for 10 decided_after web $(($(now_ms) + 2000))
check "the pool is at the target, 4" pool_is 4
check "exactly one set_capacity for the scale-out (calls: $(tr '\n' ';' < "$T/calls"))" \
	test "$(count_calls ' set_capacity [0-9]+ 4$')" -eq 1 -a "$(count_calls ' set_capacity ')" -eq 2
check "no instance was created beyond the target (counter $(pool_next))" test "$(pool_next)" -eq 5
check "the daemon is alive" alive

# The same during a scale-in, reloaded through the admin API.
set_load 10
check "the scale-in to 1 starts" wait_for 15 grep -q ' remove 3$' "$T/calls"
STEP_MS=999 POOL_OPTIONS="fail = \"$T/no-fault\";" write_conf
check "autoscalectl reload succeeds" ctl reload
check "the scale-in in flight reports to the new configuration" \
	wait_for 10 log_has "the scale-in started before the reload has ended"
check "the scale-in completes" wait_for 15 log_has "scaled in from 4 to 1"
check "the group goes on deciding" wait_for 10 decided_after web $(($(now_ms) + 2000))
check "the pool is at the target, 1" pool_is 1
check "exactly one remove call (calls: $(tr '\n' ';' < "$T/calls"))" test "$(count_calls ' remove ')" -eq 1
check "and no other set_capacity" test "$(count_calls ' set_capacity ')" -eq 2
check "the daemon is alive" alive

# Removed during a scale-out, added again before it ends: the group of the
# second reload waits for the call of the first one's predecessor.
handed=$(grep -c "the scale-out started before the reload has ended" "$T/daemon.log")
set_load 80
check "the scale-out to 8 starts" wait_for 15 grep -q ' set_capacity 1 8$' "$T/calls"
cp "$T/autoscaled.conf" "$T/with-web.conf"
sed -n '/^agent = {/,/^};/p' "$T/with-web.conf" > "$T/autoscaled.conf"
echo 'groups = ( );' >> "$T/autoscaled.conf"
kill -HUP "$DAEMON_PID"
check "a reload removes the group" wait_for 10 log_has "reloaded .*: 0 groups"
cp "$T/with-web.conf" "$T/autoscaled.conf"
check "the next reload adds it again" ctl reload
more_handed() {
	[ "$(grep -c "the scale-out started before the reload has ended" "$T/daemon.log")" -gt "$handed" ]
}
check "the added group waits for the removed one's call" wait_for 15 more_handed
check "the scale-out completes" wait_for 15 pool_is 8
check "the group goes on deciding" wait_for 10 decided_after web $(($(now_ms) + 2000))
check "exactly one set_capacity for it (calls: $(tr '\n' ';' < "$T/calls"))" \
	test "$(count_calls ' set_capacity [0-9]+ 8$')" -eq 1 -a "$(count_calls ' set_capacity ')" -eq 3
check "the pool is at the target, 8" pool_is 8
check "no instance was created beyond it (counter $(pool_next))" test "$(pool_next)" -eq 12
check "the daemon is alive" alive
stop_daemon

# --- 2. unchanged groups keep their runtime -------------------------------
# "web" scales in after a 10 s stabilization window; "counted" polls its
# command once an hour and counts the polls in a file. A reload that adds
# a group changes neither.
WINDOW=10
: > "$T/calls"
echo "next 1" > "$T/pool"
echo "next 1" > "$T/pool2"
echo "next 1" > "$T/pool3"
: > "$T/polls"
echo 10 > "$T/load2"
conf2() {
	cat > "$T/autoscaled.conf" <<CONF
agent = {
  interval = "1s";
  state_directory = "$T/state";
  admin_socket = "$T/admin.sock";
  driver_directory = "$POOL_DRIVERS";
};
groups = ( {
  name = "web"; driver = "filepool"; min = 1; max = 8;
  driver_options = { pool = "$T/pool"; calls = "$T/calls"; };
  signals = ( { name = "queue"; source = "exec"; type = "average"; target = 10.0;
                source_options = { command = [ "/bin/cat", "$T/load" ]; };
                poll_interval = "1s"; window = "3s"; aggregation = "last"; staleness = "5s"; } );
  behavior = { scale_in = { stabilization = "${WINDOW}s"; }; };
}, {
  name = "counted"; driver = "filepool"; min = 1; max = 8;
  driver_options = { pool = "$T/pool2"; calls = "$T/calls2"; };
  signals = ( { name = "queue"; source = "exec"; type = "average"; target = 10.0;
                source_options = { command = [ "/bin/sh", "-c", "echo poll >> '$T/polls'; cat '$T/load2'" ]; };
                poll_interval = "1h"; } );
} $1 );
CONF
}
extra=', {
  name = "extra"; driver = "filepool"; min = 1; max = 2;
  driver_options = { pool = "'$T/pool3'"; calls = "'$T/calls3'"; };
  signals = ( { name = "queue"; source = "exec"; type = "average"; target = 10.0;
                source_options = { command = [ "/bin/echo", "5" ]; }; } );
}'
polls() { wc -l < "$T/polls"; }
set_load 30
conf2 ""
start_daemon || { not_ok "the daemon starts again"; tap_done; exit 1; }
check "web scales out to 3" wait_for 15 pool_is 3
check "counted polled its command once" test "$(polls)" -eq 1

t_drop=$(now_ms)
set_load 10
held() { ctl --json history web 2>/dev/null | python3 -c 'import json, sys
sys.exit(0 if json.load(sys.stdin)["decisions"][-1]["hold"] == "stabilization" else 1)' 2>/dev/null; }
check "web holds its scale-in in the stabilization window" wait_for 10 held
# The window runs from the last recommendation of 3, which the daemon may
# have made up to an interval before the load was lowered: the scale-in
# may not come before that plus the window.
last_high_ms() { ctl --json history web 2>/dev/null | python3 -c 'import datetime, json, sys
v = [d for d in json.load(sys.stdin)["decisions"] if d["signals"][0]["recommendation"] == 3]
t = datetime.datetime.strptime(v[-1]["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
print(int(t.timestamp() * 1000))'; }
t_high=$(last_high_ms)
# The wall clock's lag behind the monotonic one since the start (a clock
# being slewed by NTP runs slower or faster): the window is measured on the
# monotonic clock, the stamps compared below are the wall clock's.
clocks() { python3 -c 'import time; print(time.monotonic_ns() // 1000000, time.time_ns() // 1000000)'; }
read -r mono0 wall0 < <(clocks)
# Reload in the middle of the window, by both routes, with a configuration
# that only adds a group.
past() { [ "$(now_ms)" -ge "$1" ]; }
wait_for 10 past $((t_drop + WINDOW * 1000 / 2))
conf2 "$extra"
t_reload=$(now_ms)
kill -HUP "$DAEMON_PID"
check "the reload keeps both groups" wait_for 10 log_has "3 groups, 2 unchanged"
check "autoscalectl reload keeps them too" ctl reload
check "and says so" wait_for 10 log_has "3 groups, 3 unchanged"
check "the added group runs" wait_for 10 grep -q ' set_capacity 0 1$' "$T/calls3"
wait_for $((WINDOW + 10)) grep -q ' remove ' "$T/calls"
t_in=$(awk '/ remove / { print $1; exit }' "$T/calls")
read -r mono1 wall1 < <(clocks)
lag=$(((mono1 - mono0) - (wall1 - wall0)))
[ "$lag" -gt 0 ] || lag=0
if [ -z "$t_in" ]; then
	not_ok "web scales in at all"
else
	check "the window went on across the reloads: scale-in $(secs "$t_in" "$t_reload") s after them (< ${WINDOW} s)" \
		test "$((t_in - t_reload))" -lt $((WINDOW * 1000))
	# The daemon measures the window on the monotonic clock and stamps its
	# records with the wall clock, each read in whole ms: a window of
	# exactly WINDOW s (the evaluations come an interval apart, so the
	# scale-in often comes right at its end, where saves are quick) may
	# show as 1 ms less between two wall-clock stamps, and as less again
	# by what the wall clock lagged meanwhile. A scale-in an evaluation
	# early is an interval (1 s) early.
	check "and not before it ended ($((t_in - ${t_high:-0})) ms after the last recommendation of 3, the wall clock ${lag} ms behind, $(secs "$t_in" "$t_drop") s after the drop)" \
		test -n "$t_high" -a "$((t_in - ${t_high:-0}))" -ge $((WINDOW * 1000 - 1 - lag))
fi
check "web ends at 1" wait_for 5 pool_is 1
check "counted goes on deciding" wait_for 10 decided_after counted $(($(now_ms) + 1000))
check "counted was not polled again by the reloads ($(polls) polls)" test "$(polls)" -eq 1
check "the daemon is alive" alive
stop_daemon
tap_done
