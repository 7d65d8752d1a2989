#!/bin/bash
# Two agents share six groups through a real three-member etcd, on the
# filepool test driver (each group's pool is a file both agents observe;
# each agent logs its own calls per group):
#  1. the groups are split between the agents, each owned by exactly one,
#     and only the owner changes a group;
#  2. agent A is stopped (SIGSTOP) for three times the lease TTL: B takes
#     A's groups over once A's lease expires (the failover time is
#     printed); after SIGCONT A sends not a single call for the groups it
#     lost, though its signals ask for a scale-out, until it owns them
#     again with a new fencing token; every call it makes then is in etcd's
#     action record with that token, and no transition is made twice.
# B runs its groups in dry run, so that whatever scale-out happens is A's:
# a stale A that acted would show in the pools and A's call logs.
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

TTL=2
GROUPS_N=6
T=$(mktemp -d "${TMPDIR:-/var/tmp}/autoscaled-cluster.XXXXXX")
PID_A= PID_B=
cleanup() {
	[ -n "$PID_A" ] && kill -CONT "$PID_A" 2>/dev/null && kill -9 "$PID_A" 2>/dev/null
	[ -n "$PID_B" ] && kill -9 "$PID_B" 2>/dev/null
	stop_etcd 3
	wait 2>/dev/null
	if [ "${tap_failed:-0}" -gt 0 ]; then
		for x in a b; do
			[ -f "$T/$x/daemon.log" ] || continue
			echo "# agent $x log (last 40 lines):"
			tail -40 "$T/$x/daemon.log" | sed 's/^/# /'
		done
	fi
	rm -rf "$T"
}
trap cleanup EXIT

start_etcd 3 "$T" || { echo "Bail out! etcd did not start"; exit 1; }

set_load() { for i in $(seq 0 $((GROUPS_N - 1))); do echo "$1" > "$T/load.tmp" && mv "$T/load.tmp" "$T/load.g$i"; done; }

# write_conf AGENT GROUP-EXTRA
write_conf() {
	local x=$1 i
	mkdir -p "$T/$x/state"
	{
		cat <<CONF
agent = {
  interval = "1s";
  state_directory = "$T/$x/state";
  admin_socket = "$T/$x/admin.sock";
  driver_directory = "$POOL_DRIVERS";
};
cluster = { etcd = ( $ETCD_LIST ); prefix = "/test"; lease_ttl = "${TTL}s"; name = "agent-$x"; };
groups = (
CONF
		for i in $(seq 0 $((GROUPS_N - 1))); do
			[ -f "$T/pool.g$i" ] || echo "next 1" > "$T/pool.g$i"
			: >> "$T/$x/calls.g$i"
			cat <<CONF
  { name = "g$i"; driver = "filepool"; min = 1; max = 8; $2
    driver_options = { pool = "$T/pool.g$i"; calls = "$T/$x/calls.g$i"; };
    signals = ( { name = "queue"; source = "exec"; type = "average"; target = 10.0;
                  source_options = { command = [ "/bin/cat", "$T/load.g$i" ]; };
                  poll_interval = "1s"; window = "2s"; aggregation = "last"; staleness = "5s"; } );
    behavior = { scale_in = { stabilization = "60s"; }; }; }$([ "$i" -lt $((GROUPS_N - 1)) ] && echo ,)
CONF
		done
		echo ");"
	} > "$T/$x/autoscaled.conf"
}

start_agent() {
	"$AUTOSCALED" -f -c "$T/$1/autoscaled.conf" >> "$T/$1/daemon.log" 2>&1 &
	eval "PID_$(echo "$1" | tr a-z A-Z)=$!"
	watch_pid "$!" "agent $1" "$T/$1/daemon.log"
}

# owner GROUP: the agent named in the group's owner key, or nothing.
owner() { etcd_get_prefix "/test/owners/$1" | awk -v k="/test/owners/$1" '$1 == k { print $2 }'; }
# create_revision of the owner key of GROUP.
owner_rev() {
	ETCDCTL_API=3 etcdctl --endpoints="$ETCD_ENDPOINTS" -w json get "/test/owners/$1" 2>/dev/null |
		python3 -c 'import json,sys; k=json.load(sys.stdin).get("kvs",[]); print(k[0]["create_revision"] if k else 0)'
}
all_owned() {
	local i
	for i in $(seq 0 $((GROUPS_N - 1))); do [ -n "$(owner g$i)" ] || return 1; done
}
pool_size() { echo $(($(wc -l < "$T/pool.$1") - 1)); }
pools_are() { local g; for g in $2; do [ "$(pool_size "$g")" -eq "$1" ] || return 1; done; }
owned_by() { local g; for g in $2; do [ "$(owner "$g")" = "$1" ] || return 1; done; }
lines() { wc -l < "$1"; }

set_load 10
write_conf a ""
write_conf b "dry_run = true;"
start_agent a
start_agent b

# --- 1. the split ---------------------------------------------------------
# A starts first and takes every group; B's share moves once B is a
# member. The split is settled when both are members, every group has an
# owner, and the owners are the same a renewal period (TTL/3) later.
owners_now() { etcd_get_prefix /test/owners/ | awk '{ print $1, $2 }'; }
split_settled() {
	local o1
	[ "$(etcd_get_prefix /test/members/ | wc -l)" -eq 2 ] && all_owned || return 1
	o1=$(owners_now)
	echo "$o1" | grep -q agent-b || return 1
	sleep 1
	[ "$(owners_now)" = "$o1" ] && all_owned
}
check "every group has one owner, split between the agents" wait_for 30 split_settled
A_GROUPS="" B_GROUPS=""
for i in $(seq 0 $((GROUPS_N - 1))); do
	case $(owner "g$i") in
	agent-a) A_GROUPS="$A_GROUPS g$i" ;;
	agent-b) B_GROUPS="$B_GROUPS g$i" ;;
	esac
