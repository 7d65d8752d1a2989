# Shared helpers of the source integration tests (TAP output, servers
# started on loopback and always stopped, the source-probe harness).
# Sourced by tests/integration/sources-*.sh.

# TAP output (ok, not_ok, skip_all, tap_done), waiting and watching
# (wait_for, watch_pid, stop_pid) come from tap.sh.
. "${top_srcdir:?}/tests/integration/tap.sh"

PROBE="${top_builddir:?}/tests/helpers/source-probe"
FIXTURE="${top_srcdir:?}/tests/integration/fixture-server.py"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/autoscaled-test.XXXXXX")
PIDS=""

cleanup() {
	for p in $PIDS; do
		kill "$p" 2>/dev/null
	done
	for p in $PIDS; do
		wait "$p" 2>/dev/null
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

need() {
	for b in "$@"; do
		command -v "$b" >/dev/null 2>&1 || skip_all "$b is not installed"
	done
}

# bg CMD...: runs CMD in the background, stopped at exit.
bg() {
	"$@" &
	PIDS="$PIDS $!"
}

# server NAME LOG CMD...: bg for a server the test needs: watched (see
# watch_pid), its output in LOG; SERVER_PID is its pid.
server() {
	local name=$1 log=$2
	shift 2
	"$@" >>"$log" 2>&1 &
	SERVER_PID=$!
	PIDS="$PIDS $SERVER_PID"
	watch_pid "$SERVER_PID" "$name" "$log"
}

# wait_file PATH [SECONDS]: waits (10 s by default) for PATH to exist and
# not be empty; fails at once when a watched server is gone.
wait_file() {
	wait_for "${2:-10}" test -s "$1"
}

# wait_socket PATH [SECONDS]: the same for a Unix socket.
wait_socket() {
	wait_for "${2:-10}" test -S "$1"
}

# fixture VAR MODE [DIR [CERT KEY]]: starts fixture-server.py and sets VAR
# to its port.
fixture() {
	pf="$TMP/port.$1"
	if [ "$2" = http ]; then
		server "fixture $1" "$TMP/fixture.$1.log" python3 "$FIXTURE" http "$3" "$pf"
	elif [ "$2" = https ]; then
		server "fixture $1" "$TMP/fixture.$1.log" python3 "$FIXTURE" https "$3" "$pf" "$4" "$5"
	else
		server "fixture $1" "$TMP/fixture.$1.log" python3 "$FIXTURE" "$2" "$pf"
	fi
	wait_file "$pf" 30 || { echo "Bail out! fixture $2 did not start"; exit 1; }
	eval "$1=\$(cat \"\$pf\")"
}

# free_port is tap.sh's.

# start_haproxy: a real HAProxy in front of two HTTP backends serving
# $TMP/www: frontend "web" on port $W balancing over backend "app" (servers
# b1, b2), the stats page on http://127.0.0.1:$S/stats and the stats socket
# $SOCK. Returns once both backends are UP (else the first requests get
# 503); bails out after 10 s.
start_haproxy() {
	mkdir -p "$TMP/www"
	echo hello >"$TMP/www/index.html"
	fixture B1 http "$TMP/www"
	fixture B2 http "$TMP/www"
	W=$(free_port)
	S=$(free_port)
	SOCK="$TMP/haproxy.sock"
	cat >"$TMP/haproxy.cfg" <<CFG
global
	stats socket $SOCK mode 600 level admin
	stats timeout 5s
defaults
	mode http
	timeout connect 2s
	timeout client 5s
	timeout server 5s
frontend web
	bind 127.0.0.1:$W
	default_backend app
backend app
	balance roundrobin
	option httpchk GET /
	server b1 127.0.0.1:$B1 check inter 300ms
	server b2 127.0.0.1:$B2 check inter 300ms
listen stats
	bind 127.0.0.1:$S
	stats enable
	stats uri /stats
CFG
	server haproxy "$TMP/haproxy.log" haproxy -f "$TMP/haproxy.cfg" -db
	HAPROXY_PID=$SERVER_PID
	wait_for 30 haproxy_up || { echo "Bail out! haproxy backends not UP"; sed 's/^/# /' "$TMP/haproxy.log"; exit 1; }
}

haproxy_up() {
	[ "$(curl -s "http://127.0.0.1:$S/stats;csv" | grep -c '^app,b[12],.*,UP,')" = 2 ]
}

# probe ARGS...: runs the harness; its lines go to $TMP/out, and are echoed
# as TAP comments for the log; its exit status is $probe_rc. A status the
# harness never gives by itself (a crash, a sanitizer's report, a hang
# past PROBE_TIMEOUT seconds) is a failed test point of its own, whatever
# the caller looks at next.
probe() {
	timeout -k 5 "${PROBE_TIMEOUT:-120}" "$PROBE" "$@" >"$TMP/out" 2>&1
	probe_rc=$?
	sed 's/^/# /' "$TMP/out"
	case $probe_rc in
	0 | 1 | 2) ;;
	124 | 137) not_ok "source-probe did not finish within ${PROBE_TIMEOUT:-120} s: $*" ;;
	*) not_ok "source-probe exited with status $probe_rc: $*" ;;
	esac
	return 0
}

# probe_status_is RC: the last probe exited with RC (0: every reading
# valid, 1: some invalid or cancelled, 2: a snippet refused).
probe_status_is() {
	[ "$probe_rc" = "$1" ] && return 0
	echo "# source-probe exited with status $probe_rc, not $1"
	return 1
}

# expect_ok DESC VALUE ARGS...: the reading is valid and equals VALUE.
expect_ok() {
	desc=$1 want=$2
	shift 2
	probe "$@"
	if [ "$probe_rc" = 0 ] && awk -v w="$want" '$2 == "ok" && $3 + 0 == w + 0 { f = 1 } END { exit !f }' "$TMP/out"; then
		ok "$desc"
	else
		not_ok "$desc (wanted $want)"
	fi
}

# expect_invalid DESC ERRNO PATTERN ARGS...: the reading is invalid with
# ERRNO and a reason matching the grep pattern.
expect_invalid() {
	desc=$1 errno=$2 pat=$3
	shift 3
	probe "$@"
	if [ "$probe_rc" = 1 ] && grep -q " invalid $errno [0-9]* .*$pat" "$TMP/out"; then
		ok "$desc"
	else
		not_ok "$desc (wanted $errno, '$pat')"
	fi
}

# field N: field N of the first line of the last probe's output.
field() {
	awk -v n="$1" 'NR == 1 { print $n }' "$TMP/out"
}

# expect_cancel DESC ARGS...: freeing the sources mid-poll (-k) reports
# them cancelled, with no reading and a clean exit.
expect_cancel() {
	desc=$1
	shift
	probe -k 300 "$@"
	if [ "$probe_rc" = 1 ] && grep -q " cancelled$" "$TMP/out" && ! grep -q " ok \| invalid " "$TMP/out"; then
		ok "$desc"
	else
		not_ok "$desc"
	fi
}
