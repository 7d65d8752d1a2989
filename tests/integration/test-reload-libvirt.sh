#!/bin/bash
# A reload that changes the libvirt driver's options while a scale-out runs,
# on libvirt's test hypervisor (test:///default, inside the daemon), by
# SIGHUP and by autoscalectl reload. The slowvirt helper, preloaded into the
# daemon, makes each new domain take two seconds to start and logs every
# domain the hypervisor is asked to define and to start. The hypervisor
# must receive exactly the domains the target asks for, each defined and
# started once, nothing may act on it while the call runs, and the group
# ends at the target, never above it.
. "$top_srcdir/tests/integration/tap.sh"
: "${top_builddir:=.}" "${AUTOSCALED:=$top_builddir/autoscaled}"
CTL="$top_builddir/autoscalectl"
SLOWVIRT="$top_builddir/tests/helpers/.libs/slowvirt.so"

"$AUTOSCALED" --list-drivers 2>/dev/null | grep -q libvirt || skip_all "built without the libvirt driver"
[ -f "$SLOWVIRT" ] || skip_all "the slowvirt helper is not built"
[ -x "$CTL" ] || skip_all "autoscalectl is not built"

T=$(mktemp -d /tmp/autoscaled-reload-libvirt.XXXXXX)
DAEMON_PID=
cleanup() {
	[ -n "$DAEMON_PID" ] && kill -9 "$DAEMON_PID" 2>/dev/null
	wait 2>/dev/null
	if [ "${tap_failed:-0}" -gt 0 ]; then
		echo "# daemon log (last 40 lines):"; tail -40 "$T/daemon.log" | sed "s/^/# /"
		echo "# hypervisor calls:"; sed "s/^/# /" "$T/virt.log"
	fi
	rm -rf "$T"
}
trap cleanup EXIT

ctl() { "$CTL" -s "$T/admin.sock" "$@"; }
wait_for() {
	local n=$(($1 * 5)); shift
	while [ "$n" -gt 0 ]; do
		"$@" && return 0
		kill -0 "$DAEMON_PID" 2>/dev/null || return 1
		sleep 0.2
		n=$((n - 1))
	done
	return 1
}
alive() { kill -0 "$DAEMON_PID" 2>/dev/null; }
log_has() { grep -q "$1" "$T/daemon.log"; }
set_load() { echo "$1" > "$T/load.tmp" && mv "$T/load.tmp" "$T/load"; }
# current N: the group's observed count is N.
current() { ctl --json show web 2>/dev/null | python3 -c 'import json, sys
sys.exit(0 if json.load(sys.stdin)["current"] == int(sys.argv[1]) else 1)' "$1" 2>/dev/null; }
defined() { grep -c '^define ' "$T/virt.log"; }
# The decisions that started a scale-out to N, as the log says them.
actions_to() { grep -cE "scale out [0-9]+ -> $1\$" "$T/daemon.log"; }
now_ms() { date +%s%3N; }
decided_after() {
	ctl --json history web 2>/dev/null | python3 -c 'import datetime, json, sys
v = json.load(sys.stdin)["decisions"]
t = datetime.datetime.strptime(v[-1]["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
sys.exit(0 if int(t.timestamp() * 1000) > int(sys.argv[1]) else 1)' "$1" 2>/dev/null
}

# write_conf SHUTDOWN_TIMEOUT: the option that the reloads change.
write_conf() {
	cat > "$T/autoscaled.conf" <<CONF
agent = {
  interval = "1s";
  state_directory = "$T/state";
  admin_socket = "$T/admin.sock";
};
groups = ( {
  name = "web"; driver = "libvirt"; min = 1; max = 8;
  driver_options = { uri = "test:///default"; template = "test"; shutdown_timeout = "$1"; };
  signals = ( { name = "queue"; source = "exec"; type = "average"; target = 10.0;
                source_options = { command = [ "/bin/cat", "$T/load" ]; };
                poll_interval = "1s"; window = "3s"; aggregation = "last"; staleness = "5s"; } );
  behavior = { scale_out = { policies = ( ); }; initialization_period = "1s"; };
} );
CONF
}

: > "$T/virt.log"
set_load 5
write_conf 30
# A sanitizer build must let the helper come first.
LD_PRELOAD="$SLOWVIRT" SLOWVIRT_LOG="$T/virt.log" SLOWVIRT_DELAY_MS=2000 \
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
	"$AUTOSCALED" -f -c "$T/autoscaled.conf" >> "$T/daemon.log" 2>&1 &
DAEMON_PID=$!
check "the daemon starts and creates the first member" wait_for 20 current 1
check "one domain defined" test "$(defined)" -eq 1

# reload_during_scale_out HOW FROM TO OPTION: raises the load so that the
# group goes from FROM to TO members, reloads by HOW with the option changed
# while the first new domain starts, and checks what the hypervisor did.
reload_during_scale_out() {
	local how=$1 from=$2 to=$3 opt=$4 before errors
	before=$(defined)
	errors=$(grep -c "error:" "$T/daemon.log")
	set_load $((to * 10))
	check "$how: the scale-out to $to starts" wait_for 10 log_has "scale out $from -> $to\$"
	write_conf "$opt"
	if [ "$how" = SIGHUP ]; then
		kill -HUP "$DAEMON_PID"
	else
		ctl reload > /dev/null
	fi
	check "$how: reloaded while the scale-out runs" \
		wait_for 10 log_has "the scale-out started before the reload has ended"
	check "$how: the scale-out completes" wait_for 20 log_has "scaled out from $from to $to"
	check "$how: the group is observed at $to" wait_for 10 current "$to"
	check "$how: and goes on deciding" wait_for 10 decided_after $(($(now_ms) + 2000))
	check "$how: one scale-out decided for the change ($(actions_to "$to"))" test "$(actions_to "$to")" -eq 1
	check "$how: the hypervisor defined $((to - from)) domains ($(($(defined) - before)))" \
		test "$(($(defined) - before))" -eq $((to - from))
	check "$how: no driver error ($(grep "error:" "$T/daemon.log" | tail -1))" \
		test "$(grep -c "error:" "$T/daemon.log")" -eq "$errors"
	check "$how: the group stays at $to" current "$to"
	check "$how: the daemon is alive" alive
}
reload_during_scale_out SIGHUP 1 4 31
reload_during_scale_out "autoscalectl reload" 4 6 32
check "each member was defined once and started once" test -z "$(sort "$T/virt.log" | uniq -d)"
check "each member defined was started" test "$(grep -c '^start ' "$T/virt.log")" -eq "$(defined)"
check "no member beyond the target was ever made" test -z "$(grep -vE '^(define|start) web-[1-6]$' "$T/virt.log")"

kill -TERM "$DAEMON_PID"
wait "$DAEMON_PID"
check "the daemon stops cleanly" test $? -eq 0
DAEMON_PID=
tap_done
