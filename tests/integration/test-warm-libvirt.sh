#!/bin/bash
# A libvirt group's warm pool on libvirt's test hypervisor (test:///default,
# inside the daemon). The slowvirt helper, preloaded into the daemon, logs
# every domain the hypervisor is asked to define, start, suspend and
# resume. The pool fills (defined, started, suspended; not counted as
# members), a scale-out is served from it (resumed, not defined), it is
# refilled after the pacing interval with new names, and a driver restart
# (a reload that changes the pool reopens the driver) finds the warm
# members again by their tags: none is made again, none is counted as a
# member, and the next scale-out takes one of them. Then a reload bounds the
# hosts (cpu_overcommit 1): the decision goes only as far as the hosts take,
# says so in its record, and the driver is never asked for more.
. "$top_srcdir/tests/integration/tap.sh"
: "${top_builddir:=.}" "${AUTOSCALED:=$top_builddir/autoscaled}"
CTL="$top_builddir/autoscalectl"
SLOWVIRT="$top_builddir/tests/helpers/.libs/slowvirt.so"

"$AUTOSCALED" --list-drivers 2>/dev/null | grep -q libvirt || skip_all "built without the libvirt driver"
[ -f "$SLOWVIRT" ] || skip_all "the slowvirt helper is not built"
[ -x "$CTL" ] || skip_all "autoscalectl is not built"
command -v curl > /dev/null || skip_all "needs curl"

