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

# start_daemon NAME: runs the daemon in the background, output to $TMP/NAME.out.
start_daemon() {
	"$AUTOSCALED" -f -c "$TMP/$1.conf" >"$TMP/$1.out" 2>&1 &
	DAEMON=$!
	PIDS="$PIDS $DAEMON"
}

# wait_line NAME REGEX SECONDS: waits for a line of the daemon's output.
wait_line() {
	i=0
	while ! grep -qE "$2" "$TMP/$1.out"; do
		i=$((i + 1))
		[ $i -gt $(($3 * 10)) ] && return 1
		sleep 0.1
	done
}

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# ------------------------------------------------------------ Redis queue
P=$(free_port)
mkdir -p "$TMP/redis"
bg redis-server --bind 127.0.0.1 --port "$P" --dir "$TMP/redis" --save '' --appendonly no --loglevel warning
i=0
until redis-cli -p "$P" ping 2>/dev/null | grep -q PONG; do
	i=$((i + 1))
	[ $i -gt 100 ] && { echo "Bail out! redis-server did not start"; exit 1; }
	sleep 0.1
done
conf queue "{ name = \"jobs\"; source = \"redis\"; source_options = { port = $P; key = \"jobs\"; };
	type = \"average\"; target = 5.0; aggregation = \"last\"; window = \"2s\"; poll_interval = \"1s\"; }"
start_daemon queue
wait_line queue "scaled out from 0 to 1" 15 && ok "an empty queue: the pool starts at its minimum of 1" ||
	not_ok "an empty queue: the pool starts at its minimum of 1"
t0=$(now)
redis-cli -p "$P" rpush jobs $(seq 1 40) >/dev/null
if wait_line queue "scaled out from 1 to 8" 15; then
	ok "40 jobs at 5 per instance: scaled out from 1 to 8 in $(elapsed "$t0" "$(now)") s"
else
	not_ok "40 jobs at 5 per instance: scaled out from 1 to 8"
fi
grep -q "jobs 40 vs 5/instance -> 8" "$TMP/queue.out" && ok "the decision names the queue depth and the target" ||
	not_ok "the decision names the queue depth and the target"
# The workers drain the queue.
redis-cli -p "$P" del jobs >/dev/null
t1=$(now)
if wait_line queue "scaled in from 8 to 1" $((WINDOW + 15)); then
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
wait_line queue "scaled out from 1 to 3" 10
redis-cli -p "$P" shutdown nosave >/dev/null 2>&1
sleep $((WINDOW + 3))
if grep -q "jobs invalid" "$TMP/queue.out" && ! grep -q "scaled in from 3" "$TMP/queue.out"; then
	ok "Redis down: the signal is invalid and the pool holds at 3"
else
	not_ok "Redis down: the signal is invalid and the pool holds at 3"
fi
kill "$DAEMON"
wait "$DAEMON" && ok "the daemon stops cleanly" || not_ok "the daemon stops cleanly"
[ "$tap_fail" -eq 0 ] || sed 's/^/# /' "$TMP/queue.out" | tail -30

# ------------------------------------------------------ HAProxy throughput
start_haproxy
conf lb "{ name = \"lb\"; source = \"haproxy\"; source_options = { url = \"http://127.0.0.1:$S/stats\"; proxy = \"web\"; column = \"req_rate\"; };
	type = \"average\"; target = 5.0; window = \"3s\"; aggregation = \"avg\"; poll_interval = \"1s\"; }"
start_daemon lb
wait_line lb "scaled out from 0 to 1" 15 && ok "no traffic: the pool starts at 1" || not_ok "no traffic: the pool starts at 1"
# About 20 requests/s for 12 s: 4 instances at 5 requests/s each.
t0=$(now)
python3 - "$W" <<'PY' &
import sys, time, urllib.request
url = "http://127.0.0.1:%s/" % sys.argv[1]
end = time.time() + 12
n = 0
start = time.time()
while time.time() < end:
    urllib.request.urlopen(url, timeout=2).read()
    n += 1
    time.sleep(max(0, start + n / 20.0 - time.time()))
PY
LOAD=$!
if wait_line lb "scaled out from [0-9]+ to [45]" 15; then
	ok "20 requests/s at 5 per instance: reached $(grep -oE "scaled out from [0-9]+ to [45]" "$TMP/lb.out" | head -1 | grep -oE "[0-9]+$") instances in $(elapsed "$t0" "$(now)") s"
else
	not_ok "20 requests/s at 5 per instance: the pool scales out"
fi
grep -qE "lb (1[5-9]|2[0-5])(\.[0-9]+)? vs 5/instance" "$TMP/lb.out" && ok "req_rate follows the load (15-25 requests/s seen)" ||
	not_ok "req_rate follows the load"
wait "$LOAD"
t1=$(now)
if wait_line lb "scaled in from [0-9]+ to 1" $((WINDOW + 15)); then
	ok "the load stops: scaled back in to 1 in $(elapsed "$t1" "$(now)") s"
else
	not_ok "the load stops: scaled back in to 1"
fi
kill "$DAEMON"
wait "$DAEMON" && ok "the daemon stops cleanly" || not_ok "the daemon stops cleanly"
[ "$tap_fail" -eq 0 ] || sed 's/^/# /' "$TMP/lb.out" | tail -30
finish
