#!/bin/bash
# Wall-clock steps, on the filepool test driver: the daemon's wall clock
# is stepped while it runs (AUTOSCALED_TEST_WALL_OFFSET_FILE, read on every
# wall-clock read, adds an offset to it; the monotonic clock runs on, as it
# does when NTP or an operator steps the real clock). A step of an hour,
# forward or back, neither empties nor stretches a window:
#  1. a step forward in the middle of the scale-in stabilization window: the
#     scale-in comes when the window ends, not at once; a step back inside
#     the rate-limit period after it: the next step comes when the period
#     ends, not an hour later (and the signal stays valid meanwhile);
#  2. a step back in the middle of the window: the scale-in is not an hour
#     late; the state file holds the stepped wall-clock time;
#  3. a restart after a kill -9 with the clock stepped back an hour: the
#     restored window lasts at most its configured length;
#  4. a step back after instances passed their initialization period: they
#     still count as ready.
# The times asserted are the test's own (its clock is not stepped).
# (libfaketime cannot serve here: it shifts sd-event's absolute monotonic
# timers by the offset too, and the daemon's loop stops.)
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/integration/ops-lib.sh"

WINDOW=16 # the scale-in stabilization window, s
PERIOD=8  # the scale-in rate-limit period, s
HOUR=3600 # s

# The daemon's wall clock is the real one plus the offset (ms) in this file.
echo 0 > "$T/clock"
step_clock() { echo "$1" > "$T/clock.tmp" && mv "$T/clock.tmp" "$T/clock"; }
AUTOSCALED_TEST_WALL_OFFSET_FILE=$T/clock
export AUTOSCALED_TEST_WALL_OFFSET_FILE

alive() { kill -0 "$DAEMON_PID" 2>/dev/null; }

# until_pool N SECONDS: waits for a pool of N, polling every 0.1 s, and
# prints the time (ms) it was seen. Fails at once when the daemon died.
until_pool() {
	local n=$(($2 * 10))
	while [ "$n" -gt 0 ]; do
		if pool_is "$1"; then now_ms; return 0; fi
		alive || { echo "# the daemon died" >&2; return 1; }
		sleep 0.1
		n=$((n - 1))
	done
	return 1
}

# logged_since LINE PATTERN: whether the daemon logged PATTERN after line
# LINE of its log; held_since LINE: a hold by the scale-in window.
logged_since() { tail -n "+$(($1 + 1))" "$T/daemon.log" | grep -q "$2"; }
held_since() { logged_since "$1" "held at 6 by the scale-in stabilization window"; }
# until_time MS: returns once the test's clock reads MS.
until_time() { while [ "$(now_ms)" -lt "$1" ]; do sleep 0.1; done; }
log_lines() { wc -l < "$T/daemon.log"; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (a - b) / 1000 }'; }
# since MS FROM_MS: "N.N s" from FROM_MS to MS, or "never" when MS is empty.
since() { if [ -n "$1" ]; then echo "$(secs "$1" "$2") s"; else echo never; fi; }
# within MS LO_S HI_S: whether LO_S <= MS / 1000 <= HI_S.
within() { [ "$1" -ge $(($2 * 1000)) ] && [ "$1" -le $(($3 * 1000)) ]; }

SCALE_IN_POLICIES="{ type = \"instances\"; value = 2; period = \"${PERIOD}s\"; }"
write_conf "" "" "${WINDOW}s"

# --- 1. a step forward in the window, a step back in the period -------------
set_load 60
start_daemon || { not_ok "the daemon starts"; tap_done; exit 1; }
check "the pool scales out to 6" wait_for 15 pool_is 6
l=$(log_lines)
t0=$(now_ms)
set_load 20
check "the drop is held by the scale-in window" wait_for 10 held_since "$l"
# Late in the window, so that a window that restarted at the step (as one
# does when the step makes the signal stale for a poll) ends well after
# the one that did not.
t_step=$((t0 + (WINDOW - 4) * 1000))
until_time "$t_step"
step_clock $((HOUR * 1000))
t1=$(until_pool 4 $((WINDOW + 10)))
if [ -z "$t1" ]; then
	not_ok "a step forward of an hour: the first scale-in step comes at all"
else
	# The window's last 6 was recorded at most one interval before the
	# drop: the scale-in is due WINDOW - 1 s after it at the earliest,
	# and well before a window restarted at the step could end.
	check "a step forward of an hour neither empties nor restarts the window: scale-in $(since "$t1" "$t0") after the drop (${WINDOW} s window)" \
		test $((t1 - t0)) -ge $(((WINDOW - 1) * 1000)) -a $((t1 - t_step)) -lt $(((WINDOW - 1) * 1000))
	step_clock 0
	t2=$(until_pool 2 $((PERIOD + 10)))
	check "a step back of an hour does not stretch the rate-limit period: next step $(since "$t2" "$t1") later (${PERIOD} s period)" \
		test -n "$t2" -a "$((${t2:-0} - t1))" -ge $(((PERIOD - 2) * 1000)) -a "$((${t2:-0} - t1))" -le $(((PERIOD + 10) * 1000))
