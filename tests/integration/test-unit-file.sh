#!/bin/sh
# systemd-analyze verify on the generated unit, pointed at the built daemon.
. "$top_srcdir/tests/integration/tap.sh"
command -v systemd-analyze >/dev/null || skip_all "systemd-analyze not installed"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The unit names installed paths; point them at the build tree to verify.
sed -e "s|^ExecStartPre=.*|ExecStartPre=$AUTOSCALED -n -c /etc/autoscaled/autoscaled.conf|" \
    -e "s|^ExecStart=.*|ExecStart=$AUTOSCALED -c /etc/autoscaled/autoscaled.conf|" \
    "$top_builddir/systemd/autoscaled.service" > "$tmp/autoscaled.service"
out=$(systemd-analyze verify --man=no "$tmp/autoscaled.service" 2>&1)
rc=$?
if [ $rc -eq 0 ]; then ok "systemd-analyze verify accepts autoscaled.service"; else not_ok "systemd-analyze verify: $out"; fi
for key in Type=notify WatchdogSec= StateDirectory=autoscaled RuntimeDirectory=autoscaled ProtectSystem=strict NoNewPrivileges=yes "ExecReload=/bin/kill -HUP"; do
	check "unit has $key" grep -q "^$key" "$top_builddir/systemd/autoscaled.service"
done
# Not root: the unit names a user, and the sysusers.d file creates it.
user=$(sed -n 's/^User=//p' "$top_builddir/systemd/autoscaled.service")
check "the unit runs the daemon as a user that is not root (User=$user)" test -n "$user" -a "$user" != root
check "the sysusers.d file creates user '$user'" \
	grep -Eq "^u[[:space:]]+$user[[:space:]]" "$top_srcdir/systemd/sysusers.d/autoscaled.conf"
check "the main unit does not need the libvirt group (the driver's drop-in adds it)" eval \
	'! grep -q "^SupplementaryGroups=.*libvirt" "$top_builddir/systemd/autoscaled.service" &&
	 grep -qx "SupplementaryGroups=libvirt" "$top_srcdir/systemd/autoscaled.service.d/libvirt.conf"'
check "the Debian sysusers.d files are the tree's" eval \
	'cmp -s "$top_srcdir/systemd/sysusers.d/autoscaled.conf" "$top_srcdir/debian/autoscaled.sysusers" &&
	 cmp -s "$top_srcdir/systemd/sysusers.d/autoscaled-libvirt.conf" "$top_srcdir/debian/autoscaled-driver-libvirt.sysusers"'
# The admin socket's group: the shipped configuration names it, the unit
# makes the daemon a member (it has no CAP_CHOWN), sysusers.d creates it.
group=$(sed -n 's/^[[:space:]]*admin_group[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p' "$top_srcdir/etc/autoscaled.conf")
check "the unit makes the daemon a member of admin_group '$group'" eval \
	'grep -qx "Group=$group" "$top_builddir/systemd/autoscaled.service" ||
	 grep -q "^SupplementaryGroups=.*\b$group\b" "$top_builddir/systemd/autoscaled.service"'
check "the sysusers.d file creates group '$group'" \
	grep -Eq "^[gu][[:space:]]+$group[[:space:]]" "$top_srcdir/systemd/sysusers.d/autoscaled.conf"
check "ExecStartPre checks the config with -n" grep -q '^ExecStartPre=.*autoscaled -n' "$top_builddir/systemd/autoscaled.service"
# The exposure systemd-analyze computes for the unit (offline, from the
# file): 2.2 while the daemon ran as root, 1.5 as User=autoscaled with
# ProtectProc=, RemoveIPC= and PrivateMounts=. A change that loosens the
# hardening fails here.
MAX_EXPOSURE=1.5
if systemd-analyze security --help 2>/dev/null | grep -q -- --offline; then
	out=$(systemd-analyze security --offline=true --no-pager "$tmp/autoscaled.service" 2>&1)
	score=$(echo "$out" | sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) .*/\1/p')
	check "systemd-analyze security: exposure ${score:-unknown} <= $MAX_EXPOSURE" \
		awk -v s="$score" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(s != "" && s + 0 <= m + 0) }'
	[ -n "$score" ] || echo "$out" | tail -5 | sed 's/^/# /'
	# The same analysis of the unit as it was, as root, must fail the
	# bound, or the check above could not.
	sed -e '/^User=/d' -e '/^Group=/d' "$tmp/autoscaled.service" > "$tmp/root.service"
	score=$(systemd-analyze security --offline=true --no-pager "$tmp/root.service" 2>&1 |
		sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) .*/\1/p')
	check "the unit run as root scores worse (${score:-unknown})" \
		awk -v s="$score" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(s != "" && s + 0 > m + 0) }'
else
	ok "# SKIP systemd-analyze security has no --offline (systemd < 252)"
fi
# A unit whose daemon does not exist must be refused, so the check above can fail.
sed "s|^ExecStart=.*|ExecStart=$tmp/no-such-daemon|" "$tmp/autoscaled.service" > "$tmp/bad.service"
if systemd-analyze verify --man=no "$tmp/bad.service" >/dev/null 2>&1; then not_ok "a broken unit is refused"; else ok "a broken unit is refused"; fi
tap_done
