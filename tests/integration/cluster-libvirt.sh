#!/bin/bash
# Two agents on one libvirt test hypervisor, on a real three-member etcd:
# kill -9 of a group's owner in the middle of a scale-out, with the libvirt
# driver as the target.
#
# libvirt's test driver keeps one in-memory state per process for
# test:///default, shared by every connection while one stays open. The
# test starts its own libvirtd (root, in a mount namespace whose
# /run/libvirt, /var/lib/libvirt and so on are empty, its socket in the
# test's directory) so that every agent reaches the same test hypervisor
# through test+unix:///default?socket=PATH. A `virsh event` of the test's
# holds a connection from start to end (the state lives as long as that)
# and records libvirt's own view: every domain defined, started, stopped
# and undefined, with its time.
#  - agent a owns the group (pinned to it) and scales it out from 1 to 5,
#    one domain every 2 s (a rate limit); once two of the four new domains
#    exist it is killed (-9): it does not revoke its lease;
#  - agent b owns the group within the TTL and one interval of the kill,
#    continues from the group's record and completes the scale-out: the
#    group has exactly 5 domains, every domain ever defined has a name of
#    its own, and libvirt defined as many as the two agents' logs say
#    they created; b changed nothing on libvirt before it owned the group;
#  - a comes back and takes its group again (its pin); the load drops and
#    the group is scaled in to 1: libvirt undefines exactly the domains the
#    owner's log says it removed, and b removes none.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/integration/etcd-lib.sh"

: "${top_builddir:=.}" "${AUTOSCALED:=$top_builddir/autoscaled}"
DRIVERS="$top_builddir/drivers/.libs"
PATH="$PATH:/usr/sbin:/sbin"

# The agents talk to libvirtd over libvirt's RPC, which AddressSanitizer
# cannot intercept on Debian 12 (as in ops-nonroot-libvirt.sh).
[ "${AUTOSCALED_SANITIZERS:-}" = yes ] &&
	skip_all "a sanitized build: libvirt's RPC is not interceptable under ASan on Debian 12"
[ -x "$AUTOSCALED" ] || skip_all "the daemon is not built"
[ -f "$DRIVERS/libvirt.so" ] || skip_all "the libvirt driver is not built"
for c in libvirtd virsh unshare; do
	command -v "$c" >/dev/null || skip_all "$c is missing (scripts/install-deps --test)"
done
[ "$(id -u)" = 0 ] || skip_all "needs root, to run a private libvirtd"
unshare -m true 2>/dev/null || skip_all "cannot make a mount namespace here"
need_etcd
command -v etcdctl >/dev/null 2>&1 || skip_all "etcdctl is not installed (Debian: etcd-client)"

TTL=3
INTERVAL_MS=1000
T=$(mktemp -d "${TMPDIR:-/var/tmp}/autoscaled-clvirt.XXXXXX")
URI="test+unix:///default?socket=$T/sock/libvirt-sock"
LIBVIRTD_PID=
EVENTS_PID=
PIDS=""
virsh_() { virsh -q -c "$URI" "$@" 2>>"$T/virsh.log"; }
cleanup() {
	local p
	for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
	[ -n "$EVENTS_PID" ] && kill "$EVENTS_PID" 2>/dev/null
	[ -n "$LIBVIRTD_PID" ] && kill "$LIBVIRTD_PID" 2>/dev/null
	stop_etcd 3
	wait 2>/dev/null
	if [ "${tap_failed:-0}" -gt 0 ]; then
		for f in a/daemon.log b/daemon.log libvirtd.log virsh.log events; do
			[ -s "$T/$f" ] || continue
			echo "# $f (last 30 lines):"
			tail -30 "$T/$f" | sed 's/^/# /'
		done
	fi
	rm -rf "$T"
}
trap cleanup EXIT

