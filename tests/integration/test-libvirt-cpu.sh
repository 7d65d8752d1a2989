#!/bin/bash
# libvirt_cpu end to end: the libvirt driver declares it, reads each
# domain's CPU time with every observation of a group whose signal names
# it, and the daemon averages the members' utilisation into the signal. On
# libvirt's test hypervisor (test:///default, inside the daemon), with the
# slowvirt helper preloaded to give every active domain one vCPU busy 90 %
# of the time, which the test hypervisor cannot report by itself: at a
# target of 50 % the group scales out on that reading.
. "$top_srcdir/tests/integration/tap.sh"
: "${top_builddir:=.}" "${AUTOSCALED:=$top_builddir/autoscaled}"
CTL="$top_builddir/autoscalectl"
SLOWVIRT="$top_builddir/tests/helpers/.libs/slowvirt.so"

"$AUTOSCALED" --list-drivers 2>/dev/null | grep -q libvirt || skip_all "built without the libvirt driver"
[ -f "$SLOWVIRT" ] || skip_all "the slowvirt helper is not built"
[ -x "$CTL" ] || skip_all "autoscalectl is not built"

T=$(mktemp -d /tmp/autoscaled-libvirt-cpu.XXXXXX)
DAEMON_PID=
cleanup() {
	[ -n "$DAEMON_PID" ] && kill -9 "$DAEMON_PID" 2>/dev/null
	wait 2>/dev/null
	if [ "${tap_failed:-0}" -gt 0 ]; then
		echo "# daemon log (last 40 lines):"; tail -40 "$T/daemon.log" | sed "s/^/# /"
	fi
	rm -rf "$T"
}
trap cleanup EXIT

ctl() { "$CTL" -s "$T/admin.sock" "$@"; }
daemon_answers() { test -S "$T/admin.sock" && ctl status >/dev/null 2>&1; }
# cpu_is PYTHON: the last decision's signal "cpu" as `s`, and the record
# as `r`, satisfy PYTHON.
cpu_is() {
	ctl --json show web 2>/dev/null | python3 -c 'import json,sys
d=json.load(sys.stdin); r=d.get("last_decision") or {}
s=[x for x in r.get("signals", []) if x["name"]=="cpu"][0]
'"$1" 2>/dev/null
}
current_above() { ctl --json show web 2>/dev/null | python3 -c 'import json, sys
sys.exit(0 if json.load(sys.stdin)["current"] > int(sys.argv[1]) else 1)' "$1" 2>/dev/null; }

cat > "$T/autoscaled.conf" <<CONF
agent = {
  interval = "1s";
  state_directory = "$T/state";
  admin_socket = "$T/admin.sock";
};
groups = ( {
  name = "web"; driver = "libvirt"; min = 1; max = 3;
  driver_options = { uri = "test:///default"; template = "test"; };
  signals = ( { name = "cpu"; source = "libvirt_cpu"; type = "utilization"; target = 50.0;
                window = "3s"; aggregation = "last"; staleness = "5s"; } );
  behavior = { scale_out = { policies = ( ); }; initialization_period = "0s"; };
} );
CONF

out=$("$AUTOSCALED" -n -c "$T/autoscaled.conf" 2>&1)
check "-n accepts libvirt_cpu in a libvirt group ($out)" test $? -eq 0

# A sanitizer build must let the helper come first.
LD_PRELOAD="$SLOWVIRT" SLOWVIRT_CPU_PERCENT=90 \
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
	"$AUTOSCALED" -f -c "$T/autoscaled.conf" >> "$T/daemon.log" 2>&1 &
DAEMON_PID=$!
watch_pid "$DAEMON_PID" autoscaled "$T/daemon.log"
check "the daemon starts" wait_for 30 daemon_answers
check "the members' CPU reaches the signal: about 90 %" wait_for 20 cpu_is '
assert s["valid"] and 80 <= s["value"] <= 100, s'
check "and the group scales out on it" wait_for 20 current_above 1
check "no error was logged ($(grep -c 'error:' "$T/daemon.log"))" test "$(grep -c 'error:' "$T/daemon.log")" -eq 0
stop_pid "$DAEMON_PID" TERM 2>/dev/null
check "the daemon stops cleanly" test $? -eq 0
DAEMON_PID=
tap_done