fi
check "the signal stayed valid across the steps" eval '! grep -q "stale\|no sample in the window" "$T/daemon.log"'

# --- 2. a step back in the window --------------------------------------------
# Each part starts afresh: the real clock, no state file, a pool of 6.
fresh_six() {
	stop_daemon
	step_clock 0
	rm -f "$T/state/web.state"
	printf 'next 7\nvm-1 1\nvm-2 1\nvm-3 1\nvm-4 1\nvm-5 1\nvm-6 1\n' > "$T/pool"
	set_load 60
	start_daemon
}
l=$(log_lines)
fresh_six || not_ok "the daemon starts again"
check "a pool of 6 at 60" wait_for 10 logged_since "$l" "queue 60 vs 10/instance -> 6"
l=$(log_lines)
t0=$(now_ms)
set_load 20
check "the drop is held by the scale-in window" wait_for 10 held_since "$l"
t_step=$((t0 + (WINDOW - 4) * 1000))
until_time "$t_step"
step_clock $((-HOUR * 1000))
t1=$(until_pool 4 $((WINDOW + 10)))
check "a step back of an hour neither stretches nor restarts the window: scale-in $(since "$t1" "$t0") after the drop (${WINDOW} s window)" \
	test -n "$t1" -a "$((${t1:-0} - t0))" -ge $(((WINDOW - 1) * 1000)) -a "$((${t1:-0} - t_step))" -lt $(((WINDOW - 1) * 1000))
saved=$(python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["saved_ms"]))' "$T/state/web.state")
behind=$(($(now_ms) - saved))
check "the state file holds the daemon's wall-clock time, an hour behind ($(secs "$behind" 0) s)" \
	within "$behind" $((HOUR - 30)) $((HOUR + 30))

# --- 3. a restart with the clock stepped back --------------------------------
l=$(log_lines)
fresh_six || not_ok "the daemon starts again"
check "a pool of 6 at 60" wait_for 10 logged_since "$l" "queue 60 vs 10/instance -> 6"
l=$(log_lines)
set_load 20
check "the drop is held by the scale-in window" wait_for 10 held_since "$l"
kill9_daemon
step_clock $((-HOUR * 1000))
t_start=$(now_ms)
l=$(log_lines)
start_daemon || not_ok "the daemon restarts"
check "the restart restored the window" wait_for 10 logged_since "$l" "state restored"
t1=$(until_pool 4 $((WINDOW + 10)))
check "the restored window, an hour in the future by the stepped clock, ends within its length of the restart ($(since "$t1" "$t_start"))" \
	test -n "$t1" -a "$((${t1:-0} - t_start))" -le $(((WINDOW + 10) * 1000))

# --- 4. instances' ages across a step back -----------------------------------
# A CPU signal (utilization, 60 % per ready instance) on 4 instances the
# driver stamps as started now, with a 3 s initialization period. Once they
# are past it, the clock steps back an hour: their starts, as the driver
# reported them, now lie an hour ahead of the daemon's clock. Their ages
# must not change: at 90 % the pool grows to 6. (Counted as initializing,
# none would be ready, the signal invalid and the pool held at 4.)
stop_daemon
step_clock 0
rm -f "$T/state/web.state"
now=$(now_ms)
printf 'next 5\nvm-1 %s\nvm-2 %s\nvm-3 %s\nvm-4 %s\n' "$now" "$now" "$now" "$now" > "$T/pool"
set_load 60
cat > "$T/autoscaled.conf" <<CONF
agent = {
  interval = "1s";
  state_directory = "$T/state";
  admin_socket = "$T/admin.sock";
  driver_directory = "$POOL_DRIVERS";
};
groups = ( {
  name = "web"; driver = "filepool"; min = 1; max = 8;
  driver_options = { pool = "$T/pool"; calls = "$T/calls"; step_ms = 0; };
  signals = ( { name = "cpu"; source = "exec"; type = "utilization"; target = 60.0;
                source_options = { command = [ "/bin/cat", "$T/load" ]; };
                poll_interval = "1s"; window = "3s"; aggregation = "last"; staleness = "5s"; } );
  behavior = { initialization_period = "3s"; scale_in = { stabilization = "${WINDOW}s"; };
               scale_out = { policies = ( ); }; };
} );
CONF
l=$(log_lines)
start_daemon || not_ok "the daemon starts with a CPU signal"
check "the 4 instances are past their initialization: 60 % holds" \
	wait_for 15 logged_since "$l" "cpu 60% vs target 60% -> 4 (within tolerance)"
l=$(log_lines)
t_step=$(now_ms)
step_clock $((-HOUR * 1000))
set_load 90
t1=$(until_pool 6 15)
check "after a step back of an hour the instances still count as ready: scale-out to 6 ($(since "$t1" "$t_step") after the step)" \
	test -n "$t1"
check "no instance was counted as initializing after the step" eval '! logged_since "$l" "no ready instance"'
check "the daemon is alive" alive
stop_daemon
tap_done
