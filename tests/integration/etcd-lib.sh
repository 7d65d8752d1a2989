# Real etcd members for the cluster tests, on free loopback ports; sourced
# after tap.sh (watch_pid, wait_for, free_port). The C tests have the same
# in tests/helpers/etcd-server.c.
#
# start_etcd N DIR: starts N (1 or 3) members with their data and logs
# under DIR (on disk: each preallocates ~64 MB of WAL), watched, and
# returns once every member answers /health (30 s at most). Sets
# ETCD_ENDPOINTS ("http://127.0.0.1:P1,http://..."), ETCD_LIST (the same
# as a libconfig list body: "\"http://...\", \"http://...\"") and
# ETCD_PID_0.. ETCD_PID_{N-1} (and ETCD_CLUSTER, ETCD_DIR for the
# members' restarts). A member that cannot listen (a port taken
# between the check and the listen) makes it start all over on new ports.
start_etcd() {
	local n=$1 dir=$2 attempt i cluster c p
	need_etcd
	for attempt in 1 2 3; do
		cluster=""
		ETCD_ENDPOINTS=""
		ETCD_LIST=""
		for i in $(seq 0 $((n - 1))); do
			eval "ETCD_CPORT_$i=$(free_port) ETCD_PPORT_$i=$(free_port)"
			eval "p=\$ETCD_PPORT_$i c=\$ETCD_CPORT_$i"
			cluster="$cluster${cluster:+,}m$i=http://127.0.0.1:$p"
			ETCD_ENDPOINTS="$ETCD_ENDPOINTS${ETCD_ENDPOINTS:+,}http://127.0.0.1:$c"
			ETCD_LIST="$ETCD_LIST${ETCD_LIST:+, }\"http://127.0.0.1:$c\""
		done
		ETCD_CLUSTER=$cluster ETCD_DIR=$dir
		for i in $(seq 0 $((n - 1))); do
			rm -rf "$dir/m$i"
			etcd_member "$i"
		done
		if etcd_wait_healthy "$n"; then
			for i in $(seq 0 $((n - 1))); do
				eval "watch_pid \$ETCD_PID_$i etcd-m$i \"$dir/m$i.log\""
			done
			return 0
		fi
		stop_etcd "$n"
		grep -q "address already in use" "$dir"/m*.log || break
		echo "# etcd: a port was taken; trying other ports"
	done
	echo "# etcd did not start:"
	tail -5 "$dir"/m*.log | sed 's/^/# /'
	return 1
}

# etcd_member I: starts member I on its ports, with its data directory as
# it is (new, or as a killed member left it); sets ETCD_PID_I.
etcd_member() {
	local p c
	eval "p=\$ETCD_PPORT_$1 c=\$ETCD_CPORT_$1"
	etcd --name "m$1" --data-dir "$ETCD_DIR/m$1" \
		--listen-client-urls "http://127.0.0.1:$c" --advertise-client-urls "http://127.0.0.1:$c" \
		--listen-peer-urls "http://127.0.0.1:$p" --initial-advertise-peer-urls "http://127.0.0.1:$p" \
		--initial-cluster "$ETCD_CLUSTER" --initial-cluster-state new \
		--heartbeat-interval 100 --election-timeout 1000 >>"$ETCD_DIR/m$1.log" 2>&1 &
	eval "ETCD_PID_$1=$!"
}

# kill_etcd_member I: kill -9 of member I (no longer watched).
kill_etcd_member() {
	local pid
	eval "pid=\${ETCD_PID_$1:-}"
	[ -n "$pid" ] || return 0
	unwatch_pid "$pid"
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	eval "ETCD_PID_$1="
}

# restart_etcd_member I: starts member I again on its data and ports,
# watched; returns once it answers /health (30 s at most).
restart_etcd_member() {
	local pid end=$(($(date +%s) + 30))
	etcd_member "$1"
	eval "pid=\$ETCD_PID_$1"
	watch_pid "$pid" "etcd-m$1" "$ETCD_DIR/m$1.log"
	while [ "$(date +%s)" -lt "$end" ]; do
		pid_alive "$pid" || return 1
		etcd_healthy "$1" && return 0
		sleep 0.1
	done
	return 1
}

need_etcd() {
	command -v etcd >/dev/null 2>&1 || skip_all "etcd is not installed (Debian: etcd-server)"
	command -v curl >/dev/null 2>&1 || skip_all "curl is not installed"
}

# etcd_healthy I: member I answers /health with true.
etcd_healthy() {
	local c
	eval "c=\$ETCD_CPORT_$1"
	curl -s -m 2 --noproxy '*' "http://127.0.0.1:$c/health" 2>/dev/null | grep -q '"health":"true"'
}

