#!/bin/bash
# The daemon as the unit runs it, not root, against a real libvirtd's system
# driver (qemu:///system): its User=, Group=, the libvirt driver's drop-in
# (SupplementaryGroups=libvirt), CapabilityBoundingSet=, NoNewPrivileges=
# and UMask=, read from the generated unit and applied with setpriv (systemd
# is not PID 1 where the suite runs). It reads its configuration
# (root:autoscaled 0640), writes its state, observes the pool and scales it
# with QEMU guests; without the libvirt group it says so and keeps running.
#
# The libvirtd is the test's own, in a mount namespace whose /run/libvirt,
# /var/lib/libvirt, /etc/libvirt/qemu and so on are empty: a privileged
# libvirtd keeps its state in those fixed places, so the machine's own
# libvirtd and its domains are left alone. Its socket is in the test's
# directory and admits the group libvirt as libvirtd.conf documents it
# (unix_sock_group, unix_sock_rw_perms 0770, no polkit: there is no system
# bus here). On a Debian host the socket is 0666 and polkit's
# 60-libvirt.rules admits the same group.
. "$top_srcdir/tests/integration/tap.sh"
: "${top_srcdir:=.}" "${top_builddir:=.}" "${AUTOSCALED:=$top_builddir/autoscaled}"
CTL="$top_builddir/autoscalectl"
DRIVERS="$top_builddir/drivers/.libs"
PATH="$PATH:/usr/sbin:/sbin"

[ "${AUTOSCALED_SANITIZERS:-}" = yes ] &&
	skip_all "a sanitized build: libvirt's RPC is not interceptable under ASan on Debian 12"
[ -f "$DRIVERS/libvirt.so" ] || skip_all "the libvirt driver is not built"
for c in libvirtd virsh qemu-system-x86_64; do
	command -v "$c" >/dev/null || skip_all "$c is missing (scripts/install-deps --test)"
done
[ "$(id -u)" = 0 ] || skip_all "needs root, to run libvirtd and apply the unit's restrictions"

T=$(mktemp -d "${TMPDIR:-/tmp}/autoscaled-nonroot.XXXXXX")
chmod 755 "$T"
DAEMON_PID=
LIBVIRTD_PID=
URI="qemu:///system?socket=$T/sock/libvirt-sock"
virsh_() { virsh -q -c "$URI" "$@" 2>>"$T/virsh.log"; }
cleanup() {
	[ -n "$DAEMON_PID" ] && kill -9 "$DAEMON_PID" 2>/dev/null
	# The guests go before their libvirtd: QEMU would outlive it.
	if [ -n "$LIBVIRTD_PID" ]; then
		for d in $(virsh_ list --name); do virsh_ destroy "$d" >/dev/null; done
		kill "$LIBVIRTD_PID" 2>/dev/null
	fi
	wait 2>/dev/null
	if [ "${tap_failed:-0}" -gt 0 ]; then
		for f in daemon.log daemon-nogroup.log libvirtd.log virsh.log; do
			[ -s "$T/$f" ] && { echo "# $f (last 20 lines):"; tail -20 "$T/$f" | sed 's/^/# /'; }
		done
	fi
	rm -rf "$T"
}
trap cleanup EXIT

. "$top_srcdir/tests/integration/unit-lib.sh"
case " $UNIT_GROUPS " in
*" libvirt "*) ;;
*) skip_all "the unit with the libvirt driver's drop-in does not name the group libvirt" ;;
esac
LIBVIRT_GID=$(ns_gid libvirt)

