#!/bin/sh
# The daemon's command line: -n, --version, --help, --list-drivers, usage errors.
. "$top_srcdir/tests/integration/tap.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

out=$("$AUTOSCALED" -n -c "$top_srcdir/etc/autoscaled.conf" 2>&1)
rc=$?
if [ $rc -eq 0 ] && [ "$out" = "configuration OK" ]; then ok "-n accepts the shipped example"; else not_ok "-n on etc/autoscaled.conf: rc=$rc: $out"; fi

out=$("$AUTOSCALED" -n -c "$top_srcdir/etc/demo.conf" 2>&1)
rc=$?
if [ $rc -eq 0 ]; then ok "-n accepts the demo configuration"; else not_ok "-n on etc/demo.conf: rc=$rc: $out"; fi

cat > "$tmp/bad.conf" <<'CONF'
groups = (
  {
    name = "web";
    driver = "libvirt";
    min = 5;
    max = 2;
    signals = ( { name = "cpu"; source = "libvirt_cpu"; type = "utilization"; target = 60.0; } );
    behavior = { scale_in = { stabilisation = "5m"; }; };
  }
);
CONF
out=$("$AUTOSCALED" -n -c "$tmp/bad.conf" 2>&1)
rc=$?
if [ $rc -ne 0 ]; then ok "-n exits non-zero on a bad config"; else not_ok "-n exits non-zero on a bad config"; fi
if printf '%s\n' "$out" | grep -q "^$tmp/bad.conf:[0-9][0-9]*: "; then ok "errors are FILE:LINE: message"; else not_ok "errors are FILE:LINE: message: $out"; fi
n=$(printf '%s\n' "$out" | grep -c "^$tmp/bad.conf:")
if [ "$n" -ge 2 ]; then ok "-n prints every error, not only the first ($n)"; else not_ok "-n prints every error: $out"; fi
if printf '%s\n' "$out" | grep -q "did you mean .stabilization."; then ok "a misspelt key gets a suggestion"; else not_ok "a misspelt key gets a suggestion: $out"; fi

out=$("$AUTOSCALED" -n -c "$tmp/missing.conf" 2>&1)
if [ $? -ne 0 ] && printf '%s' "$out" | grep -q "missing.conf"; then ok "a missing file is named"; else not_ok "a missing file is named: $out"; fi

out=$("$AUTOSCALED" --version)
case "$out" in "autoscaled "[0-9]*) ok "--version";; *) not_ok "--version: $out";; esac
"$AUTOSCALED" --help | grep -q -- "--check-config" && ok "--help lists the options" || not_ok "--help"
"$AUTOSCALED" --bogus >/dev/null 2>&1
[ $? -eq 2 ] && ok "an unknown option exits 2" || not_ok "an unknown option exits 2"

out=$("$AUTOSCALED" --list-drivers 2>&1)
if printf '%s\n' "$out" | grep -q "libvirt"; then ok "--list-drivers lists the libvirt driver"; else not_ok "--list-drivers: $out"; fi
out=$(AUTOSCALED_DRIVER_DIR="$tmp/none" "$AUTOSCALED" --list-drivers 2>&1)
if [ $? -ne 0 ] && printf '%s' "$out" | grep -q "$tmp/none"; then ok "--list-drivers names a missing directory"; else not_ok "--list-drivers on a missing dir: $out"; fi
tap_done