done
echo "# agent-a owns:$A_GROUPS; agent-b owns:$B_GROUPS"
# A may have set B's groups to their minimum before B joined: that was
# its right then. From here on only owners act.
for g in $B_GROUPS; do eval "split_$g=$(wc -l < "$T/a/calls.$g")"; done
check "both agents own groups (hashing splits them)" test -n "$A_GROUPS" -a -n "$B_GROUPS"
check "no owner key is written twice: one per group" \
	test "$(etcd_get_prefix /test/owners/ | wc -l)" -eq "$GROUPS_N"
# autoscalectl cluster on either agent: both members, and every group's
# owner as etcd has it (the agents read the owner keys every TTL/3).
CTL="$top_builddir/autoscalectl"
ctl_agrees() {
	local x=$1 g
	"$CTL" -s "$T/$x/admin.sock" --json cluster > "$T/cluster.$x.json" 2>/dev/null || return 1
	for g in $(seq 0 $((GROUPS_N - 1))); do
		python3 - "$T/cluster.$x.json" "g$g" "$(owner "g$g")" "agent-$x" <<'PY' || return 1
import json, sys
o = json.load(open(sys.argv[1]))
g = [e for e in o["groups"] if e["name"] == sys.argv[2]][0]
names = [m["name"] for m in o["members"]]
ok = (o["agent"] == sys.argv[4] and o["lease"]["valid"] and names == ["agent-a", "agent-b"]
      and g["owner"] == sys.argv[3] and g["token"] > 0 and g["acting_here"] == (sys.argv[3] == sys.argv[4]))
sys.exit(0 if ok else 1)
PY
	done
}
check "autoscalectl cluster on A shows the members and every owner" wait_for 10 ctl_agrees a
check "autoscalectl cluster on B shows the same owners" wait_for 10 ctl_agrees b
check "autoscalectl cluster prints the tables" \
	eval '"$CTL" -s "$T/a/admin.sock" cluster | grep -q "^agent-b .*s ago$"' 