T=$(mktemp -d /tmp/autoscaled-warm-libvirt.XXXXXX)
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
log_count() { grep -c "$1" "$T/daemon.log"; }
set_load() { echo "$1" > "$T/load.tmp" && mv "$T/load.tmp" "$T/load"; }
current() { ctl --json show web 2>/dev/null | python3 -c 'import json, sys
sys.exit(0 if json.load(sys.stdin)["current"] == int(sys.argv[1]) else 1)' "$1" 2>/dev/null; }
calls() { grep -c "^$1 " "$T/virt.log"; }
# nth REGEX N: the line number of the Nth hypervisor call matching REGEX,
# or a number past the end when there are fewer.
nth() { local n; n=$(grep -nE "$1" "$T/virt.log" | sed -n "$2p" | cut -d: -f1); echo "${n:-999999}"; }
# started_then_suspended: some domains were suspended, each after its start.
started_then_suspended() {
	local dom
	[ "$(calls suspend)" -ge 2 ] || return 1
	for dom in $(sed -n "s/^suspend //p" "$T/virt.log"); do
		[ "$(nth "^start $dom\$" 1)" -lt "$(nth "^suspend $dom\$" 1)" ] || return 1
	done
}
# warm STATE N: the metric says N warm members in STATE.
warm() { curl -s "http://127.0.0.1:$MPORT/metrics" | grep -qx \
	"autoscaled_group_warm_instances{group=\"web\",driver=\"libvirt\",state=\"$1\"} $2"; }

MPORT=$(free_port)
# write_conf REFILL [OPTIONS]: the pool's pacing, which the reload changes,
# and more driver options.
write_conf() {
	cat > "$T/autoscaled.conf" <<CONF
agent = {
  interval = "1s";
  state_directory = "$T/state";
  admin_socket = "$T/admin.sock";
  metrics_listen = "127.0.0.1:$MPORT";
};
groups = ( {
  name = "web"; driver = "libvirt"; min = 1; max = 8;
  driver_options = { uri = "test:///default"; template = "test"; shutdown_timeout = "5s"; $2 };
  warm_pool = { size = 2; state = "paused"; warmup = "0"; refill = "$1"; };
  signals = ( { name = "queue"; source = "exec"; type = "average"; target = 10.0;
                source_options = { command = [ "/bin/cat", "$T/load" ]; };
                poll_interval = "1s"; window = "3s"; aggregation = "last"; staleness = "5s"; } );
  behavior = { scale_out = { policies = ( ); }; initialization_period = "1s"; };
} );
CONF
}

: > "$T/virt.log"
set_load 5
write_conf 2s
check "the configuration with a warm pool passes the check" "$AUTOSCALED" -n -c "$T/autoscaled.conf"
LD_PRELOAD="$SLOWVIRT" SLOWVIRT_LOG="$T/virt.log" \
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
	"$AUTOSCALED" -f -c "$T/autoscaled.conf" >> "$T/daemon.log" 2>&1 &
DAEMON_PID=$!
check "the daemon starts with one member" wait_for 20 current 1
check "the pool fills with two paused warm members" wait_for 20 warm paused 2
check "none of them is a member" current 1
check "each suspended domain was started first" started_then_suspended
D0=$(calls define)
check "three domains defined in all ($D0): a member and two warm" test "$D0" -eq 3

# ------------------------------------------- a scale-out from the pool
# (The first member may have come from the pool too, warming up or paused.)
R0=$(calls resume)
T0=$(log_count "from the warm pool (paused)")
set_load 30
check "the group scales out to 3" wait_for 20 current 3
check "the two warm members were resumed" test "$(calls resume)" -eq $((R0 + 2))
check "and taken from the pool (log)" test "$(log_count "from the warm pool (paused)")" -eq $((T0 + 2))
check "no domain was defined for the scale-out (the next define follows both resumes)" \
	test "$(nth '^define ' $((D0 + 1)))" -gt "$(nth '^resume ' $((R0 + 2)))"

# ------------------------------------------------- refill afterwards
check "the pool is refilled to two paused members" wait_for 20 warm paused 2
check "with two new domains ($(calls define) defined)" test "$(calls define)" -eq $((D0 + 2))
check "the group stays at 3" current 3

# --------------------------------------- a driver restart in the middle
before=$(log_count "warm pool: 0 booting, 2 paused")
write_conf 3s
kill -HUP "$DAEMON_PID"
check "the reopened driver finds the two warm members by their tags" \
	wait_for 20 eval '[ "$(log_count "warm pool: 0 booting, 2 paused")" -gt "$before" ]'
check "and makes none again" test "$(calls define)" -eq $((D0 + 2))
check "nor counts them as members" current 3
check "the metric still says two paused" warm paused 2
set_load 40
check "the next scale-out reaches 4" wait_for 20 current 4
check "served by resuming a warm member found after the restart, before any new define" \
	test "$(nth '^define ' $((D0 + 3)))" -gt "$(nth '^resume ' $((R0 + 3)))"
check "each domain was defined once" test -z "$(grep '^define ' "$T/virt.log" | sort | uniq -d)"
check "each domain was resumed at most once" test -z "$(grep '^resume ' "$T/virt.log" | sort | uniq -d)"

# ------------------------------------------------------- host capacity
# test:///default has 16 CPUs; its domain "test" (the template) and each
# clone have 2 vCPUs. With cpu_overcommit 1 the 4 members, the 2 paused
# warm members and "test" commit 14: one clone fits, and the two paused
# members hold theirs already, so the group can grow by 3, to 7 of its
# max 8, and no further.
last() { ctl --json history web 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)["decisions"][-1]
want = sys.argv[1:]
got = [str(d["current"]), str(d["desired"]), d["hold"], str(d["inputs"]["host_room"])]
sys.exit(0 if got == want else 1)' "$@"; }
check "the pool is refilled to two paused members again" wait_for 20 warm paused 2
D1=$(calls define) R1=$(calls resume)
write_conf 3s "cpu_overcommit = 1;"
kill -HUP "$DAEMON_PID"
check "the reloaded group measures room for 3 more" wait_for 20 last 4 4 signals_say_hold 3
set_load 100
check "asked for 8, the group grows to 7, what the hosts take" wait_for 20 current 7
check "the record says the hosts capped it, with no room left" wait_for 20 last 7 7 host_capacity 0
check "and its sentence says so" eval 'ctl explain web | grep -q "capped by hosts, not by max: they can take 0 more of the 1 asked for"'
check "the metric says no room" eval 'curl -s "http://127.0.0.1:$MPORT/metrics" | grep -qx "autoscaled_group_host_room{group=\"web\",driver=\"libvirt\"} 0"'
check "the holds are counted" eval 'curl -s "http://127.0.0.1:$MPORT/metrics" | grep -q "^autoscaled_holds_total{group=\"web\",reason=\"host_capacity\"} [1-9]"'
check "the driver never refused a scale-out for room" eval '! log_has "capped by hosts, not by max: [0-9]* of"'
check "the hypervisor made what fits: two resumed, one defined, no refill" \
	test "$(calls resume)" -eq $((R1 + 2)) -a "$(calls define)" -eq $((D1 + 1))
scale_outs() { ctl --json history web | python3 -c '
import json, sys
print(sum(1 for d in json.load(sys.stdin)["decisions"] if d["action"] == "scale_out" and d["current"] == 4))'; }
check "one scale-out decision from 4, to 7 ($(scale_outs))" test "$(scale_outs)" -eq 1
check "no error in the daemon's log ($(grep -i "error" "$T/daemon.log" | tail -1))" \
	test "$(grep -ci "error" "$T/daemon.log")" -eq 0
check "the daemon is alive" alive

kill -TERM "$DAEMON_PID"
wait "$DAEMON_PID"
check "the daemon stops cleanly" test $? -eq 0
DAEMON_PID=
tap_done
