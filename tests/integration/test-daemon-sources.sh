#!/bin/sh
# The daemon end to end on libvirt's test hypervisor, driven by real
# servers on loopback: a pool scales out as a Redis queue grows and back in
# after it drains and the scale-in window passes; the same with HAProxy's
# request rate under load generated here.
. "${top_srcdir:?}/tests/integration/lib.sh"
need redis-server redis-cli haproxy python3 curl
"$AUTOSCALED" --list-drivers 2>/dev/null | grep -q libvirt || skip_all "built without the libvirt driver"

WINDOW=5

# conf NAME SIGNAL-BLOCK: a group on the test hypervisor with one signal.
conf() {
	cat >"$TMP/$1.conf" <<CONF
agent = { state_directory = "$TMP/state-$1"; admin_socket = "$TMP/$1.sock"; };
groups = ( {
	name = "$1";
	driver = "libvirt";
	driver_options = { uri = "test:///default"; template = "test"; };
	interval = "1s";
	min = 1; max = 8;
	signals = ( $2 );
	behavior = {
		scale_in = { stabilization = "${WINDOW}s"; };
		scale_out = { policies = ( { type = "instances"; value = 10; period = "1s"; } ); };
		initialization_period = "0s";
	};
} );
CONF
}

# start_daemon NAME: runs the daemon in the background, output to
# $TMP/NAME.out; watched, so that the waits fail at once if it dies.
start_daemon() {
	server autoscaled "$TMP/$1.out" "$AUTOSCALED" -f -c "$TMP/$1.conf"
	DAEMON=$SERVER_PID
}

# wait_line NAME REGEX SECONDS: waits for a line of the daemon's output.
wait_line() {
	wait_for "$3" grep -qE "$2" "$TMP/$1.out"
}

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# ------------------------------------------------------------ Redis queue
P=$(free_port)
mkdir -p "$TMP/redis"
server redis-server "$TMP/redis.log" redis-server --bind 127.0.0.1 --port "$P" --dir "$TMP/redis" --save '' \
	--appendonly no --loglevel warning
REDIS=$SERVER_PID
redis_up() { redis-cli -p "$P" ping 2>/dev/null | grep -q PONG; }
wait_for 30 redis_up || { echo "Bail out! redis-server did not start"; exit 1; }
conf queue "{ name = \"jobs\"; source = \"redis\"; source_options = { port = $P; key = \"jobs\"; };
	type = \"average\"; target = 5.0; aggregation = \"last\"; window = \"2s\"; poll_interval = \"1s\"; }"
start_daemon queue
wait_line queue "scaled out from 0 to 1" 30 && ok "an empty queue: the pool starts at its minimum of 1" ||
	not_ok "an empty queue: the pool starts at its minimum of 1"
t0=$(now)
redis-cli -p "$P" rpush jobs $(seq 1 40) >/dev/null
if wait_line queue "scaled out from 1 to 8" 30; then
	ok "40 jobs at 5 per instance: scaled out from 1 to 8 in $(elapsed "$t0" "$(now)") s"
else
	not_ok "40 jobs at 5 per instance: scaled out from 1 to 8"
fi
grep -q "jobs 40 vs 5/instance -> 8" "$TMP/queue.out" && ok "the decision names the queue depth and the target" ||
	not_ok "the decision names the queue depth and the target"
# The workers drain the queue.
redis-cli -p "$P" del jobs >/dev/null
t1=$(now)
if wait_line queue "scaled in from 8 to 1" $((WINDOW + 30)); then
	t=$(elapsed "$t1" "$(now)")
	ok "the drained queue: scaled in from 8 to 1 in $t s"
	awk -v t="$t" -v w="$WINDOW" 'BEGIN { exit !(t + 0 >= w - 1) }' &&
		ok "not before the ${WINDOW} s scale-in window (~$t s)" || not_ok "scale-in came before the window ($t s)"
else
	not_ok "the drained queue: scaled in from 8 to 1"
	not_ok "not before the scale-in window"
fi
grep -q "held at 8 by the scale-in stabilization window" "$TMP/queue.out" &&
	ok "meanwhile the window holds 8, and says so" || not_ok "meanwhile the window holds 8, and says so"
n_out=$(grep -c "scaled out from" "$TMP/queue.out")
n_in=$(grep -c "scaled in from" "$TMP/queue.out")
[ "$n_out" -eq 2 ] && [ "$n_in" -eq 1 ] && ok "no action twice ($n_out out, $n_in in)" ||
	not_ok "no action twice ($n_out out, $n_in in)"
# A dead Redis: the signal is invalid, never zero, so the pool holds.
redis-cli -p "$P" rpush jobs $(seq 1 12) >/dev/null
wait_line queue "scaled out from 1 to 3" 30
# The test stops Redis on purpose: no longer a server it waits on.
unwatch_pid "$REDIS"
redis-cli -p "$P" shutdown nosave >/dev/null 2>&1
# Past the scale-in window in evaluations (one a second at most, each in
# the admin API's history), not in seconds of a machine that may be slow.
invalid_evaluations() {
	[ "$("$top_builddir/autoscalectl" -s "$TMP/queue.sock" --json history queue 2>/dev/null |
		grep -o "jobs invalid" | wc -l)" -ge $((WINDOW + 2)) ]
}
wait_for $((WINDOW * 4 + 10)) invalid_evaluations
if invalid_evaluations && ! grep -q "scaled in from 3" "$TMP/queue.out"; then
	ok "Redis down: the signal is invalid and the pool holds at 3"
