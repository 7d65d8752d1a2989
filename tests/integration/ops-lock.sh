#!/bin/bash
# One daemon per state directory: a second autoscaled started with the
# state directory of a running one exits at once, naming the running one's
# pid, and neither takes over its admin socket nor writes state files.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/integration/ops-lib.sh"

ctl_answers() { ctl status > /dev/null 2>&1; }

set_load 15
write_conf
start_daemon || { not_ok "the first daemon starts"; tap_done; exit 1; }
check "the first daemon answers on its admin socket" wait_for 10 ctl_answers
check "the first daemon writes the lock file with its pid" \
	test "$(cat "$T/state/autoscaled.lock" 2>/dev/null)" = "$DAEMON_PID"
sock_inode=$(stat -c %i "$T/admin.sock")

# The second daemon shares the state directory and the admin socket but
# serves a group of its own, whose state file it would write if it ran.
echo "next 1" > "$T/pool2"
sed -e 's/name = "web"/name = "second"/' -e "s|$T/pool\"|$T/pool2\"|" "$T/autoscaled.conf" > "$T/second.conf"
t0=$(date +%s%N)
timeout 20 "$AUTOSCALED" -f -c "$T/second.conf" > "$T/second.log" 2>&1
rc=$?
t1=$(date +%s%N)
elapsed_ms=$(((t1 - t0) / 1000000))
check "the second daemon exits with an error (status $rc), not killed by the timeout" \
	test "$rc" -ne 0 -a "$rc" -ne 124
check "the second daemon exits at once (${elapsed_ms} ms < 5000 ms)" test "$elapsed_ms" -lt 5000
check "its message names the running daemon's pid $DAEMON_PID" \
	grep -q "another autoscaled (pid $DAEMON_PID) is running with state directory '$T/state'" "$T/second.log"
check "the admin socket is still the first daemon's (same inode)" \
	test "$(stat -c %i "$T/admin.sock" 2>/dev/null)" = "$sock_inode"
check "the first daemon still answers on its admin socket" ctl_answers
check "the first daemon still runs" kill -0 "$DAEMON_PID"
check "the second daemon wrote no state file" test ! -e "$T/state/second.state"
check "the second daemon never opened its driver (its pool is as written)" test "$(cat "$T/pool2")" = "next 1"
check "the lock file still names the first daemon" \
	test "$(cat "$T/state/autoscaled.lock")" = "$DAEMON_PID"

# Once the first daemon is gone, the lock is free again.
stop_daemon
"$AUTOSCALED" -f -c "$T/second.conf" >> "$T/second.log" 2>&1 &
DAEMON_PID=$!
check "after the first daemon stops, another one starts on the same state directory" \
	wait_for 10 ctl_answers
check "and takes the lock" test "$(cat "$T/state/autoscaled.lock" 2>/dev/null)" = "$DAEMON_PID"
stop_daemon
tap_done
