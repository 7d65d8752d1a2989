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
