#!/bin/bash
# FIFOs where the daemon expects regular files: as the configuration, as an
# include (plain, and nested), as a state file and as the webhook's secret.
# Opening a FIFO to read it waits for a writer; each case must instead give
# a clear error at once, with -n and on a reload by either route, and the
# daemon must keep running. Every command runs under `timeout`, so a hang
# fails its check instead of the whole suite.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/integration/ops-lib.sh"
command -v python3 >/dev/null || skip_all "python3 is not installed"

# Fast enough for an error that needs no waiting, slow enough for a loaded
# machine; a FIFO that blocks never answers at all.
LIMIT_MS=2000

# timed VAR COMMAND...: runs COMMAND (output in $T/out, status in rc),
# with its duration in ms in VAR.
timed() {
	local var=$1 t0; shift
	t0=$(date +%s%3N)
	timeout 5 "$@" > "$T/out" 2>&1
	rc=$?
	eval "$var=\$((\$(date +%s%3N) - t0))"
}
quick() { [ "$1" -lt "$LIMIT_MS" ]; }

mkfifo "$T/fifo.conf" "$T/fifo.inc" "$T/secret"

timed ms "$AUTOSCALED" -n -c "$T/fifo.conf"
check "-n on a FIFO as the configuration fails at once ($ms ms, status $rc)" eval 'quick $ms && [ $rc -eq 1 ]'
check "... saying it is not a regular file" grep -q "fifo.conf: cannot read: not a regular file" "$T/out"
timed ms "$AUTOSCALED" -f -c "$T/fifo.conf"
check "the daemon on a FIFO as the configuration stops at once ($ms ms, status $rc)" eval 'quick $ms && [ $rc -eq 1 ]'

write_conf
cp "$T/autoscaled.conf" "$T/good.conf"
printf '@include "%s/fifo.inc"\n' "$T" >> "$T/autoscaled.conf"
timed ms "$AUTOSCALED" -n -c "$T/autoscaled.conf"
check "-n on an include that is a FIFO fails at once ($ms ms, status $rc)" eval 'quick $ms && [ $rc -eq 1 ]'
check "... naming the line and the file" grep -q "autoscaled.conf:[0-9]*: cannot read '$T/fifo.inc': not a regular file" "$T/out"
# libconfig reads an include's includes relative to the main file's
# directory.
printf '# one more level\n@include "fifo.inc"\n' > "$T/outer.inc"
cp "$T/good.conf" "$T/nested.conf"
printf '@include "%s/outer.inc"\n' "$T" >> "$T/nested.conf"
timed ms "$AUTOSCALED" -n -c "$T/nested.conf"
check "-n on a FIFO included from an include fails at once ($ms ms, status $rc)" eval 'quick $ms && [ $rc -eq 1 ]'
check "... naming the include's line" grep -q "outer.inc:2: cannot read '$T/fifo.inc': not a regular file" "$T/out"

# A FIFO as the state file: a safe start, said in the log.
cp "$T/good.conf" "$T/autoscaled.conf"
mkfifo "$T/state/web.state"
set_load 10
start_daemon || { not_ok "the daemon starts with a FIFO as its state file"; tap_done; exit 1; }
check "the daemon starts with a FIFO as its state file" ctl status
check "... and says why it makes a safe start" \
	wait_for 5 grep -q "state: cannot read '$T/state/web.state': not a regular file; safe start" "$T/daemon.log"
check "... then writes a real state file in its place" wait_for 10 test -f "$T/state/web.state"

# Reloads onto a configuration that includes a FIFO, by both routes.
printf '@include "%s/fifo.inc"\n' "$T" >> "$T/autoscaled.conf"
timed ms "$CTL" -s "$T/admin.sock" reload
check "autoscalectl reload onto a FIFO include is refused at once ($ms ms, status $rc)" eval 'quick $ms && [ $rc -eq 1 ]'
check "... with the reason" grep -q "cannot read '$T/fifo.inc': not a regular file" "$T/out"
n=$(grep -c "reload of .* failed" "$T/daemon.log")
kill -HUP "$DAEMON_PID"
failed_again() { [ "$(grep -c "reload of .* failed" "$T/daemon.log")" -gt "$n" ]; }
check "SIGHUP onto a FIFO include is refused, in the log" wait_for 5 failed_again
timed ms "$CTL" -s "$T/admin.sock" status
check "the daemon keeps running and answering ($ms ms)" eval 'quick $ms && [ $rc -eq 0 ] && kill -0 $DAEMON_PID'

# The webhook's secret as a FIFO: an error at the delivery, not a hang.
python3 "$top_srcdir/tests/helpers/webhook-receiver.py" "$T/port" "$T/requests" "unused" 200 &
EXTRA_PIDS=$!
check "the webhook receiver starts" wait_for 10 test -s "$T/port"
write_conf "
  notifications = { webhook = { url = \"http://127.0.0.1:$(cat "$T/port")/scale\"; secret_file = \"$T/secret\"; }; };"
timed ms "$CTL" -s "$T/admin.sock" reload
check "reload onto a webhook with a FIFO as its secret ($ms ms, status $rc)" eval 'quick $ms && [ $rc -eq 0 ]'
set_load 30
check "the scale-out happens" wait_for 15 pool_is 3
check "the webhook says the secret is not a regular file, and sends nothing" \
	wait_for 5 grep -q "webhook: cannot read the secret '$T/secret': not a regular file; not sending" "$T/daemon.log"
check "nothing was sent unsigned" test ! -s "$T/requests"
timed ms "$CTL" -s "$T/admin.sock" status
check "the daemon keeps running and answering ($ms ms)" eval 'quick $ms && [ $rc -eq 0 ] && kill -0 $DAEMON_PID'
stop_daemon
tap_done
