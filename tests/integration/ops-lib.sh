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

T=$(mktemp -d /tmp/autoscaled-ops.XXXXXX)
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

# The pool's size: its lines but the counter.
pool_size() { echo $(($(wc -l < "$T/pool") - 1)); }

set_load() { echo "$1" > "$T/load.tmp" && mv "$T/load.tmp" "$T/load"; }

# wait_for SECONDS COMMAND...: polls every 0.2 s.
wait_for() {
	local n=$(($1 * 5)); shift
	while [ "$n" -gt 0 ]; do
		"$@" && return 0
		sleep 0.2
		n=$((n - 1))
	done
	return 1
}

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

start_daemon() {
	"$AUTOSCALED" -f -c "$T/autoscaled.conf" >> "$T/daemon.log" 2>&1 &
	DAEMON_PID=$!
	wait_for 10 test -S "$T/admin.sock"
}

stop_daemon() {
	[ -n "$DAEMON_PID" ] || return 0
	kill -TERM "$DAEMON_PID" 2>/dev/null
	wait "$DAEMON_PID" 2>/dev/null
	DAEMON_PID=
}

kill9_daemon() {
	kill -9 "$DAEMON_PID" 2>/dev/null
	wait "$DAEMON_PID" 2>/dev/null
	DAEMON_PID=
}

# Milliseconds since the epoch, as the call log writes them.
now_ms() { date +%s%3N; }