set_load 30
check "A scales its groups out to 3" wait_for 30 pools_are 3 "$A_GROUPS"
ok_only_owner=1
for g in $A_GROUPS; do
	[ "$(lines "$T/b/calls.$g")" -eq 0 ] || ok_only_owner=0
	grep -q "set_capacity" "$T/a/calls.$g" || ok_only_owner=0
done
for g in $B_GROUPS; do
	eval "[ \"\$(lines \"\$T/a/calls.\$g\")\" -eq \"\$split_$g\" ]" || ok_only_owner=0
done
check "only the owner changed each group" test "$ok_only_owner" -eq 1
declare -A TOKEN_BEFORE
for g in $A_GROUPS; do TOKEN_BEFORE[$g]=$(owner_rev "$g"); done

# --- 2. SIGSTOP A for 3 x TTL ---------------------------------------------
t_stop=$(date +%s%3N)
kill -STOP "$PID_A"
set_load 50
check "B takes A's groups over while A is stopped" wait_for 20 owned_by agent-b "$A_GROUPS"
t_over=$(date +%s%3N)
echo "# failover: A's groups owned by B $((t_over - t_stop)) ms after A stopped (TTL ${TTL} s)"
# A renewed at most TTL/3 before it stopped, and etcd counts the TTL from
# that renewal: B cannot own A's groups earlier than 2/3 of a TTL.
check "not before A's lease could have expired (>= 2/3 TTL)" test $((t_over - t_stop)) -ge $((TTL * 2000 / 3 - 100))
# The pause is the scenario: it lasts three TTLs whatever the above took.
rest=$((3 * TTL * 1000 - ($(date +%s%3N) - t_stop)))
[ "$rest" -gt 0 ] && sleep "$(awk -v ms="$rest" 'BEGIN { printf "%.3f", ms / 1000 }')"
for g in $A_GROUPS; do eval "before_$g=$(lines "$T/a/calls.$g")"; done
t_cont=$(date +%s%3N)
kill -CONT "$PID_A"

# Until A owns a group again, its call log for that group must not move:
# the log is read first, then the owner, so a call seen with B still the
# owner was made while A did not own the group.
stale_calls=""
back_all() {
	local g n b all=0
	for g in $A_GROUPS; do
		eval "b=\$before_$g"
		n=$(lines "$T/a/calls.$g")
		if [ "$(owner "$g")" != agent-a ]; then
			[ "$n" -eq "$b" ] || stale_calls="$stale_calls $g"
			all=1
		fi
	done
	return $all
}
check "A gets its groups back after SIGCONT" wait_for 30 back_all
check "A sent no call for a group it lost before owning it again (stale:${stale_calls:- none})" \
	test -z "$stale_calls"
check "A's log says it lost its lease" grep -q "lost its lease" "$T/a/daemon.log"
check "A scales out to 5 with its new ownership" wait_for 30 pools_are 5 "$A_GROUPS"
fenced=1 twice=0
for g in $A_GROUPS; do
	rec=$(etcd_get_prefix "/test/actions/$g" | cut -f2-)
	tok=$(echo "$rec" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])' 2>/dev/null)
	[ -n "$tok" ] && [ "$tok" -gt "${TOKEN_BEFORE[$g]}" ] && [ "$tok" -eq "$(owner_rev "$g")" ] || fenced=0
	echo "$rec" | grep -q '"agent":"agent-a"' || fenced=0
	[ -z "$(cat "$T"/a/calls."$g" "$T"/b/calls."$g" | awk '{ print $2, $3, $4 }' | sort | uniq -d)" ] || twice=1
done
check "each of A's new calls was fenced by its new token in etcd" test "$fenced" -eq 1
check "no transition was made twice" test "$twice" -eq 0
echo "# A resumed $(( $(date +%s%3N) - t_cont )) ms ago"

stop_pid "$PID_A" TERM; PID_A=
stop_pid "$PID_B" TERM; PID_B=
check "a stopped agent revokes its lease: no member key is left" \
	test "$(etcd_get_prefix /test/members/ | wc -l)" -eq 0
tap_done