# etcd_wait_healthy N: every member is healthy (30 s at most); fails at
# once when one has exited.
etcd_wait_healthy() {
	local i pid end=$(($(date +%s) + 30)) all
	while [ "$(date +%s)" -lt "$end" ]; do
		all=1
		for i in $(seq 0 $(($1 - 1))); do
			eval "pid=\$ETCD_PID_$i"
			pid_alive "$pid" || return 1
			etcd_healthy "$i" || all=0
		done
		[ "$all" = 1 ] && return 0
		sleep 0.1
	done
	return 1
}

# stop_etcd N: kills every member (no longer watched).
stop_etcd() {
	local i pid
	for i in $(seq 0 $(($1 - 1))); do
		eval "pid=\${ETCD_PID_$i:-}"
		[ -n "$pid" ] || continue
		unwatch_pid "$pid"
		kill -CONT "$pid" 2>/dev/null
		kill -9 "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		eval "ETCD_PID_$i="
	done
}

# etcd_get_prefix PREFIX: "KEY VALUE" lines of every key under PREFIX.
etcd_get_prefix() {
	ETCDCTL_API=3 etcdctl --endpoints="$ETCD_ENDPOINTS" --dial-timeout=2s --command-timeout=3s \
		get --prefix "$1" 2>/dev/null | paste - -
}

# etcd_leader: the index of the member that leads now, nothing when no
# member answers or none leads.
etcd_leader() {
	ETCDCTL_API=3 etcdctl --endpoints="$ETCD_ENDPOINTS" --dial-timeout=2s --command-timeout=3s \
		-w json endpoint status 2>/dev/null | python3 -c '
import json, sys
for e in json.load(sys.stdin):
    s = e["Status"]
    if s["header"]["member_id"] == s["leader"]:
        print(e["Endpoint"])' | while read -r ep; do
		for i in 0 1 2; do
			eval "[ \"http://127.0.0.1:\${ETCD_CPORT_$i:-}\" = \"$ep\" ]" && echo "$i"
		done
	done
}

# ------------------------------------------------ agents and their targets
# For the tests whose agents are daemons of the build on a cloud emulator.

# cluster_agent_start X DIR: the daemon on DIR/X/autoscaled.conf in the
# foreground, its output in DIR/X/daemon.log, watched; sets PID_X and adds
# it to CLUSTER_PIDS (for cluster_cleanup).
cluster_agent_start() {
	"${AUTOSCALED:-$top_builddir/autoscaled}" -f -c "$2/$1/autoscaled.conf" >>"$2/$1/daemon.log" 2>&1 &
	eval "PID_$1=$!"
	CLUSTER_PIDS="${CLUSTER_PIDS:-} $!"
	watch_pid "$!" "agent $1" "$2/$1/daemon.log"
}

# cluster_json X DIR: `autoscalectl --json cluster` of agent X (its admin
# socket DIR/X/admin.sock).
cluster_json() {
	"$top_builddir/autoscalectl" -s "$2/$1/admin.sock" --json cluster 2>/dev/null
}

# etcd_owner_counts PREFIX: "AGENT N" lines, the number of groups each
# agent holds an owner key of, and "total N".
etcd_owner_counts() {
	etcd_get_prefix "$1/owners/" | awk '{ n[$2]++; t++ } END { for (a in n) print a, n[a]; print "total", t + 0 }'
}

# etcd_owned_by PREFIX N AGENT...: N groups have an owner key, each of
# one of the AGENTs.
etcd_owned_by() {
	local prefix=$1 n=$2 counts a sum=0 c
	shift 2
	counts=$(etcd_owner_counts "$prefix")
	[ "$(echo "$counts" | awk '$1 == "total" { print $2 }')" -eq "$n" ] || return 1
	for a in "$@"; do
		c=$(echo "$counts" | awk -v a="$a" '$1 == a { print $2 }')
		sum=$((sum + ${c:-0}))
	done
	[ "$sum" -eq "$n" ]
}

# etcd_record PREFIX FILE: every event under PREFIX from etcd's first
# revision on, one JSON line each with the time it was seen, appended to
# FILE until etcd_record_stop (tests/integration/cluster_history.py).
etcd_record() {
	python3 "$top_srcdir/tests/integration/cluster_history.py" record "$ETCD_ENDPOINTS" "$1" "$2" \
		2>>"$2.err" &
	ETCD_RECORD_PID=$!
	CLUSTER_PIDS="${CLUSTER_PIDS:-} $!"
	watch_pid "$!" "the etcd recorder" "$2.err"
}

etcd_record_stop() {
	[ -n "${ETCD_RECORD_PID:-}" ] && stop_pid "$ETCD_RECORD_PID" TERM
	ETCD_RECORD_PID=
}