# ------------------------------------------------------------- libvirtd
# Only root may use its socket (0700 in a 0700 directory); no polkit, as
# there is no system bus here.
mkdir -m 700 "$T/sock"
cat > "$T/libvirtd.conf" <<EOF
unix_sock_dir = "$T/sock"
unix_sock_ro_perms = "0700"
unix_sock_rw_perms = "0700"
auth_unix_ro = "none"
auth_unix_rw = "none"
EOF
(exec unshare -m sh -c 'for d in /run/libvirt /var/lib/libvirt /var/cache/libvirt /var/log/libvirt \
	/etc/libvirt/qemu /etc/libvirt/storage; do [ ! -d "$d" ] || mount -t tmpfs -o mode=0755 tmpfs "$d" || exit 1
	done; exec libvirtd -f "$0/libvirtd.conf" -p "$0/libvirtd.pid"' "$T" > "$T/libvirtd.log" 2>&1) &
LIBVIRTD_PID=$!
watch_pid "$LIBVIRTD_PID" libvirtd "$T/libvirtd.log"
check "a private libvirtd serves the test hypervisor on $URI" wait_for 60 virsh_ uri

# The recorder of libvirt's view; its connection keeps the test
# hypervisor's state alive. A domain defined and undefined by another
# connection shows the recorder is subscribed, and that two clients of
# this libvirtd share one hypervisor.
virsh -c "$URI" event --all --loop --timestamp > "$T/events" 2>>"$T/virsh.log" &
EVENTS_PID=$!
watch_pid "$EVENTS_PID" "the libvirt event recorder" "$T/virsh.log"
cat > "$T/probe.xml" <<EOF
<domain type='test'><name>probe</name><memory>1024</memory><os><type>hvm</type></os></domain>
EOF
# Until the recorder is subscribed, each try defines the domain again.
probe_seen() {
	virsh -q -c "$URI" undefine probe >/dev/null 2>&1
	virsh_ define "$T/probe.xml" >/dev/null
	grep -q "domain 'probe': Defined" "$T/events"
}
check "another client's define reaches the recorder's connection (one shared hypervisor)" wait_for 20 probe_seen
check "... and a third client sees that domain" eval 'virsh_ list --all --name | grep -qx probe'
virsh_ undefine probe >/dev/null
check "the template domain 'test' is there" eval 'virsh_ list --all --name | grep -qx test'

# ----------------------------------------------------------------- etcd
start_etcd 3 "$T" || { echo "Bail out! etcd did not start"; exit 1; }

set_load() { echo "$1" > "$T/load.tmp" && mv "$T/load.tmp" "$T/load.g"; }

# One domain every 2 s on the way out, so that the owner can be killed in
# the middle of a scale-out; the way in has no limit, after a 2 s window.
write_conf() {
	local x=$1
	mkdir -p "$T/$x/state"
	cat > "$T/$x/autoscaled.conf" <<CONF
agent = {
  interval = "1s";
  state_directory = "$T/$x/state";
  admin_socket = "$T/$x/admin.sock";
  driver_directory = "$DRIVERS";
};
cluster = { etcd = ( $ETCD_LIST ); prefix = "/test"; lease_ttl = "${TTL}s"; name = "agent-$x"; };
groups = (
  { name = "g"; driver = "libvirt"; min = 1; max = 8; owner = "agent-a";
    driver_options = { uri = "$URI"; template = "test"; shutdown_timeout = "5s"; };
    signals = ( { name = "queue"; source = "exec"; type = "average"; target = 10.0;
                  source_options = { command = [ "/bin/cat", "$T/load.g" ]; };
                  poll_interval = "1s"; window = "2s"; aggregation = "last"; staleness = "5s"; } );
    behavior = { scale_out = { policies = ( { type = "instances"; value = 1; period = "2s"; } ); };
                 scale_in = { stabilization = "2s"; policies = ( ); }; }; }
);
CONF
}

start_agent() {
	"$AUTOSCALED" -f -c "$T/$1/autoscaled.conf" >> "$T/$1/daemon.log" 2>&1 &
	eval "PID_$1=$!"
	PIDS="$PIDS $!"
	watch_pid "$!" "agent $1" "$T/$1/daemon.log"
}

owner() { etcd_get_prefix /test/owners/g | awk '$1 == "/test/owners/g" { print $2 }'; }
owned_by() { [ "$(owner)" = "$1" ]; }
members_2() { [ "$(etcd_get_prefix /test/members/ | wc -l)" -eq 2 ]; }
# The group's domains as libvirt has them (the driver names them g-N).
domains() { virsh_ list --all --name | grep '^g-' | sort; }
domains_is() { [ "$(domains | wc -l)" -eq "$1" ]; }
domains_at_least() { [ "$(domains | wc -l)" -ge "$1" ]; }
# The recorder's lifecycle events of the group's domains of one kind
# (Defined, Undefined), as "MS NAME" lines (MS: the event's time, epoch ms).
events() {
	local d t rest n
	grep "for domain 'g-[0-9]*': $1 " "$T/events" | while read -r d t rest; do
		n=${rest#*domain \'}
		echo "$(date -d "$d ${t%:}" +%s%3N) ${n%%\'*}"
	done
}
# Lines of agent $1's log from line $2 on (1 by default) matching $3.
log_lines() { tail -n +"${2:-1}" "$T/$1/daemon.log" | grep -c "$3"; }
created_by() { log_lines "$1" "${2:-1}" "created 'g-"; }
removed_by() { log_lines "$1" "${2:-1}" "removed 'g-"; }

set_load 10
write_conf a
write_conf b
# a starts alone and brings the group to its minimum; b joins after (as in
# cluster-failover.sh: were b a member first, it would own the group until
# a is one).
start_agent a
check "agent a owns the group (its pin)" wait_for 20 owned_by agent-a
check "the group has its minimum, 1 domain" wait_for 20 domains_is 1
start_agent b
check "both agents are members" wait_for 30 members_2

set_load 50
t_load=$(date +%s%3N)
check "two of the four new domains exist" wait_for 30 domains_at_least 3
t_kill=$(date +%s%3N)
unwatch_pid "$PID_a"
kill -9 "$PID_a"
wait "$PID_a" 2>/dev/null
at_kill=$(domains | wc -l)
a_created=$(created_by a)
echo "# agent a killed $((t_kill - t_load)) ms after the load rose, with $at_kill domains of 5 (its log: $a_created created)"
check "a was killed in the middle of its scale-out" test "$at_kill" -lt 5
check "b owns the group" wait_since 30 owned_by agent-b
t_over=$(date +%s%3N)
# b took the group after the last look that did not find it (0: the first
# look found it) and before t_over: the looks (etcdctl, started each time)
# take time of their own on a loaded machine, so the bound below is broken
# for sure only when it is from the last miss on.
t_miss=$((WAIT_MISS_MS > t_kill ? WAIT_MISS_MS : t_kill))
echo "# failover: b owns the group $((t_miss - t_kill)) to $((t_over - t_kill)) ms after a was killed (TTL ${TTL} s, interval 1 s)"
check "within the TTL and one interval (and etcd's 500 ms expiry check)" \
	test $((t_miss - t_kill)) -le $((TTL * 1000 + INTERVAL_MS + 500))
check "b continues from the record a left" \
	wait_for 20 grep -q "continuing from the record agent 'agent-a' left" "$T/b/daemon.log"
check "b completes the scale-out: the group has 5 domains" wait_for 60 domains_is 5
t_done=$(date +%s%3N)
echo "# the group at 5 domains $((t_done - t_kill)) ms after the kill"
# Each further step is at most an interval late; nothing more is made.
check "b makes no sixth domain" eval '! wait_for 3 domains_at_least 6'

# libvirt's view against the agents' logs.
defined=$(events Defined)
check "every domain libvirt defined has a name of its own ($(echo "$defined" | wc -l) defined)" \
	test "$(echo "$defined" | awk '{ print $2 }' | sort -u | wc -l)" -eq "$(echo "$defined" | wc -l)"
b_created=$(created_by b)
echo "# created: $a_created by a, $b_created by b; libvirt defined $(echo "$defined" | wc -l)"
check "libvirt defined as many domains as the agents' logs say they created (5)" \
	test "$(echo "$defined" | wc -l)" -eq 5 -a $((a_created + b_created)) -eq 5
# The daemons' own account: the counts their "scaled out" lines moved.
out_sum=$(cat "$T/a/daemon.log" "$T/b/daemon.log" |
	sed -n 's/.*scaled out from \([0-9]*\) to \([0-9]*\) done.*/\1 \2/p' | awk '{ n += $2 - $1 } END { print n + 0 }')
check "... and as their \"scaled out\" lines add up to ($out_sum)" test "$out_sum" -eq 5
check "... a's before it was killed, b's after" eval '
	[ "$(echo "$defined" | awk -v t="$t_kill" "\$1 < t" | wc -l)" -eq "$a_created" ] &&
	[ "$(echo "$defined" | awk -v t="$t_kill" "\$1 >= t" | wc -l)" -eq "$b_created" ]'
check "none was undefined (none created and thrown away)" test -z "$(events Undefined)"
# The first line of agent $1's log matching $2 (its number; a big one
# when none does).
first_line() { grep -n "$2" "$T/$1/daemon.log" | head -1 | cut -d: -f1 | grep . || echo 999999; }
own_line=$(first_line b "owns group 'g'")
check "b changed nothing on libvirt before it owned the group (its log: owner at line $own_line)" \
	test "$own_line" -lt 999999 -a "$(first_line b "created 'g-\\|removed 'g-\\|scaled out\\|scaled in")" -gt "$own_line"
check "b logged the scale-out it completed" grep -q "scaled out from [34] to" "$T/b/daemon.log"
rec=$(etcd_get_prefix /test/actions/g | cut -f2-)
check "the last fenced action in etcd is b's" eval 'echo "$rec" | grep -q "\"agent\":\"agent-b\""'

# a comes back and takes its group again; then the load drops.
a_from=$(($(wc -l < "$T/a/daemon.log") + 1))
b_from=$(($(wc -l < "$T/b/daemon.log") + 1))
start_agent a
check "a owns the group again (its pin)" wait_for 30 owned_by agent-a
t_back=$(date +%s%3N)
check "a continues from the record b left when it gave the group up" \
	wait_for 20 eval 'tail -n +"$a_from" "$T/a/daemon.log" | grep -q "continuing from the record agent .agent-b. left"'
set_load 10
check "the owner scales the group in to 1 domain" wait_for 30 domains_is 1
removed=$(events Undefined)
a_removed=$(removed_by a "$a_from")
echo "# scale-in: libvirt undefined $(echo "$removed" | grep -c .), a's log says $a_removed removed, b's $(removed_by b)"
check "libvirt undefined 4 domains, each once, after a owned the group again" eval '
	[ "$(echo "$removed" | grep -c .)" -eq 4 ] &&
	[ "$(echo "$removed" | awk "{ print \$2 }" | sort -u | wc -l)" -eq 4 ] &&
	[ -z "$(echo "$removed" | awk -v t="$t_back" "\$1 < t")" ]'
check "... as many as a's log says it removed" test "$a_removed" -eq 4
check "b removed nothing" test "$(removed_by b)" -eq 0
check "b made no libvirt change once it gave the group back" \
	test "$(created_by b "$b_from")" -eq 0
check "the domain left is one libvirt defined once" eval '
	left=$(domains); echo "$defined" | awk "{ print \$2 }" | grep -qx "$left"'

stop_pid "$PID_a" TERM
stop_pid "$PID_b" TERM
tap_done
