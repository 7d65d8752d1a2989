#!/bin/bash
# Three agents share six groups through a real three-member etcd, on the
# filepool test driver (one pool file per group; each agent logs its own
# calls per group), while etcd members fail:
#  1. the groups are split, each owned by one agent; every agent's metrics,
#     STATUS= and `autoscalectl status` say so; a group only one agent has,
#     pinned to another, has no owner: past two TTLs it is a warning (once)
#     and the orphaned-groups metric;
#  2. one etcd member is killed (kill -9): the agents keep acting, no lease
#     is lost, and a scale-out goes through;
#  3. a second member is killed: etcd has no quorum, every agent's lease
#     runs out, STATUS= and the metrics say so, and no agent sends a single
#     call while the signals ask for a scale-out, though every agent keeps
#     evaluating every group (counted by its not_owner holds);
#  4. the members come back: every agent has a valid lease again (the time
#     is printed) and the held scale-out is made once per group, by one
#     agent, with no call made twice (no burst).
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/integration/etcd-lib.sh"

: "${top_builddir:=.}" "${AUTOSCALED:=$top_builddir/autoscaled}"
POOL_DRIVERS="$top_builddir/tests/helpers/.libs"
AUTOSCALED_DRIVER_DIR=$POOL_DRIVERS
export AUTOSCALED_DRIVER_DIR
[ -x "$AUTOSCALED" ] || skip_all "the daemon is not built"
[ -f "$POOL_DRIVERS/filepool.so" ] || skip_all "the filepool test driver is not built"
need_etcd
command -v etcdctl >/dev/null 2>&1 || skip_all "etcdctl is not installed (Debian: etcd-client)"

# The TTL must exceed etcd's election (1 s here) with room to spare: an
# agent renews every TTL/3 and acts until a tenth of the TTL before it ends.
TTL=3
GROUPS_N=6
AGENTS="a b c"
T=$(mktemp -d "${TMPDIR:-/var/tmp}/autoscaled-outage.XXXXXX")
PIDS=""
cleanup() {
	local p
	for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
	stop_etcd 3
	wait 2>/dev/null
	if [ "${tap_failed:-0}" -gt 0 ]; then
		for x in $AGENTS; do
			[ -f "$T/$x/daemon.log" ] || continue
			echo "# agent $x log (last 30 lines):"
			tail -30 "$T/$x/daemon.log" | sed 's/^/# /'
		done
	fi
	rm -rf "$T"
}
trap cleanup EXIT

start_etcd 3 "$T" || { echo "Bail out! etcd did not start"; exit 1; }

set_load() { for i in $(seq 0 $((GROUPS_N - 1))); do echo "$1" > "$T/load.tmp" && mv "$T/load.tmp" "$T/load.g$i"; done; }

