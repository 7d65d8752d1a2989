#!/bin/bash
# Agents join and leave while their groups scale: a real three-member etcd,
# the Azure emulator as the target (tests/emulators/azure.py, recording
# every request with the client id of the agent whose token it carries),
# GROUPS_N scale sets, each with a replayed signal that rises and falls
# (phase-shifted from set to set), so that groups scale out and in all
# along:
#  - agents a and b start and own every group between them;
#  - c joins: it takes its share (the groups hashing gives it), and only
#    those;
#  - b stops (SIGTERM): it hands its groups over as it leaves;
#  - c is killed (kill -9): a takes its groups when its lease ends.
# All of etcd's history under the prefix is recorded (owner keys, fenced
# actions) and checked at the end against the emulator's request log:
# every write the target received came from the agent that owned its group
# when it arrived (after that agent's fence, before any change of owner),
# in the direction and to the count its fence said; each fence is a
# decision its agent logged; no group ever had two owner keys; no group was without a live owner for more than two TTLs (the
# longest window is printed); and scaling went on between every change.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/integration/etcd-lib.sh"

: "${top_builddir:=.}" "${AUTOSCALED:=$top_builddir/autoscaled}"
[ -x "$AUTOSCALED" ] || skip_all "the daemon is not built"
[ -f "$top_builddir/drivers/.libs/azure-vmss.so" ] || skip_all "the azure-vmss driver is not built"
DRIVERS=$(cd "$top_builddir/drivers/.libs" && pwd)
need_etcd
command -v etcdctl >/dev/null 2>&1 || skip_all "etcdctl is not installed (Debian: etcd-client)"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed"

# The TTL is three times etcd's election timeout (1 s here); each agent
# renews and reads the members and owners every TTL/3.
TTL=3
GROUPS_N=20
PREFIX=/jl
T=$(mktemp -d "${TMPDIR:-/var/tmp}/autoscaled-joinleave.XXXXXX")
cleanup() {
	cluster_kill_all
	stop_etcd 3
	wait 2>/dev/null
	if [ "${tap_failed:-0}" -gt 0 ]; then
		for x in a b c; do
			[ -f "$T/$x/daemon.log" ] || continue
			echo "# agent $x log (last 30 lines):"
			tail -30 "$T/$x/daemon.log" | sed 's/^/# /'
		done
	fi
	rm -rf "$T"
}
trap cleanup EXIT

start_etcd 3 "$T" || { echo "Bail out! etcd did not start"; exit 1; }
etcd_record "$PREFIX/" "$T/events"

sets=""
for i in $(seq 0 $((GROUPS_N - 1))); do sets="$sets${sets:+, }[\"sub1\", \"rg1\", \"s$i\", 1, \"Uniform\"]"; done
emulator_start azure "$T" "{\"sets\": [$sets], \"step_s\": 0.5, \"op_polls\": 2, \"op_s\": 2, \"page_cap\": 50}" ||
	{ echo "Bail out! the Azure emulator did not start"; exit 1; }
URL=$EMU_URL_azure

# The load of set i: between 5 and 45 (1 to 5 instances at 10 each),
# a period of PERIOD seconds, shifted by i/GROUPS_N of it.
PERIOD=20
for i in $(seq 0 $((GROUPS_N - 1))); do
	awk -v k="$i" -v n="$GROUPS_N" -v p="$PERIOD" 'BEGIN {
		print "time,value"
		for (t = 0; t < p; t++) printf "%d,%.1f\n", t, 25 + 20 * sin(6.2831853 * (t / p + k / n))
	}' > "$T/load$i.csv"
done

