# TAP for every shell test (tests/integration/tap.py is the Python one);
# sourced, not run. Results print as they happen; the plan comes last
# (tap_done) unless tap_plan announced it, and then tap_done checks that as
# many results came.
tap_n=0
tap_failed=0
tap_planned=
ok() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $*"; }
not_ok() { tap_n=$((tap_n + 1)); tap_failed=$((tap_failed + 1)); echo "not ok $tap_n - $*"; }
# check DESCRIPTION COMMAND...: ok when the command succeeds.
check() { local d=$1; shift; if "$@"; then ok "$d"; else not_ok "$d"; fi; }
skip_all() { echo "1..0 # SKIP $*"; exit 0; }
# tap_plan N: announces N results up front.
tap_plan() { tap_planned=$1; echo "1..$1"; }
# tap_done: the plan (unless announced) and the verdict as the status: 0
# when every result passed and as many as planned came.
tap_done() {
	if [ -z "$tap_planned" ]; then
		echo "1..$tap_n"
	elif [ "$tap_n" -ne "$tap_planned" ]; then
		echo "# planned $tap_planned results, ran $tap_n"
		return 1
	fi
	[ "$tap_failed" -eq 0 ]
}

# ----------------------------------------------------------------- waiting
# A test waits for conditions, never for a fixed time, and a process it
# depends on (the daemon, a server it started) that dies fails every wait
# at once instead of letting each run out its timeout. The first wait to
# find a process gone says so, with its exit status and the last lines of
# its log, as TAP comments.

WATCHED_PIDS=""

# watch_pid PID NAME [LOG]: PID must stay alive while the test waits.
watch_pid() {
	WATCHED_PIDS="$WATCHED_PIDS $1"
	eval "watched_name_$1=\$2; watched_log_$1=\${3:-}; watched_told_$1=; watched_rc_$1="
}

# unwatch_pid PID: PID may end from now on (the test is stopping it).
unwatch_pid() {
	local p rest=""
	for p in $WATCHED_PIDS; do
		[ "$p" = "$1" ] || rest="$rest $p"
	done
	WATCHED_PIDS=$rest
}

# pid_alive PID: the process exists and is not a zombie (a child that
# died stays a zombie until the shell reaps it, and kill -0 succeeds on
# zombies). No fork: the helpers run many times a second.
pid_alive() {
	local line state
	[ -n "$1" ] && [ -r "/proc/$1/stat" ] || return 1
	read -r line <"/proc/$1/stat" 2>/dev/null || return 1
	state=${line##*) }
	state=${state%% *}
	[ "$state" != Z ] && [ "$state" != X ]
}

# watched_alive: succeeds when every watched process runs; otherwise
# reports each newly dead one once and fails.
watched_alive() {
	local p name log told rc all=0
	for p in $WATCHED_PIDS; do
		pid_alive "$p" && continue
		all=1
		eval "name=\$watched_name_$p; log=\$watched_log_$p; told=\$watched_told_$p"
		[ -n "$told" ] && continue
		eval "watched_told_$p=1"
		# Our own child: its status (kept for stop_pid, as the shell
		# gives it only once); otherwise wait says 127.
		wait "$p" 2>/dev/null
		rc=$?
		eval "watched_rc_$p=\$rc"
		echo "# $name (pid $p) is gone (wait status $rc); the waits that need it fail at once"
		if [ -n "$log" ] && [ -f "$log" ]; then
			echo "# last lines of $log:"
			tail -n 25 "$log" | sed 's/^/#   /'
		fi
	done
	return $all
}

# uptime_cs: sets UPTIME_CS to a monotonic clock in centiseconds (time
# since boot), immune to wall-clock steps, without a fork.
uptime_cs() {
	local up rest
	read -r up rest </proc/uptime
	UPTIME_CS=${up%.*}${up#*.}
	UPTIME_CS=${UPTIME_CS#0}
}

# seconds_cs S: sets SECONDS_CS to S (integer or decimal seconds) in
# centiseconds.
seconds_cs() {
	local i f
	case $1 in
	*.*) i=${1%%.*}; f=${1#*.}00; f=${f%"${f#??}"} ;;
	*) i=$1; f=00 ;;
	esac
	SECONDS_CS=$(( ${i:-0} * 100 + ${f#0} ))
}

# wait_for SECONDS COMMAND...: runs COMMAND every 0.2 s until it succeeds
# (0) or SECONDS of wall time have passed (1). Fails at once, with the
# watched process's last log lines, when a process of watch_pid is gone
# and COMMAND still fails (a condition the dead process would have made
# true is still seen: its output was written before it died).
wait_for() {
	local wf_end wf_dead
	uptime_cs
	seconds_cs "$1"
	wf_end=$((UPTIME_CS + SECONDS_CS))
	shift
	while :; do
		watched_alive
		wf_dead=$?
		"$@" && return 0
		[ "$wf_dead" -eq 0 ] || return 1
		uptime_cs
		[ "$UPTIME_CS" -lt "$wf_end" ] || return 1
		sleep 0.2
	done
}

# wait_since SECONDS COMMAND...: as wait_for, and sets WAIT_MISS_MS to the
# time (epoch ms) at which the last run of COMMAND that failed started, 0
# when the first run succeeded. What COMMAND waits for came after that
# time and before wait_since returned: a bound on how long something took
# is broken for sure only when it is broken from WAIT_MISS_MS on, since
# the runs themselves (a client process started each time) take time of
# their own on a loaded machine. bash only ($EPOCHREALTIME).
wait_since() {
	local ws_seconds=$1
	shift
	WAIT_MISS_MS=0
	wait_for "$ws_seconds" ws_look "$@"
}
# One run of wait_since's COMMAND, keeping when it started if it fails.
ws_look() {
	local ws_start=${EPOCHREALTIME/./}
	"$@" && return 0
	WAIT_MISS_MS=$((ws_start / 1000))
	return 1
}

# free_port: a loopback TCP port free at the moment, chosen at random
# below the kernel's ephemeral range: ports from bind(0) are the ones
# outgoing connections use too, and one may take it before the server
# under test listens. Still a race with other tests: a server that cannot
# listen should be started again on another port.
free_port() {
	python3 -c 'import random, socket
# Below the ephemeral range of the kernel, where outgoing connections take
# their ports from.
lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
hi = lo - 1 if lo > 11000 else 60000
for _ in range(200):
    p = random.randrange(10000, hi)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    break'
}

# stop_pid PID [SIGNAL]: stops a process the test started (SIGTERM by
# default) and returns its exit status; no longer watched.
stop_pid() {
	local rc
	unwatch_pid "$1"
	eval "rc=\${watched_rc_$1:-}"
	[ -z "$rc" ] || return "$rc"
	kill "-${2:-TERM}" "$1" 2>/dev/null
	wait "$1"
}