# emulator_start NAME DIR SETUP: tests/emulators/NAME.py as a program on
# a free port with SETUP (JSON), watched, its request log written to
# DIR/NAME.requests when it stops (emulator_stop NAME). Sets EMU_URL_NAME
# and EMU_PID_NAME; fails when it has not said its port within 20 s.
emulator_start() {
	local pid port
	rm -f "$2/$1.port"
	python3 "$top_srcdir/tests/emulators/$1.py" --port-file "$2/$1.port" --setup "$3" \
		--log "$2/$1.requests" >>"$2/$1.log" 2>&1 &
	pid=$!
	eval "EMU_PID_$1=$pid"
	CLUSTER_PIDS="${CLUSTER_PIDS:-} $pid"
	watch_pid "$pid" "the $1 emulator" "$2/$1.log"
	wait_for 20 test -s "$2/$1.port" || return 1
	read -r port <"$2/$1.port"
	eval "EMU_URL_$1=http://127.0.0.1:$port"
}

# emulator_stop NAME: stops it; its request log is written as it exits.
emulator_stop() {
	local pid
	eval "pid=\${EMU_PID_$1:-}"
	[ -n "$pid" ] && stop_pid "$pid" TERM
	eval "EMU_PID_$1="
}

# cluster_kill_all: kill -9 of every process cluster_agent_start,
# etcd_record and emulator_start started (for the EXIT trap).
cluster_kill_all() {
	local p
	for p in ${CLUSTER_PIDS:-}; do kill -9 "$p" 2>/dev/null; done
}

# ------------------------------------------- one group on the filepool driver
# For the tests of one group "g" (pinned to agent-a) whose target is the
# filepool test driver's pool file DIR/pool.g and whose load is the number
# in DIR/load.g (an exec signal, "queue", 10 an instance); each agent X
# logs its calls to DIR/X/calls.g. Set POOL_DRIVERS first.

# filepool_set_load DIR N
filepool_set_load() { echo "$2" >"$1/load.tmp" && mv "$1/load.tmp" "$1/load.g"; }

# filepool_conf X DIR TTL DRIVER_OPTIONS SIGNAL_OPTIONS BEHAVIOR: writes
# DIR/X/autoscaled.conf (1 s interval; the extra options are appended in
# their blocks, each may be empty).
filepool_conf() {
	mkdir -p "$2/$1/state"
	[ -f "$2/pool.g" ] || echo "next 1" >"$2/pool.g"
	: >>"$2/$1/calls.g"
	cat >"$2/$1/autoscaled.conf" <<CONF
agent = {
  interval = "1s";
  state_directory = "$2/$1/state";
  admin_socket = "$2/$1/admin.sock";
  driver_directory = "$POOL_DRIVERS";
};
cluster = { etcd = ( $ETCD_LIST ); prefix = "/test"; lease_ttl = "${3}s"; name = "agent-$1"; };
groups = (
  { name = "g"; driver = "filepool"; min = 1; max = 8; owner = "agent-a";
    driver_options = { pool = "$2/pool.g"; calls = "$2/$1/calls.g"; $4 };
    signals = ( { name = "queue"; source = "exec"; type = "average"; target = 10.0;
                  source_options = { command = [ "/bin/cat", "$2/load.g" ]; };
                  poll_interval = "1s"; window = "2s"; aggregation = "last"; staleness = "5s"; $5 } );
    behavior = { $6 }; }
);
CONF
}

# The owner of g as etcd says, its pool's size, and conditions on them.
filepool_owner() { etcd_get_prefix /test/owners/g | awk '$1 == "/test/owners/g" { print $2 }'; }
filepool_owned_by() { [ "$(filepool_owner)" = "$1" ]; }
filepool_size() { echo $(($(wc -l <"$1/pool.g") - 1)); }
filepool_is() { [ "$(filepool_size "$1")" -eq "$2" ]; }
filepool_at_least() { [ "$(filepool_size "$1")" -ge "$2" ]; }

# filepool_cleanup DIR AGENT...: for the EXIT trap: kills what
# cluster_agent_start started, stops etcd, and after a failure prints the
# agents' logs and calls and the pool; removes DIR.
filepool_cleanup() {
	local d=$1 x
	shift
	cluster_kill_all
	stop_etcd 3
	wait 2>/dev/null
	if [ "${tap_failed:-0}" -gt 0 ]; then
		for x in "$@"; do
			[ -f "$d/$x/daemon.log" ] || continue
			echo "# agent $x log (last 30 lines):"
			tail -30 "$d/$x/daemon.log" | sed 's/^/# /'
			echo "# agent $x calls:"
			sed 's/^/# /' "$d/$x/calls.g"
		done
		echo "# pool:"
		sed 's/^/# /' "$d/pool.g"
	fi
	rm -rf "$d"
}