write_conf() {
	local x=$1 i
	mkdir -p "$T/$x/state"
	{
		cat <<CONF
agent = {
  interval = "1s";
  state_directory = "$T/$x/state";
  admin_socket = "$T/$x/admin.sock";
  driver_directory = "$DRIVERS";
};
cluster = { etcd = ( $ETCD_LIST ); prefix = "$PREFIX"; lease_ttl = "${TTL}s"; name = "agent-$x"; };
groups = (
CONF
		for i in $(seq 0 $((GROUPS_N - 1))); do
			cat <<CONF
  { name = "s$i"; driver = "azure-vmss"; min = 1; max = 6;
    driver_options = { subscription = "sub1"; resource_group = "rg1"; name = "s$i";
                       credentials = "managed_identity"; client_id = "agent-$x";
                       imds_base = "$URL"; arm_base = "$URL"; poll_interval = "200ms"; };
    signals = ( { name = "load"; source = "replay"; type = "average"; target = 10.0;
                  source_options = { file = "$T/load$i.csv"; };
                  poll_interval = "1s"; window = "1s"; } );
    behavior = { scale_out = { policies = ( ); };
                 scale_in = { stabilization = "2s"; policies = ( ); }; }; }$([ "$i" -lt $((GROUPS_N - 1)) ] && echo ,)
CONF
		done
		echo ");"
	} > "$T/$x/autoscaled.conf"
}

now_ms() { date +%s%3N; }
# The fenced actions etcd has recorded so far.
fences() { grep -c "\"key\": \"$PREFIX/actions/" "$T/events"; }
more_fences() { [ "$(fences)" -ge "$1" ]; }
owned_by() { etcd_owned_by "$PREFIX" "$GROUPS_N" "$@"; }
# has_share X...: each agent X holds, and acts on, every group hashing
# gives it (assigned_here in its `autoscalectl cluster`), at least one,
# and every group has an owner key of one of them: the split among them is
# complete, no hand-over is pending.
has_share() {
	local x owners=""
	for x in "$@"; do
		cluster_json "$x" "$T" | python3 -c '
import json, sys
o = json.load(sys.stdin)
mine = [g for g in o["groups"] if g["assigned_here"]]
sys.exit(0 if mine and all(g["owner"] == o["agent"] and g["acting_here"] for g in mine) else 1)' 2>/dev/null ||
			return 1
		owners="$owners agent-$x"
	done
	owned_by $owners
}
# must DESCRIPTION COMMAND...: a check the rest of the run depends on;
# when it fails, the run stops there (the history is not checked).
must() { check "$@" || { echo "Bail out! $1"; exit 1; }; }
# Every later phase waits for this many more fenced actions: scaling goes
# on through each change.
STEP=15

for x in a b c; do write_conf "$x"; done
cluster_agent_start a "$T"
cluster_agent_start b "$T"
must "a and b own every group, each its share" wait_for 30 has_share a b
t_begin=$(now_ms)
echo "# a and b own: $(etcd_owner_counts "$PREFIX" | tr '\n' ' ')"
n=$(fences)
check "the groups scale (fenced actions in etcd)" wait_for 30 more_fences $((n + STEP))

# --- c joins -----------------------------------------------------------
n=$(fences)
t_join=$(now_ms)
cluster_agent_start c "$T"
must "c joins and owns its share; a and b keep theirs" wait_for 30 has_share a b c
echo "# c owns its share $(($(now_ms) - t_join)) ms after it started: $(etcd_owner_counts "$PREFIX" | tr '\n' ' ')"
check "scaling goes on with three agents" wait_for 30 more_fences $((n + STEP))

# --- b leaves (SIGTERM) --------------------------------------------------
n=$(fences)
t_leave=$(now_ms)
stop_pid "$PID_b" TERM
check "b exits with status 0 on SIGTERM" test $? -eq 0
must "a and c own every group, each its share, once b has left" wait_for 30 has_share a c
echo "# b's groups moved $(($(now_ms) - t_leave)) ms after its SIGTERM: $(etcd_owner_counts "$PREFIX" | tr '\n' ' ')"
check "scaling goes on with a and c" wait_for 30 more_fences $((n + STEP))

# --- c crashes (kill -9) -------------------------------------------------
n=$(fences)
t_crash=$(now_ms)
unwatch_pid "$PID_c"
kill -9 "$PID_c"
wait "$PID_c" 2>/dev/null
must "a owns every group after c's lease has ended" wait_for 30 has_share a
echo "# c's groups moved to a $(($(now_ms) - t_crash)) ms after its kill -9"
check "scaling goes on with a alone" wait_for 30 more_fences $((n + STEP))
t_end=$(now_ms)

stop_pid "$PID_a" TERM
check "a exits with status 0 on SIGTERM" test $? -eq 0
emulator_stop azure
etcd_record_stop
check "the emulator wrote its request log" test -s "$T/azure.requests"

python3 "$top_srcdir/tests/integration/cluster_history.py" check --events "$T/events" \
	--requests "$T/azure.requests" --prefix "$PREFIX" --ttl "$TTL" --begin "$t_begin" --end "$t_end" \
	--dead "agent-c=$t_crash" --mark "join=$t_join" --mark "leave=$t_leave" --mark "crash=$t_crash" \
	--moves "join:*:agent-c" --moves "leave:agent-b:*" --moves "crash:agent-c:agent-a" \
	--log "agent-a=$T/a/daemon.log" --log "agent-b=$T/b/daemon.log" --log "agent-c=$T/c/daemon.log" --reads-owned \
	> "$T/history" 2>&1
while IFS= read -r line; do
	case $line in
	"PASS "*) ok "${line#PASS }" ;;
	"FAIL "*) not_ok "${line#FAIL }" ;;
	*) echo "# ${line#\# }" ;;
	esac
done < "$T/history"
check "the history was checked to its end" grep -q "^SUMMARY " "$T/history"
tap_done
