#!/bin/bash
# The tests' own wait helpers (tap.sh, ops-lib.sh, cloudtest.py): a daemon
# or a server that died fails every wait at once, saying so with the last
# lines of its log, instead of letting each wait run out its timeout; a
# wait is bounded by wall time even when its condition is slow to check;
# what a process wrote before it died still counts; a process the test
# stops on purpose fails nothing.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/integration/ops-lib.sh"

# took_less MAX COMMAND...: runs COMMAND (its output in $T/out), sets
# RC to its status and TOOK to its duration in seconds (one decimal), and
# succeeds when that is under MAX seconds.
took_less() {
	local max=$1 t0 t1
	shift
	read -r t0 _ </proc/uptime
	"$@" >"$T/out" 2>&1
	RC=$?
	read -r t1 _ </proc/uptime
	TOOK=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	sed 's/^/# | /' "$T/out"
	awk -v t="$TOOK" -v m="$max" 'BEGIN { exit !(t < m) }'
}
# passed DESC: ok when the last took_less was in time.
passed() { local r=$?; if [ $r -eq 0 ]; then ok "$1"; else not_ok "$1"; fi; }

# 1. The daemon crashes behind the test's back (SIGKILL, as an abort looks
# from outside): a 300 s wait ends at once, with the daemon's last words.
set_load 10
write_conf
start_daemon || { not_ok "the daemon starts"; tap_done; exit 1; }
check "the daemon's log has its start-up" wait_for 30 grep -q "ready" "$T/daemon.log"
pid=$DAEMON_PID
kill -9 "$pid"
took_less 10 wait_for 300 false
passed "a wait for a condition that never comes ends within seconds of the daemon's death, not its 300 s ($TOOK s)"
check "... and fails" test "$RC" -ne 0
check "... saying the daemon is gone, with its pid" grep -q "^# autoscaled (pid $pid) is gone" "$T/out"
check "... and the last lines of its log" grep -q "^#   .*ready" "$T/out"
took_less 10 wait_for 300 false
check "the next wait fails at once too ($TOOK s), without repeating the log" \
	test "$RC" -ne 0 -a ! -s "$T/out"
check "what the daemon wrote before it died still satisfies a wait" wait_for 300 grep -q "ready" "$T/daemon.log"
kill9_daemon
check "once stopped on purpose it no longer fails waits" wait_for 5 true
took_less 10 wait_for 1 false
check "and a wait runs its time again (${TOOK} s for 1 s)" awk -v t="$TOOK" 'BEGIN { exit !(t >= 0.9) }'

# 2. A daemon that cannot start: start_daemon fails within seconds.
write_conf 'min = 9; max = 2;'
took_less 8 start_daemon
passed "start_daemon on a configuration the daemon refuses fails at once ($TOOK s)"
check "... and fails" test "$RC" -ne 0
check "... with the daemon's reason" grep -q "^#   .*autoscaled.conf:[0-9]*:" "$T/out"
check "stop_daemon gives its exit status (1)" eval 'stop_daemon; test $? -eq 1'

# 3. A wait is bounded by wall time, not by a count of polls: a condition
# that takes 1 s to fail is tried twice or so in 2 s, not ten times.
slow_false() { sleep 1; return 1; }
took_less 4.5 wait_for 2 slow_false
passed "a 2 s wait on a condition that takes 1 s to check ends in about 2 s ($TOOK s)"
check "... not before" awk -v t="$TOOK" 'BEGIN { exit !(t >= 1.9) }'
took_less 2 wait_for 0.5 false
passed "a wait accepts decimal seconds ($TOOK s for 0.5 s)"
check "... and waits them" awk -v t="$TOOK" 'BEGIN { exit !(t >= 0.4) }'

# 4. A server the test started dies: the same for any watched process,
# named as the test named it.
sleep 600 &
srv=$!
watch_pid "$srv" "test server" "$T/calls"
echo "the server's last line" >>"$T/calls"
check "a watched server that runs lets waits succeed" wait_for 5 true
kill -9 "$srv"
took_less 10 wait_for 300 false
passed "a watched server that died fails the next wait at once ($TOOK s)"
check "... naming it" grep -q "^# test server (pid $srv) is gone" "$T/out"
check "... with its log" grep -q "^#   the server's last line" "$T/out"
check "stop_pid gives the exit status the wait saw (SIGKILL: 137)" eval 'stop_pid "$srv"; test $? -eq 137'

# 5. The Python helpers (cloudtest.py) do the same for the Python tests.
cat >"$T/py-test.py" <<'PY'
import os, subprocess, sys, time
sys.path.insert(0, os.path.join(os.environ["top_srcdir"], "tests", "helpers"))
import cloudtest
log = sys.argv[1]
with open(log, "w") as f:
    p = subprocess.Popen(["sh", "-c", "echo last words; sleep 1; exit 3"], stdout=f)
cloudtest.watch(p, "autoscaled", log)
t = time.monotonic()
v = cloudtest.wait_for(lambda: False, 300)
took = time.monotonic() - t
print("RESULT %r %.1f" % (v, took))
v2 = cloudtest.wait_for(lambda: "last words" in open(log).read(), 300)
print("SEEN %r" % v2)
print("STOPPED %r" % cloudtest.stop(p))
t = time.monotonic()
cloudtest.wait_for(lambda: False, 1)
print("AGAIN %.1f" % (time.monotonic() - t))
PY
took_less 15 python3 "$T/py-test.py" "$T/py.log"
passed "cloudtest.wait_for ends within seconds of a watched daemon's death ($(awk '$1 == "RESULT" { print $3 }' "$T/out") s)"
check "... returns false" grep -q "^RESULT False" "$T/out"
check "... saying it is gone with its exit status and its last words" \
	eval 'grep -q "^# autoscaled (pid [0-9]*) is gone (exit status 3)" "$T/out" && grep -q "^#   last words" "$T/out"'
check "... what it wrote before it died still satisfies a wait" grep -q "^SEEN True" "$T/out"
check "... stop gives its exit status" grep -q "^STOPPED 3" "$T/out"
check "... and once stopped, a wait runs its time again" \
	awk '$1 == "AGAIN" && $2 >= 0.9 { f = 1 } END { exit !f }' "$T/out"
tap_done
