#!/bin/bash
# agent.admin_group under the shipped unit's restrictions: the daemon runs
# as the unit runs it (its CapabilityBoundingSet=, SupplementaryGroups=,
# NoNewPrivileges= and UMask=, read from the generated unit and applied
# with setpriv), with the group the shipped configuration names. The admin
# socket must belong to that group, a member that is not root must reach
# the admin API, and one that is not a member must not.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/integration/ops-lib.sh"

UNIT="$top_builddir/systemd/autoscaled.service"
[ -f "$UNIT" ] || skip_all "the unit is not generated"
command -v setpriv >/dev/null || skip_all "setpriv is missing (util-linux)"
command -v unshare >/dev/null || skip_all "unshare is missing (util-linux)"
[ "$(id -u)" = 0 ] || skip_all "needs root, to apply the unit's restrictions"

unit_key() { sed -n "s/^$1=//p" "$UNIT" | tail -1; }
group=$(sed -n 's/^[[:space:]]*admin_group[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p' "$top_srcdir/etc/autoscaled.conf")
[ -n "$group" ] || skip_all "etc/autoscaled.conf names no admin_group"

# The group may not exist on this machine: the daemon and the clients run
# in a mount namespace whose /etc/group has it (as the package's sysusers.d
# file would create it), so the host's is left alone.
cp /etc/group "$T/group"
getent group "$group" >/dev/null || echo "$group:x:$(shuf -i 20000-29999 -n 1):" >> "$T/group"
gid=$(awk -F: -v g="$group" '$1 == g { print $3 }' "$T/group")
unshare -m true 2>/dev/null || skip_all "cannot make a mount namespace here"

# The unit's restrictions as setpriv options.
caps=$(unit_key CapabilityBoundingSet)
if [ -z "$caps" ]; then bset=-all; else bset="-all,$(echo "$caps" | tr 'A-Z' 'a-z' | sed 's/cap_/+/g; s/ \+/,/g; s/^,//')"; fi
groups=$(unit_key SupplementaryGroups)
if [ -n "$groups" ]; then gopt="--groups=$(echo "$groups" | tr ' ' ',')"; else gopt=--clear-groups; fi
nnp=; [ "$(unit_key NoNewPrivileges)" = yes ] && nnp=--no-new-privs
umask_v=$(unit_key UMask)

# in_ns COMMAND...: runs COMMAND with the namespace's /etc/group.
in_ns() { unshare -m sh -c 'mount --bind "$0" /etc/group && exec "$@"' "$T/group" "$@"; }

set_load 10
write_conf "" "admin_group = \"$group\";"
(umask "${umask_v:-0022}"; exec unshare -m sh -c 'mount --bind "$0" /etc/group && exec "$@"' "$T/group" \
	setpriv --bounding-set="$bset" $gopt $nnp -- "$AUTOSCALED" -f -c "$T/autoscaled.conf" >> "$T/daemon.log" 2>&1) &
DAEMON_PID=$!
check "the daemon starts under the unit's restrictions" wait_for 10 test -S "$T/admin.sock"
check "the daemon has no capability (CapabilityBoundingSet=$caps)" \
	test "$(awk '/^CapEff/ { print $2 }' "/proc/$DAEMON_PID/status")" = 0000000000000000
check "the admin socket belongs to group '$group' (gid $gid)" test "$(stat -c %g "$T/admin.sock")" = "$gid"
check "the admin socket is 0660" test "$(stat -c %a "$T/admin.sock")" = 660
check "the daemon did not give up its admin API" eval '! grep -q "running without the admin API" "$T/daemon.log"'
out=$(in_ns setpriv --reuid=65534 --regid=65534 --groups="$gid" -- "$CTL" -s "$T/admin.sock" status 2>&1); rc=$?
check "a member of '$group' that is not root uses the admin API (rc $rc)" test $rc -eq 0 -a -n "$(echo "$out" | grep -E '^web ')"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups -- "$CTL" -s "$T/admin.sock" status 2>&1); rc=$?
check "a user outside '$group' is refused: exit 3 (rc $rc)" test $rc -eq 3
check "the daemon is still running" kill -0 "$DAEMON_PID"
stop_daemon

# Without the membership (a unit edited to drop it, or another group named
# in the configuration only) the log says what the unit lacks.
: > "$T/daemon.log"
(exec unshare -m sh -c 'mount --bind "$0" /etc/group && exec "$@"' "$T/group" \
	setpriv --bounding-set=-all --clear-groups -- "$AUTOSCALED" -f -c "$T/autoscaled.conf" >> "$T/daemon.log" 2>&1) &
DAEMON_PID=$!
check "without the membership the log names SupplementaryGroups=$group" \
	wait_for 10 grep -q "not a member of that group.*SupplementaryGroups=$group" "$T/daemon.log"
stop_daemon
tap_done
