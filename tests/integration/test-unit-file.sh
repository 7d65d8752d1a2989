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
# The admin socket's group: the shipped configuration names it, the unit
# makes the daemon a member (it has no CAP_CHOWN), sysusers.d creates it.
group=$(sed -n 's/^[[:space:]]*admin_group[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p' "$top_srcdir/etc/autoscaled.conf")
check "the unit makes the daemon a member of admin_group '$group'" \
	grep -q "^SupplementaryGroups=.*\b$group\b" "$top_builddir/systemd/autoscaled.service"
check "the sysusers.d file creates group '$group'" \
	grep -Eq "^g[[:space:]]+$group[[:space:]]" "$top_srcdir/systemd/sysusers.d/autoscaled.conf"
check "ExecStartPre checks the config with -n" grep -q '^ExecStartPre=.*autoscaled -n' "$top_builddir/systemd/autoscaled.service"
# A unit whose daemon does not exist must be refused, so the check above can fail.
sed "s|^ExecStart=.*|ExecStart=$tmp/no-such-daemon|" "$tmp/autoscaled.service" > "$tmp/bad.service"
if systemd-analyze verify --man=no "$tmp/bad.service" >/dev/null 2>&1; then not_ok "a broken unit is refused"; else ok "a broken unit is refused"; fi
tap_done