# write_conf AGENT: every agent acts (no dry run) on the same groups.
write_conf() {
	local x=$1 i
	mkdir -p "$T/$x/state"
	eval "MPORT_$x=$(free_port)"
	{
		cat <<CONF
agent = {
  interval = "1s";
  state_directory = "$T/$x/state";
  admin_socket = "$T/$x/admin.sock";
  driver_directory = "$POOL_DRIVERS";
  metrics_listen = "127.0.0.1:$(eval echo "\$MPORT_$x")";
};
cluster = { etcd = ( $ETCD_LIST ); prefix = "/test"; lease_ttl = "${TTL}s"; name = "agent-$x"; };
groups = (
CONF
		for i in $(seq 0 $((GROUPS_N - 1))); do
			[ -f "$T/pool.g$i" ] || echo "next 1" > "$T/pool.g$i"
			: >> "$T/$x/calls.g$i"
			cat <<CONF
  { name = "g$i"; driver = "filepool"; min = 1; max = 8;
    driver_options = { pool = "$T/pool.g$i"; calls = "$T/$x/calls.g$i"; };
    signals = ( { name = "queue"; source = "exec"; type = "average"; target = 10.0;
                  source_options = { command = [ "/bin/cat", "$T/load.g$i" ]; };
                  poll_interval = "1s"; window = "2s"; aggregation = "last"; staleness = "5s"; } );
    behavior = { scale_in = { stabilization = "60s"; }; }; }$([ "$i" -lt $((GROUPS_N - 1)) ] && echo ,)
CONF
		done
		# Only agent a has this group, pinned to agent b, which does not
		# know it: nobody takes it, the misconfiguration an operator must
		# be told of.
		[ "$x" = a ] && cat <<CONF
  , { name = "lonely"; driver = "filepool"; min = 1; max = 2; owner = "agent-b";
    driver_options = { pool = "$T/pool.lonely"; calls = "$T/a/calls.lonely"; }; }
CONF
		echo ");"
	} > "$T/$x/autoscaled.conf"
}

# Each agent's sd_notify messages, one datagram a line, in $T/X/notify.
start_notify() {
	python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a") as f:
    while True:
        f.write(s.recv(4096).decode(errors="replace").replace("\n", " | ") + "\n")
        f.flush()' "$T/$1/notify.sock" "$T/$1/notify" 2>/dev/null &
	PIDS="$PIDS $!"
	wait_for 10 test -S "$T/$1/notify.sock"
}

start_agent() {
	start_notify "$1"
	NOTIFY_SOCKET="$T/$1/notify.sock" "$AUTOSCALED" -f -c "$T/$1/autoscaled.conf" >> "$T/$1/daemon.log" 2>&1 &
	eval "PID_$1=$!"
	PIDS="$PIDS $!"
	watch_pid "$!" "agent $1" "$T/$1/daemon.log"
}

owner() { etcd_get_prefix "/test/owners/$1" | awk -v k="/test/owners/$1" '$1 == k { print $2 }'; }
all_owned() {
	local i
	for i in $(seq 0 $((GROUPS_N - 1))); do [ -n "$(owner g$i)" ] || return 1; done
}
pool_size() { echo $(($(wc -l < "$T/pool.$1") - 1)); }
pools_are() { local i; for i in $(seq 0 $((GROUPS_N - 1))); do [ "$(pool_size "g$i")" -eq "$1" ] || return 1; done; }
# scrape X: agent X's metrics in $T/X/metrics.
scrape() { curl -s -m 2 --noproxy '*' "http://127.0.0.1:$(eval echo "\$MPORT_$1")/metrics" > "$T/$1/metrics"; }
# metric X NAME: the value of the sample NAME (with its labels) of agent X.
metric() { scrape "$1" && awk -v n="$2" '$1 == n { print $2 }' "$T/$1/metrics"; }
every_agent() { local x; for x in $AGENTS; do "$@" "$x" || return 1; done; }
lease_is() { [ "$(metric "$2" autoscaled_cluster_lease_valid)" = "$1" ]; }
valid() { lease_is 1 "$1"; }
lost() { lease_is 0 "$1"; }
members_3() { [ "$(metric "$1" autoscaled_cluster_members)" = 3 ]; }
# STATUS= last sent by agent X contains TEXT.
status_says() { grep 'STATUS=' "$T/$2/notify" | tail -1 | grep -q "$1"; }
status_acting() { status_says "cluster: acting on" "$1"; }
status_lost() { status_says "cluster lease lost" "$1"; }
# Every group is owned by exactly one agent as their metrics say.
owned_once() {
	local i x n
	for i in $(seq 0 $((GROUPS_N - 1))); do
		n=0
		for x in $AGENTS; do
			n=$((n + $(metric "$x" "autoscaled_group_owned{group=\"g$i\"}" || echo 0)))
		done
		[ "$n" -eq 1 ] || return 1
	done
}
# calls_total: every call every agent logged, for every group.
calls_total() { cat "$T"/*/calls.g* | wc -l; }
# not_owner_holds X: the evaluations agent X held as not the owner.
not_owner_holds() {
	scrape "$1" && awk '/^autoscaled_holds_total\{.*reason="not_owner"/ { n += $2 } END { print n + 0 }' "$T/$1/metrics"
}

set_load 10
for x in $AGENTS; do write_conf "$x"; done
for x in $AGENTS; do start_agent "$x"; done

# --- 1. the split ---------------------------------------------------------
split_settled() {
	local o1
	[ "$(etcd_get_prefix /test/members/ | wc -l)" -eq 3 ] && all_owned || return 1
	o1=$(etcd_get_prefix /test/owners/)
	sleep 1
	[ "$(etcd_get_prefix /test/owners/)" = "$o1" ] && all_owned
}
check "every group has one owner" wait_for 30 split_settled
check "every agent's metrics: a valid lease, three members" wait_for 10 every_agent valid &&
	check "every agent counts three members" wait_for 10 every_agent members_3
check "autoscaled_group_owned is 1 on exactly one agent for every group" wait_for 30 owned_once
check "STATUS= of every agent says how many groups it acts on" wait_for 10 every_agent status_acting
check "no group every agent has is orphaned" test "$(metric b autoscaled_cluster_orphaned_groups)" = 0
orphaned_on_a() { [ "$(metric a autoscaled_cluster_orphaned_groups)" = 1 ]; }
check "the group nobody takes is orphaned after two TTLs (metric on a)" wait_for 20 orphaned_on_a
check "a warns of it in its log, once" test "$(grep -c "group 'lonely' has had no owner" "$T/a/daemon.log")" -eq 1
# autoscalectl status on any agent: every group with its owner as etcd
# has it, the orphan marked.
CTL="$top_builddir/autoscalectl"
status_owners() {
	local i o
	"$CTL" -s "$T/$1/admin.sock" status > "$T/$1/status.txt" 2>&1 || return 1
	for i in $(seq 0 $((GROUPS_N - 1))); do
		o=$(owner "g$i")
		awk -v g="g$i" -v o="$o" '$1 == g && index($0, " " o) { f = 1 } END { exit !f }' "$T/$1/status.txt" || return 1
	done
}
check "autoscalectl status on c shows every group's owner" wait_for 10 status_owners c
check "autoscalectl status on a marks the orphan" \
	eval 'wait_for 10 status_owners a && grep -q "^lonely .*(none) ORPHANED" "$T/a/status.txt"'

# --- 2. one etcd member down: no interruption -------------------------------
# A follower: the leader's loss costs an election (about a second here),
# which a lease of a few seconds may not outlast (docs/cluster.md).
LEADER=$(etcd_leader)
check "etcd has a leader" test -n "$LEADER"
SECOND=${LEADER:-0}
FIRST=$(( (SECOND + 1) % 3 ))
echo "# killing etcd member m$FIRST (a follower), then m$SECOND (the leader)"
kill_etcd_member "$FIRST"
set_load 30
check "with one etcd member killed the agents scale every group out to 3" wait_for 30 pools_are 3
no_loss=1
for x in $AGENTS; do
	[ "$(metric "$x" autoscaled_cluster_leases_lost_total)" = 0 ] || no_loss=0
	grep -q "lost its lease" "$T/$x/daemon.log" && no_loss=0
done
check "no agent lost its lease while two members of three answered" test "$no_loss" -eq 1

# --- 3. two members down: every agent holds --------------------------------
# Each agent observes and evaluates the groups it manages (observe =
# "owned"); between them, all of them.
own_total=0
for x in $AGENTS; do
	eval "own_$x=$(metric "$x" autoscaled_cluster_owned_groups)"
	eval "own_total=\$((own_total + own_$x))"
done
check "the agents manage every group between them ($own_total of $GROUPS_N)" test "$own_total" -eq "$GROUPS_N"
kill_etcd_member "$SECOND"
t_down=$(date +%s%3N)
check "without quorum every agent's lease runs out (metrics)" wait_for 20 every_agent lost
echo "# every agent held $(( $(date +%s%3N) - t_down )) ms after etcd lost its quorum (TTL ${TTL} s)"
check "STATUS= of every agent says the cluster lease is lost" wait_for 10 every_agent status_lost
calls_before=$(calls_total)
for x in $AGENTS; do eval "holds_$x=$(not_owner_holds "$x")"; done
set_load 50
# Three intervals of evaluation on every agent for each group it manages,
# each a hold: the signals ask for 5, nobody may act.
held_enough() {
	local b n
	eval "b=\$holds_$1 n=\$own_$1"
	[ "$(not_owner_holds "$1")" -ge $((b + 3 * n)) ]
}
check "every agent keeps evaluating the groups it manages, and holds" wait_for 30 every_agent held_enough
check "no agent sent a call while etcd had no quorum" test "$(calls_total)" -eq "$calls_before"
check "every pool is still 3" pools_are 3
check "the renewal failures are counted" test "$(metric a autoscaled_cluster_lease_renewal_failures_total)" -gt 0

# --- 4. etcd back: resume within a TTL, without a burst --------------------
check "etcd member m$FIRST comes back (quorum)" restart_etcd_member "$FIRST"
t_back=$(date +%s%3N)
check "every agent has a valid lease again" wait_since 20 every_agent valid
t_valid=$(date +%s%3N)
# From the last look that missed (tap.sh, wait_since): the looks, a scrape
# of each agent, take time of their own on a loaded machine.
t_miss=$((WAIT_MISS_MS > t_back ? WAIT_MISS_MS : t_back))
echo "# every agent's lease valid again $((t_miss - t_back)) to $((t_valid - t_back)) ms after etcd had its quorum back (TTL ${TTL} s)"
check "within one TTL and one renewal period of quorum" test $((t_miss - t_back)) -le $((TTL * 1000 + TTL * 1000 / 3 + 500))
check "etcd member m$SECOND comes back" restart_etcd_member "$SECOND"
check "the held scale-out is made: every pool is 5" wait_for 30 pools_are 5
echo "# every pool at 5 $(( $(date +%s%3N) - t_back )) ms after quorum"
check "STATUS= of every agent says it acts again" wait_for 10 every_agent status_acting
check "autoscaled_group_owned is 1 on exactly one agent for every group" wait_for 30 owned_once
once=1
for i in $(seq 0 $((GROUPS_N - 1))); do
	# Every call for the group since the outage, from any agent: one
	# set_capacity from 3, and no transition made twice.
	n=$(cat "$T"/*/calls.g$i | awk '$2 == "set_capacity" && $3 == 3 { n++ } END { print n + 0 }')
	[ "$n" -eq 1 ] || once=0
	dup=$(cat "$T"/*/calls.g$i | awk '{ print $2, $3, $4 }' | sort | uniq -d)
	[ -z "$dup" ] || once=0
done
check "each group's scale-out after the outage was made once, by one agent (no burst)" test "$once" -eq 1
check "every pool stays 5 (nothing more was created)" pools_are 5

check "the orphan's warning was logged once for its whole episode" \
	test "$(grep -c "group 'lonely' has had no owner" "$T/a/daemon.log")" -eq 1

for x in $AGENTS; do eval "stop_pid \$PID_$x TERM"; done
check "stopped agents revoke their leases: no member key is left" \
	test "$(etcd_get_prefix /test/members/ | wc -l)" -eq 0
tap_done
