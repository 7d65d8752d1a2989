# Helpers for the operations tests (state, admin API, metrics, hooks):
# a daemon on the filepool test driver, whose pool is a text file that
# outlives the daemon. Sourced, not run; expects tap.sh sourced first.

: "${top_srcdir:=.}" "${top_builddir:=.}" "${AUTOSCALED:=$top_builddir/autoscaled}"
CTL="$top_builddir/autoscalectl"
POOL_DRIVERS="$top_builddir/tests/helpers/.libs"
# The environment's driver directory is searched first: it must hold ours.
AUTOSCALED_DRIVER_DIR=$POOL_DRIVERS
export AUTOSCALED_DRIVER_DIR

[ -x "$AUTOSCALED" ] || skip_all "the daemon is not built"
[ -x "$CTL" ] || skip_all "autoscalectl is not built"
[ -f "$POOL_DRIVERS/filepool.so" ] || skip_all "the filepool test driver is not built"

T=$(mktemp -d "${TMPDIR:-/tmp}/autoscaled-ops.XXXXXX")
chmod 755 "$T"
mkdir -p "$T/state"
echo "next 1" > "$T/pool"
: > "$T/calls"
DAEMON_PID=
cleanup() {
	[ -n "$DAEMON_PID" ] && kill -9 "$DAEMON_PID" 2>/dev/null
	[ -n "${EXTRA_PIDS:-}" ] && kill $EXTRA_PIDS 2>/dev/null
	wait 2>/dev/null
	if [ "${tap_failed:-0}" -gt 0 ] && [ -f "$T/daemon.log" ]; then
		echo "# daemon log (last 30 lines):"; tail -30 "$T/daemon.log" | sed "s/^/# /"
		echo "# calls:"; sed "s/^/# /" "$T/calls"
	fi
	rm -rf "$T"
}
trap cleanup EXIT

ctl() { "$CTL" -s "$T/admin.sock" "$@"; }

# cpu_is PYTHON: the last decision of the group "web" as `r` and its signal
# "cpu" as `s` satisfy PYTHON.
cpu_is() {
	ctl --json show web 2>/dev/null | python3 -c 'import json,sys
r=json.load(sys.stdin).get("last_decision") or {}
s=[x for x in r.get("signals", []) if x["name"]=="cpu"][0]
'"$1" 2>/dev/null
}

# The pool's size: its lines but the counter.
pool_size() { echo $(($(wc -l < "$T/pool") - 1)); }

set_load() { echo "$1" > "$T/load.tmp" && mv "$T/load.tmp" "$T/load"; }

# wait_for SECONDS COMMAND... is tap.sh's: it fails at once when the
# daemon (or a server of watch_pid) is gone.

pool_is() { [ "$(pool_size)" -eq "$1" ]; }

# write_conf [GROUP-EXTRA [AGENT-EXTRA [SCALE-IN-STABILIZATION]]]: the
# group "web" follows "queue" (the number in $T/load) with a target of 10
# per instance, within [1, 8].
write_conf() {
	cat > "$T/autoscaled.conf" <<CONF
agent = {
  interval = "1s";
  state_directory = "$T/state";
  admin_socket = "$T/admin.sock";
  driver_directory = "$POOL_DRIVERS";
  ${2:-}
};
groups = ( {
  name = "web"; driver = "filepool"; min = 1; max = 8;
  driver_options = { pool = "$T/pool"; calls = "$T/calls"; step_ms = ${STEP_MS:-0}; ${POOL_OPTIONS:-} };
  signals = ( { name = "queue"; source = "exec"; type = "average"; target = 10.0;
                source_options = { command = [ "/bin/cat", "$T/load" ]; };
                poll_interval = "1s"; window = "3s"; aggregation = "last"; staleness = "5s"; } );
  behavior = { scale_in = { stabilization = "${3:-2s}"; policies = ( ${SCALE_IN_POLICIES:-} ); };
               scale_out = { policies = ( ); }; };
  ${1:-}
} );
CONF
}

# daemon_answers: the admin socket answers (a socket file alone may be
# the stale one of a daemon killed with -9).
daemon_answers() { test -S "$T/admin.sock" && ctl status >/dev/null 2>&1; }

# start_daemon: starts the daemon on $T/autoscaled.conf (with the options
# in DAEMON_ARGS, if any), watched (see watch_pid), and returns once its
# admin socket answers; fails at once when it exits instead.
start_daemon() {
	"$AUTOSCALED" -f ${DAEMON_ARGS:-} -c "$T/autoscaled.conf" >> "$T/daemon.log" 2>&1 &
	DAEMON_PID=$!
	watch_pid "$DAEMON_PID" autoscaled "$T/daemon.log"
	wait_for 30 daemon_answers
}

# start_daemon_with_metrics [EXTRA_GROUP_OPTIONS [EXTRA_AGENT_OPTIONS]]: starts the daemon with
# the metrics listener on a free port (MPORT), trying another port if
# something took the first before the daemon listened; fails the test if
# it does not start.
start_daemon_with_metrics() {
	local attempt
	for attempt in 1 2 3; do
		MPORT=$(free_port)
		write_conf "${1-}" "metrics_listen = \"127.0.0.1:$MPORT\"; ${2-}"
		: >"$T/daemon.log"
		start_daemon && break
		grep -q "cannot listen on .*Address already in use" "$T/daemon.log" || break
		echo "# port $MPORT was taken: another one"
		kill9_daemon
	done
	[ -n "$DAEMON_PID" ] && daemon_answers || { not_ok "the daemon starts"; tap_done; exit 1; }
}

# stop_daemon: SIGTERM; returns the daemon's exit status.
stop_daemon() {
	local rc
	[ -n "$DAEMON_PID" ] || return 0
	stop_pid "$DAEMON_PID" TERM 2>/dev/null
	rc=$?
	DAEMON_PID=
	return $rc
}

kill9_daemon() {
	[ -n "$DAEMON_PID" ] || return 0
	stop_pid "$DAEMON_PID" KILL 2>/dev/null
	DAEMON_PID=
}

# Milliseconds since the epoch, as the call log writes them.
now_ms() { date +%s%3N; }

# evaluated_since MS N [GROUP]: the daemon has made N decisions on GROUP
# (web) after MS, by the admin API's history (every evaluation is one).
evaluated_since() {
	[ "$(ctl --json history "${3:-web}" 2>/dev/null | python3 -c 'import datetime, json, sys
n = 0
for d in json.load(sys.stdin)["decisions"]:
    t = datetime.datetime.strptime(d["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    n += t.timestamp() * 1000 > int(sys.argv[1])
print(n)' "$1" 2>/dev/null)" -ge "$2" ] 2>/dev/null
}

# wait_evaluations N [SECONDS [GROUP]]: waits (30 s by default) until the
# daemon has evaluated GROUP N more times: that nothing happens is shown by
# decisions that did not act, not by time that passed.
wait_evaluations() {
	local since
	since=$(now_ms)
	wait_for "${2:-30}" evaluated_since "$since" "$1" "${3:-web}"
}
