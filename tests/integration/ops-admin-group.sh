#!/bin/bash
# agent.admin_group under the shipped unit's restrictions: the daemon runs
# as the unit runs it (its User=, Group=, SupplementaryGroups=,
# CapabilityBoundingSet=, NoNewPrivileges= and UMask=, read from the
# generated unit and its drop-ins and applied with setpriv), with the group
# the shipped configuration names. The admin
# socket must belong to that group, a member that is not root must reach
# the admin API, and one that is not a member must not.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/integration/ops-lib.sh"

. "$top_srcdir/tests/integration/unit-lib.sh"

group=$(sed -n 's/^[[:space:]]*admin_group[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p' "$top_srcdir/etc/autoscaled.conf")
[ -n "$group" ] || skip_all "etc/autoscaled.conf names no admin_group"
gid=$(ns_gid "$group")
[ -n "$gid" ] || skip_all "no sysusers.d file creates group '$group'"

set_load 10
write_conf "" "admin_group = \"$group\";"
# The daemon's files are its own, as StateDirectory= and RuntimeDirectory=
# make them.
chown -R "$UNIT_UID:$UNIT_GID" "$T"
(as_unit "$AUTOSCALED" -f -c "$T/autoscaled.conf" >> "$T/daemon.log" 2>&1) &
DAEMON_PID=$!
check "the daemon starts under the unit's restrictions" wait_for 10 test -S "$T/admin.sock"
check "the daemon runs as User=${UNIT_USER:-root} (uid $UNIT_UID)" \
	test "$(awk '/^Uid:/ { print $2 }' "/proc/$DAEMON_PID/status")" = "$UNIT_UID"
check "the daemon has no capability (CapabilityBoundingSet=$(unit_key CapabilityBoundingSet))" \
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
other=$(ns_gid nogroup)
(exec_in_ns setpriv --reuid="$UNIT_UID" --regid="$other" --clear-groups --bounding-set=-all -- \
	"$AUTOSCALED" -f -c "$T/autoscaled.conf" >> "$T/daemon.log" 2>&1) &
DAEMON_PID=$!
check "without the membership the log names SupplementaryGroups=$group" \
	wait_for 10 grep -q "not a member of that group.*SupplementaryGroups=$group" "$T/daemon.log"
stop_daemon
tap_done