# ------------------------------------------------------------- libvirtd
mkdir -p "$T/sock"
cat > "$T/libvirtd.conf" <<EOF
unix_sock_dir = "$T/sock"
unix_sock_group = "libvirt"
unix_sock_ro_perms = "0770"
unix_sock_rw_perms = "0770"
auth_unix_ro = "none"
auth_unix_rw = "none"
EOF
# Without virtlogd: QEMU's output goes to a file.
echo 'stdio_handler = "file"' > "$T/qemu.conf"
(exec_in_ns sh -c 'for d in /run/libvirt /var/lib/libvirt /var/cache/libvirt /var/log/libvirt /etc/libvirt/qemu \
	/etc/libvirt/storage; do [ ! -d "$d" ] || mount -t tmpfs -o mode=0755 tmpfs "$d" || exit 1; done
	mount --bind "$0/qemu.conf" /etc/libvirt/qemu.conf && exec libvirtd -f "$0/libvirtd.conf" -p "$0/libvirtd.pid"' \
	"$T" > "$T/libvirtd.log" 2>&1) &
LIBVIRTD_PID=$!
watch_pid "$LIBVIRTD_PID" libvirtd "$T/libvirtd.log"
check "a private libvirtd answers on $URI" wait_for 60 virsh_ uri
check "its socket admits the group libvirt only (as unix_sock_group)" \
	test "$(stat -c '%G %a' "$T/sock/libvirt-sock")" = "libvirt 770"

cat > "$T/template.xml" <<EOF
<domain type='qemu'>
  <name>nonroot-template</name>
  <memory unit='MiB'>64</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64'>hvm</type></os>
  <features><acpi/></features>
  <on_poweroff>destroy</on_poweroff>
  <devices/>
</domain>
EOF
check "the template domain is defined" virsh_ define "$T/template.xml"

# ----------------------------------------------------- the daemon's files
# As the package lays them out: the configuration root:autoscaled 0640 in a
# directory the user may enter, the state and runtime directories the
# user's (StateDirectory=, RuntimeDirectory=).
mkdir -p "$T/etc" "$T/state" "$T/run"
chown "root:$UNIT_GID" "$T/etc"
chmod 750 "$T/etc"
chown "$UNIT_UID:$UNIT_GID" "$T/state" "$T/run"
chmod 750 "$T/state"
echo 10 > "$T/load"
cat > "$T/etc/autoscaled.conf" <<EOF
agent = {
  interval = "1s";
  state_directory = "$T/state";
  admin_socket = "$T/run/admin.sock";
  admin_group = "${UNIT_GROUP:-autoscaled}";
  driver_directory = "$DRIVERS";
};
groups = ( {
  name = "web"; driver = "libvirt"; min = 1; max = 3;
  driver_options = { uri = "$URI"; template = "nonroot-template"; shutdown_timeout = "5s"; };
  signals = ( { name = "queue"; source = "exec"; type = "average"; target = 10.0;
                source_options = { command = [ "/bin/cat", "$T/load" ]; };
                poll_interval = "1s"; window = "2s"; aggregation = "last"; staleness = "5s"; } );
  behavior = { scale_in = { stabilization = "1s"; }; scale_out = { policies = ( ); };
               initialization_period = "1s"; };
} );
EOF
chown "root:$UNIT_GID" "$T/etc/autoscaled.conf"
chmod 640 "$T/etc/autoscaled.conf"

ctl() { in_ns setpriv --reuid="$UNIT_UID" --regid="$UNIT_GID" --clear-groups -- "$CTL" -s "$T/run/admin.sock" "$@"; }
running() { virsh_ list --name | grep -c '^web-'; }
running_is() { [ "$(running)" -eq "$1" ]; }
current_is() { ctl --json status 2>/dev/null | python3 -c 'import json, sys
g = [g for g in json.load(sys.stdin)["groups"] if g["name"] == "web"][0]
sys.exit(0 if g["current"] == int(sys.argv[1]) else 1)' "$1" 2>/dev/null; }

# ---------------------------------------------------------- as the unit
(as_unit "$AUTOSCALED" -f -c "$T/etc/autoscaled.conf" >> "$T/daemon.log" 2>&1) &
DAEMON_PID=$!
watch_pid "$DAEMON_PID" autoscaled "$T/daemon.log"
check "the daemon starts as User=$UNIT_USER, reading its root:$UNIT_GROUP 0640 configuration" \
	wait_for 30 test -S "$T/run/admin.sock"
check "it runs as uid $UNIT_UID, gid $UNIT_GID, with the groups $UNIT_GROUPS and no capability" eval '
	set -- $(awk "/^Uid:/ { print \$2 } /^Gid:/ { print \$2 } /^CapEff:/ { print \$2 }" /proc/$DAEMON_PID/status)
	[ "$1" = "$UNIT_UID" ] && [ "$2" = "$UNIT_GID" ] && [ "$3" = 0000000000000000 ] &&
	grep -q "^Groups:.*\b$LIBVIRT_GID\b" /proc/$DAEMON_PID/status'
check "it brings the pool to min = 1 on qemu:///system (a QEMU guest runs)" wait_for 60 running_is 1
check "it observes the member it made (autoscalectl: current 1)" wait_for 30 current_is 1
echo 20 > "$T/load.tmp" && mv "$T/load.tmp" "$T/load"
check "it scales the pool out to 2 for a load of 20" wait_for 60 running_is 2
check "... and observes both" wait_for 30 current_is 2
check "it writes its state, as its user" eval '
	f=$(find "$T/state" -type f -name "*web*" | head -1)
	[ -n "$f" ] && [ "$(stat -c %u "$f")" = "$UNIT_UID" ]'
check "the daemon is still running" kill -0 "$DAEMON_PID"
stop_pid "$DAEMON_PID" TERM
check "it stops cleanly (SIGTERM: exit 0)" test $? -eq 0
DAEMON_PID=

# Without the libvirt group (a unit without the driver's drop-in), libvirtd
# refuses the user: the log says which group is missing, and the daemon,
# which cannot reach any host of the pool at start, exits with status 1
# (systemd's Restart=on-failure tries again) rather than crashing.
mv "$T/state" "$T/state.1" && mkdir "$T/state" && chown "$UNIT_UID:$UNIT_GID" "$T/state"
(exec_in_ns setpriv --reuid="$UNIT_UID" --regid="$UNIT_GID" --clear-groups --bounding-set=-all --no-new-privs -- \
	"$AUTOSCALED" -f -c "$T/etc/autoscaled.conf" >> "$T/daemon-nogroup.log" 2>&1) &
DAEMON_PID=$!
watch_pid "$DAEMON_PID" autoscaled "$T/daemon-nogroup.log"
check "without the libvirt group the log names it: SupplementaryGroups=libvirt" \
	wait_for 30 grep -q "refuses the daemon's user.*Permission denied\|refuses the daemon's user.*SupplementaryGroups=libvirt" \
	"$T/daemon-nogroup.log"
unwatch_pid "$DAEMON_PID"
wait "$DAEMON_PID"
rc=$?
DAEMON_PID=
check "... and the daemon exits with status 1, not a crash (status $rc)" test "$rc" -eq 1
check "... without touching the pool" running_is 2

# A credential of root's that only the daemon's group may read
# (root:autoscaled 0640) is accepted by the daemon as its user; root keeps
# refusing such a file, and the user refuses one that others may read.
printf 'tok\n' > "$T/etc/token"
chown "root:$UNIT_GID" "$T/etc/token"
chmod 640 "$T/etc/token"
sed "s|signals = ( {|signals = ( { name = \"q2\"; source = \"http_json\"; type = \"average\"; target = 1.0; source_options = { url = \"http://127.0.0.1:9/x\"; pointer = \"/n\"; bearer_token_file = \"$T/etc/token\"; }; }, {|" \
	"$T/etc/autoscaled.conf" > "$T/etc/token.conf"
chown "root:$UNIT_GID" "$T/etc/token.conf"
chmod 640 "$T/etc/token.conf"
out=$( (as_unit "$AUTOSCALED" -n -c "$T/etc/token.conf") 2>&1)
check "as its user, a root:$UNIT_GROUP 0640 token file is accepted${out:+: $out}" test "$out" = "configuration OK"
out=$("$AUTOSCALED" -n -c "$T/etc/token.conf" 2>&1)
check "as root, the same file is refused" eval 'echo "$out" | grep -q "its group or others may access it"'
chmod 644 "$T/etc/token"
out=$( (as_unit "$AUTOSCALED" -n -c "$T/etc/token.conf") 2>&1)
check "as its user, a token others may read is refused" eval 'echo "$out" | grep -q "its group or others may access it"'
tap_done
