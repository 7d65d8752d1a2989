#!/bin/sh
# The quick-start demo, as a user runs it: within a minute the daemon
# scales the test hypervisor's pool out and back in, saying why, and
# Ctrl-C (SIGINT) stops it cleanly.
. "$top_srcdir/tests/integration/tap.sh"
"$AUTOSCALED" --list-drivers 2>/dev/null | grep -q libvirt || skip_all "built without the libvirt driver"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/autoscaled-test-demo.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$top_srcdir" || exit 1
# The demo's configuration as shipped, but for its state directory and
# admin socket (a fixed place in /tmp): the test's own, fresh, as
# scripts/quickstart starts the demo (the test hypervisor's pool starts
# empty, so does the demo's state).
sed "s|/tmp/autoscaled-demo|$tmp/state|g" etc/demo.conf >"$tmp/demo.conf"
if grep -q "/tmp/autoscaled-demo" "$tmp/demo.conf" || ! grep -q "$tmp/state" "$tmp/demo.conf"; then
	echo "Bail out! etc/demo.conf no longer keeps its state in /tmp/autoscaled-demo"
	exit 1
fi
"$AUTOSCALED" -f -c "$tmp/demo.conf" > "$tmp/out" 2>&1 &
pid=$!
watch_pid "$pid" autoscaled "$tmp/out"
# Up to 60 s until both directions were seen (at once if the daemon dies).
both_directions() { grep -q "scaled out from" "$tmp/out" && grep -q "scaled in from" "$tmp/out"; }
uptime_cs
t0=$UPTIME_CS
wait_for 60 both_directions
uptime_cs
i=$(((UPTIME_CS - t0 + 50) / 100))
stop_pid "$pid" INT
rc=$?
[ $rc -eq 0 ] && ok "Ctrl-C stops the demo cleanly" || not_ok "Ctrl-C stops the demo cleanly (exit $rc)"
grep -q "ready: 1 group" "$tmp/out" && ok "the daemon says it is ready" || not_ok "the daemon says it is ready"
if grep -q "scaled out from" "$tmp/out"; then ok "scale-out within a minute (after ${i} s)"; else not_ok "scale-out within a minute"; fi
if grep -q "scaled in from" "$tmp/out"; then ok "scale-in within a minute (after ${i} s)"; else not_ok "scale-in within a minute"; fi
# Each action comes with its reason: the signal, its value and its target.
if grep -E "requests [0-9.]+ vs 0.5/instance -> [0-9]+" "$tmp/out" | grep -q "scale out"; then
	ok "scale-out decisions say why"
else
	not_ok "scale-out decisions say why"
fi
if grep -q "stabilization window" "$tmp/out"; then ok "holds name the stabilization window"; else not_ok "holds name the stabilization window"; fi
grep -q "agent: stopped" "$tmp/out" && ok "it logs that it stopped" || not_ok "it logs that it stopped"
[ "$tap_failed" -eq 0 ] || sed 's/^/# /' "$tmp/out" | tail -40
tap_done
