#!/bin/bash
# The status page of the quick-start demo, in headless Chromium: the
# daemon on the libvirt test hypervisor follows a replayed day of load
# (etc/demo.conf), and while the page is open a scale-out and a scale-in
# appear on its chart and in its history, as the replay goes up and down.
# The screenshot is kept as tests/integration/status-page-demo.png (the
# one in docs/img/ comes from here).
. "$top_srcdir/tests/integration/tap.sh"
: "${AUTOSCALED:=$top_builddir/autoscaled}"
[ -x "$AUTOSCALED" ] || skip_all "the daemon is not built"
"$AUTOSCALED" --list-drivers 2>/dev/null | grep -q libvirt || skip_all "built without the libvirt driver"
command -v curl >/dev/null || skip_all "curl is not installed"
T=$(mktemp -d "${TMPDIR:-/tmp}/autoscaled-status-demo.XXXXXX")
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; wait 2>/dev/null
	[ "${tap_failed:-0}" -gt 0 ] && tail -30 "$T/out" | sed "s/^/# /"; rm -rf "$T"' EXIT
. "$top_srcdir/tests/integration/status-page-lib.sh"
SHOT="$top_builddir/tests/integration/status-page-demo.png"
src=$(cd "$top_srcdir" && pwd)
rm -f "$SHOT"
chromium_runs

# The demo's configuration as shipped, with its own state, the replay's
# file found from here, and the page on a free port (another one if that
# was taken before the daemon listened).
started() { curl -sf -o /dev/null "http://127.0.0.1:$port/status"; }
for attempt in 1 2 3; do
	port=$(free_port)
	sed -e "s|/tmp/autoscaled-demo|$T/state|g" -e "s|\"data/demo-load.csv\"|\"$src/data/demo-load.csv\"|" \
		-e "s|^\(\tadmin_socket = .*\)$|\1\n\tmetrics_listen = \"127.0.0.1:$port\";\n\tstatus_page = true;|" \
		"$top_srcdir/etc/demo.conf" >"$T/demo.conf"
	grep -q "status_page = true" "$T/demo.conf" || { echo "Bail out! etc/demo.conf has no admin_socket line"; exit 1; }
	"$AUTOSCALED" -f -c "$T/demo.conf" >"$T/out" 2>&1 &
	pid=$!
	watch_pid "$pid" autoscaled "$T/out"
	wait_for 30 started && break
	grep -q "Address already in use" "$T/out" || break
	unwatch_pid "$pid"; kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=
done
check "the demo serves its status page" started
browser_checks --url "http://127.0.0.1:$port/status" --group web --daemon-pid "$pid" --screenshot "$SHOT" \
	--expect-actions scale_out,scale_in --timeout 120
check "the screenshot is a PNG" is_png "$SHOT"
stop_pid "$pid" TERM; rc=$?; pid=
check "the daemon stops cleanly (exit $rc)" test "$rc" -eq 0
tap_done
