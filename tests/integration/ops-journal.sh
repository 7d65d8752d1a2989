#!/bin/bash
# Quiet logs: over a steady stretch (the signal's value moves, what the
# group should be does not) the decisions go at DEBUG, not INFO; an action
# goes at INFO again. In the foreground the level shows on stderr: DEBUG
# lines (shown with -v) start with "debug: ", INFO and NOTICE lines with
# the group's name. The journal's own fields are checked by the unit test
# test-log: journald does not run where the tests do.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/integration/ops-lib.sh"
command -v python3 >/dev/null || skip_all "python3 is not installed"

# The queue moves between 21 and 29 at each poll: 3 instances' worth
# (target 10) every time.
cat > "$T/load.sh" <<'SH'
#!/bin/sh
n=$(cat "$1/n" 2>/dev/null || echo 0)
echo $((n + 1)) > "$1/n"
if [ -f "$1/high" ]; then echo 55; else echo $((21 + n % 9)); fi
SH
write_conf
sed -i "s|\"/bin/cat\", \"$T/load\"|\"/bin/sh\", \"$T/load.sh\", \"$T\"|" "$T/autoscaled.conf"
check "the signal runs the moving load" grep -q "load.sh" "$T/autoscaled.conf"

DAEMON_ARGS=-v start_daemon
check "the group scales out to 3" wait_for 30 pool_is 3
# The scale-out's completion and the first decision after it (a change:
# no action any more) are behind us after two more evaluations.
check "two evaluations after the scale-out" wait_evaluations 2
from=$(wc -l < "$T/daemon.log")
check "ten steady evaluations" wait_evaluations 10
tail -n +"$((from + 1))" "$T/daemon.log" > "$T/span"

debug=$(grep -c "^debug: web: " "$T/span")
info=$(grep -c "^web: " "$T/span")
values=$(ctl --json history web | python3 -c 'import json, sys
print(len({s["value"] for d in json.load(sys.stdin)["decisions"][-10:] for s in d["signals"]}))')
check "the value moved during the stretch ($values distinct values in the last 10 decisions)" \
	test "$values" -ge 3
check "every steady evaluation is logged at DEBUG ($debug lines)" test "$debug" -ge 10
check "no INFO (or higher) line of the group in the steady stretch ($info)" test "$info" -eq 0
[ "$info" -eq 0 ] || sed "s/^/# /" "$T/span"
check "the pool stayed at 3" pool_is 3

# An action is at INFO again, and so is the decision that follows it
# (the action changed back to none).
from=$(wc -l < "$T/daemon.log")
: > "$T/high"
check "the group scales out to 6" wait_for 30 pool_is 6
check "the scale-out decision is at INFO" \
	wait_for 10 eval "tail -n +$((from + 1)) '$T/daemon.log' | grep -q '^web: .*scale out 3 -> 6'"
check "its completion is at INFO or higher" \
	wait_for 10 eval "tail -n +$((from + 1)) '$T/daemon.log' | grep -q '^web: scaled out from 3 to 6'"
check "the next decision (no action) is at INFO" \
	wait_for 10 eval "tail -n +$((from + 1)) '$T/daemon.log' | grep -q '^web: .*no change from 6'"

# A pause is another hold reason: its first decision is at INFO, the
# ones after it at DEBUG again, and so for the resume.
from=$(wc -l < "$T/daemon.log")
check "paused" eval 'ctl pause web --for 1h >/dev/null'
check "the first paused decision is at INFO" \
	wait_for 10 eval "tail -n +$((from + 1)) '$T/daemon.log' | grep -q '^web: .*paused by an operator'"
check "the next ones are at DEBUG" \
	wait_for 10 eval "tail -n +$((from + 1)) '$T/daemon.log' | grep -q '^debug: web: .*paused by an operator'"
check "only one paused decision at INFO" \
	test "$(tail -n +$((from + 1)) "$T/daemon.log" | grep -c '^web: .*paused by an operator')" -eq 1
from=$(wc -l < "$T/daemon.log")
check "resumed" eval 'ctl resume web >/dev/null'
check "the first decision after the resume is at INFO" \
	wait_for 10 eval "tail -n +$((from + 1)) '$T/daemon.log' | grep -q '^web: .*no change from 6\$'"

check "the daemon stops cleanly" stop_daemon

# The ids operators select with are documented, each of them.
ids=$(sed -n 's/^#define LOG_ID_[A-Z_]* "\([0-9a-f]*\)"$/\1/p' "$top_srcdir/src/log/log-ids.h")
check "four message ids are defined" test "$(echo "$ids" | wc -l)" -eq 4
for id in $ids; do
	check "message id $id is in autoscaled(8) and the README" \
		eval "grep -q '^\.B $id\$' '$top_srcdir/man/autoscaled.8' && grep -q 'MESSAGE_ID=$id' '$top_srcdir/README.md'"
done
tap_done
