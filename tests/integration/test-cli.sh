#!/bin/sh
# The daemon's command line: -n, --version, --help, --list-drivers, usage errors.
. "$top_srcdir/tests/integration/tap.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

out=$("$AUTOSCALED" -n -c "$top_srcdir/etc/autoscaled.conf" 2>&1)
rc=$?
if [ $rc -eq 0 ] && [ "$out" = "configuration OK" ]; then ok "-n accepts the shipped example"; else not_ok "-n on etc/autoscaled.conf: rc=$rc: $out"; fi

# The demo replays data/demo-load.csv, from the project's root as the
# README runs it.
out=$(cd "$top_srcdir" && "$AUTOSCALED" -n -c etc/demo.conf 2>&1)
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
# -n checks what start-up checks: the drivers' and sources' own options,
# through the driver each group would load.
cat > "$tmp/opts.conf" <<'CONF'
groups = (
  { name = "a"; driver = "libvirt";
    driver_options = { uri = "test:///default";
                       shutdown_timout = "1m"; };
    min = 1; max = 2; },
  { name = "b"; driver = "gce-mig";
    driver_options = { zone = "europe-west1-b"; name = "b"; operation_timeout = "5 min"; };
    min = 1; max = 2; },
  { name = "c"; driver = "libvrt"; min = 1; max = 2;
    signals = ( { name = "q"; source = "exec"; type = "average"; target = 1.0;
                  source_options = { comand = [ "/bin/true" ]; }; } ); }
);
CONF
out=$("$AUTOSCALED" -n -c "$tmp/opts.conf" 2>&1)
rc=$?
expect_line() {
	if printf '%s\n' "$out" | grep -qF -- "$1"; then ok "$2"; else not_ok "$2: $out"; fi
}
[ $rc -ne 0 ] && ok "-n refuses options the drivers and sources refuse" || not_ok "-n accepted: $out"
expect_line "$tmp/opts.conf:3: libvirt: missing required option 'template' (the domain to clone)" \
	"a missing required libvirt option is reported at the group's driver_options"
expect_line "$tmp/opts.conf:4: libvirt: unknown option 'shutdown_timout' (did you mean 'shutdown_timeout'?)" \
	"a misspelt driver option is reported at its line with the near miss"
expect_line "$tmp/opts.conf:7: gce-mig: missing required option 'project'" \
	"a missing required gce-mig option is reported at the group's driver_options"
expect_line "$tmp/opts.conf:7: gce-mig: option operation_timeout = '5 min' is not a duration" \
	"a driver's duration is checked in the one duration syntax"
expect_line "$tmp/opts.conf:9: unknown driver 'libvrt' (did you mean 'libvirt'?)" \
	"an unknown driver gets a suggestion from the installed drivers"
expect_line "$tmp/opts.conf:11: signal 'q': source 'exec': unknown option 'comand' (did you mean 'command'?)" \
	"a source's options are checked, with the near miss"

# The driver is looked up exactly where the daemon loads it from: the
# environment's directory wins over agent.driver_directory, and a build
# without a driver (here: a directory without it) does not accept it.
mkdir -p "$tmp/empty" "$tmp/conf-drivers"
ln -s "$AUTOSCALED_DRIVER_DIR/libvirt.so" "$tmp/conf-drivers/libvirt.so"
cat > "$tmp/dir.conf" <<CONF
agent = { driver_directory = "$tmp/conf-drivers"; };
groups = ( { name = "a"; driver = "libvirt"; driver_options = { template = "t"; }; min = 1; max = 2; } );
CONF
out=$(AUTOSCALED_DRIVER_DIR="$tmp/empty" "$AUTOSCALED" -n -c "$tmp/dir.conf" 2>&1)
if [ $? -ne 0 ] && printf '%s' "$out" | grep -qF "unknown driver 'libvirt': no 'libvirt.so' in '$tmp/empty'"; then
	ok "-n refuses a driver that is not in the directory the daemon loads from"
else
	not_ok "-n with the driver only outside the loader's directory: $out"
fi
out=$(env -u AUTOSCALED_DRIVER_DIR "$AUTOSCALED" -n -c "$tmp/dir.conf" 2>&1)
if [ $? -eq 0 ]; then ok "-n finds the driver in agent.driver_directory when the environment names none"; else not_ok "-n with driver_directory: $out"; fi
tap_done
