# Shared helpers of the source integration tests (TAP output, servers
# started on loopback and always stopped, the source-probe harness).
# Sourced by tests/integration/sources-*.sh.

PROBE="${top_builddir:?}/tests/integration/source-probe"
FIXTURE="${top_srcdir:?}/tests/integration/fixture-server.py"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/autoscaled-test.XXXXXX")
PIDS=""
tap_n=0
tap_fail=0

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

skip_all() {
	echo "1..0 # SKIP $*"
	exit 0
}

need() {
	for b in "$@"; do
		command -v "$b" >/dev/null 2>&1 || skip_all "$b is not installed"
	done
}

ok() {
	tap_n=$((tap_n + 1))
	echo "ok $tap_n - $*"
}

not_ok() {
	tap_n=$((tap_n + 1))
	tap_fail=$((tap_fail + 1))
	echo "not ok $tap_n - $*"
}

finish() {
	echo "1..$tap_n"
	[ "$tap_fail" -eq 0 ]
	exit $?
}

# bg CMD...: runs CMD in the background, stopped at exit.
bg() {
	"$@" &
	PIDS="$PIDS $!"
}

# wait_file PATH: up to 10 s for PATH to exist.
wait_file() {
	i=0
	while [ ! -s "$1" ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -s "$1" ]
}

# fixture VAR MODE [DIR [CERT KEY]]: starts fixture-server.py and sets VAR
# to its port.
fixture() {
	pf="$TMP/port.$1"
	if [ "$2" = http ]; then
		bg python3 "$FIXTURE" http "$3" "$pf"
	elif [ "$2" = https ]; then
		bg python3 "$FIXTURE" https "$3" "$pf" "$4" "$5"
	else
		bg python3 "$FIXTURE" "$2" "$pf"
	fi
	wait_file "$pf" || { echo "fixture $2 did not start" >&2; exit 1; }
	eval "$1=\$(cat \"\$pf\")"
}

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# probe ARGS...: runs the harness; its lines go to $TMP/out, and are echoed
# as TAP comments for the log.
probe() {
	"$PROBE" "$@" >"$TMP/out" 2>&1
	probe_rc=$?
	sed 's/^/# /' "$TMP/out"
	return 0
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
