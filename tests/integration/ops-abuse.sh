#!/bin/bash
# The admin socket and the metrics listener of a running daemon under
# abuse (ops_abuse.py does it, one phase at a time): hundreds of held
# connections, slow clients that send a byte a second, oversized URLs,
# headers and bodies, malformed requests, a burst of requests, reloads
# during a burst while a scale-out runs. Through each, the daemon stays up,
# a well-behaved request is answered within 2 s, and afterwards its memory
# and descriptors are back near where they were; the driver is called once
# per change however the reloads fall.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/integration/ops-lib.sh"

STEP_MS=300
set_load 20
start_daemon_with_metrics
check "the pool reaches 2" wait_for 30 pool_is 2

kb() { sed -n "s/^$1:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$DAEMON_PID/status"; }
fds() { ls "/proc/$DAEMON_PID/fd" | wc -l; }
rss0=$(kb VmRSS)
fd0=$(fds)
echo "# before: RSS $rss0 kB, $fd0 descriptors"

abuse() { python3 "$top_srcdir/tests/integration/ops_abuse.py" "$1" "$DAEMON_PID" "$T/admin.sock" "127.0.0.1:$MPORT"; }
check "300 idle connections: the daemon answers others within 2 s" abuse connections
check "160 slow clients: others answered within 2 s, each slow one cut off at 10 s" abuse slow
check "oversized URL 414, headers 431, body 413, malformed 400 or closed; others answered" abuse malformed
check "a burst of 300 requests from 30 clients: all answered" abuse burst

# Reloads during a burst of requests while a scale-out runs (300 ms per
# instance): the driver is asked once for 2 -> 5, never again.
set_load 50
check "reloads during a burst of requests while the pool grows: all answered" abuse reload
check "the pool reaches 5" wait_for 30 pool_is 5
check "the daemon has reloaded" wait_for 10 grep -q "agent: reloaded" "$T/daemon.log"
check "one evaluation after the reloads" wait_evaluations 1
n25=$(grep -c ' set_capacity 2 5$' "$T/calls")
nset=$(grep -c ' set_capacity ' "$T/calls")
check "the driver was asked once for 2 -> 5 ($n25) and twice in all ($nset)" test "$n25" -eq 1 -a "$nset" -eq 2

# Every connection of the abuse is closed; memory is back near the start.
settled() { [ "$(fds)" -le $((fd0 + 2)) ]; }
check "the daemon's descriptors are back to $fd0" wait_for 20 settled
rss1=$(kb VmRSS)
hwm=$(kb VmHWM)
echo "# after: RSS $rss1 kB (peak $hwm kB), $(fds) descriptors"
if [ "${AUTOSCALED_SANITIZERS:-}" = yes ]; then
	# ASan keeps freed memory in its quarantine (up to 256 MiB) and adds
	# its shadow: RSS says nothing about the daemon's own bound there.
	ok "# SKIP RSS after the abuse: a sanitized build ($rss1 kB vs $rss0 kB)"
	ok "# SKIP peak RSS: a sanitized build ($hwm kB)"
else
	check "RSS after the abuse ($rss1 kB) within 8 MiB of before ($rss0 kB)" test $((rss1 - rss0)) -le 8192
	check "peak RSS ($hwm kB) within 24 MiB of the start ($rss0 kB)" test $((hwm - rss0)) -le 24576
fi
check "the daemon still answers" daemon_answers
stop_daemon; rc=$?
check "the daemon stops cleanly (rc $rc)" test $rc -eq 0
tap_done