else
	not_ok "Redis down: the signal is invalid and the pool holds at 3"
fi
stop_pid "$DAEMON" && ok "the daemon stops cleanly" || not_ok "the daemon stops cleanly"
[ "$tap_failed" -eq 0 ] || sed 's/^/# /' "$TMP/queue.out" | tail -30

# ------------------------------------------------------ HAProxy throughput
# What HAProxy itself counted, not what the load generator meant to send
# (on a busy machine it sends less): the frontend's req_tot.
req_tot() {
	curl -s "http://127.0.0.1:$S/stats;csv" | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i }
		$1 == "web" && $2 == "FRONTEND" { print $c["req_tot"] }'
}
# req_tot_above N: HAProxy counted more than N requests.
req_tot_above() { [ "$(req_tot)" -gt "$1" ]; }
start_haproxy
conf lb "{ name = \"lb\"; source = \"haproxy\"; source_options = { url = \"http://127.0.0.1:$S/stats\"; proxy = \"web\"; column = \"req_rate\"; };
	type = \"average\"; target = 5.0; window = \"3s\"; aggregation = \"avg\"; poll_interval = \"1s\"; }"
start_daemon lb
wait_line lb "scaled out from 0 to 1" 30 && ok "no traffic: the pool starts at 1" || not_ok "no traffic: the pool starts at 1"
# About 20 requests/s until the test stops it (90 s at most): 4 instances
# at 5 requests/s each. At most 20/s: a sender that fell behind (a loaded
# machine) goes on from where it is instead of catching up in a burst, so
# no second of HAProxy's req_rate holds more than the nominal rate.
RATE=20
python3 - "$W" "$RATE" <<'PY' &
import sys, time, urllib.request
url = "http://127.0.0.1:%s/" % sys.argv[1]
period = 1.0 / float(sys.argv[2])
end = time.monotonic() + 90
due = time.monotonic()
while time.monotonic() < end:
    try:
        urllib.request.urlopen(url, timeout=2).read()
    except OSError:
        pass
    due = max(due + period, time.monotonic())
    time.sleep(max(0, due - time.monotonic()))
PY
LOAD=$!
PIDS="$PIDS $LOAD"
tot0=$(req_tot)
wait_for 30 req_tot_above "$tot0"
t0=$(now)
tot0=$(req_tot)
if wait_line lb "scaled out from [0-9]+ to [3-9]" 40; then
	ok "20 requests/s at 5 per instance: the pool scales out ($(elapsed "$t0" "$(now)") s)"
else
	not_ok "20 requests/s at 5 per instance: the pool scales out"
fi
# Five more evaluations under the same load, then the rate HAProxy saw.
decisions() { grep -cE "lb [0-9.]+ vs 5/instance" "$TMP/lb.out"; }
more_decisions() { [ "$(decisions)" -ge "$1" ]; }
wait_for 30 more_decisions $(($(decisions) + 5))
t1=$(now)
tot1=$(req_tot)
stop_pid "$LOAD" 2>/dev/null
rate=$(awk -v a="$tot0" -v b="$tot1" -v t="$(elapsed "$t0" "$t1")" 'BEGIN { printf "%.1f", (b - a) / t }')
echo "# HAProxy counted $((tot1 - tot0)) requests in $(elapsed "$t0" "$t1") s: $rate requests/s"
# The pool the daemon reached, and the largest rate it read, against that.
size=$(grep -oE "scaled out from [0-9]+ to [0-9]+" "$TMP/lb.out" | tail -1 | grep -oE "[0-9]+$")
seen=$(grep -oE "lb [0-9.]+ vs 5/instance" "$TMP/lb.out" | awk '$2 > m { m = $2 } END { print m + 0 }')
# The largest reading is at least most of the mean HAProxy counted (a
# reading lost or read as zero fails), and no more than the sender's rate
# allows (a reading made up fails); a loaded machine lowers the mean, never
# the ceiling.
if awk -v r="$rate" -v v="$seen" -v c="$RATE" 'BEGIN { exit !(r > 5 && v >= 0.75 * r && v <= 1.25 * c + 1) }'; then
	ok "req_rate follows the load: up to $seen requests/s read, $rate counted by HAProxy"
else
	not_ok "req_rate follows the load: up to $seen requests/s read, $rate counted by HAProxy"
fi
if awk -v r="$rate" -v n="${size:-0}" 'BEGIN { lo = int(0.75 * r / 5 + 0.999); hi = int(1.25 * r / 5 + 1.999)
	exit !(n >= lo && n <= hi) }'; then
	ok "at 5 requests/s per instance, $size instances for $rate requests/s"
else
	not_ok "at 5 requests/s per instance, ${size:-no} instances for $rate requests/s"
fi
t1=$(now)
if wait_line lb "scaled in from [0-9]+ to 1" $((WINDOW + 30)); then
	ok "the load stops: scaled back in to 1 in $(elapsed "$t1" "$(now)") s"
else
	not_ok "the load stops: scaled back in to 1"
fi
stop_pid "$DAEMON" && ok "the daemon stops cleanly" || not_ok "the daemon stops cleanly"
[ "$tap_failed" -eq 0 ] || sed 's/^/# /' "$TMP/lb.out" | tail -30
tap_done
