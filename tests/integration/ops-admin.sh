#!/bin/bash
# The admin API through autoscalectl against a running daemon: every
# command (a mistyped one gets the near one), their effect on the group,
# --json, --no-legend, exit codes for refusals,
# unknown groups, usage and permission, and raw bad requests.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/integration/ops-lib.sh"

set_load 20
write_conf "" 'admin_group = "nogroup";'
start_daemon || { not_ok "the daemon starts"; cat "$T/daemon.log"; tap_done; exit 1; }
check "the pool follows the load to 2" wait_for 30 pool_is 2

out=$(ctl status); rc=$?
check "status: a table with the group (rc $rc)" test $rc -eq 0 -a -n "$(echo "$out" | grep -E '^web +2 +2 +default +active')"
out=$(ctl --json status)
check "status --json is JSON naming the group" python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["groups"][0]["name"]=="web" and d["groups"][0]["desired"]==2' "$out"
out=$(ctl show web)
check "show: current, desired and the last decision" test -n "$(echo "$out" | grep '^current: *2')" -a -n "$(echo "$out" | grep '^last: ')"
out=$(ctl explain web)
check "explain: the sentence and one line per signal" test -n "$(echo "$out" | grep -E '^  queue +value 20, target 10 -> 2 instances')"
# The steps line must show the record's own current count (the one the
# sentence ends with: "scale out N -> 2" or "no change from N").
cur=$(echo "$out" | sed -n 's/.*scale out \([0-9]*\) -> 2$/\1/p; s/.*no change from \([0-9]*\)$/\1/p' | head -1)
check "explain: every step's count is its own (current ${cur:-?})" test -n "$cur" -a -n "$(echo "$out" | grep -E "^steps: current $cur, combined 2, clamped 2, stabilized 2, rate-limited 2, final 2$")"
two_decisions() { [ "$(ctl history web | grep -c ' -> 2 ')" -ge 2 ]; }
check "history: recent decisions, one per line, with their sentence" wait_for 20 two_decisions
ctl show nosuch 2>/dev/null; rc=$?
check "an unknown group: exit 4 (got $rc)" test $rc -eq 4
ctl bogus 2>/dev/null; rc=$?
check "an unknown command: exit 2 (got $rc)" test $rc -eq 2
# A mistyped command: one line naming the near command, not the usage.
err=$(ctl stauts 2>&1); rc=$?
check "a mistyped command suggests the near one, in one line: $err" \
	test $rc -eq 2 -a "$err" = "autoscalectl: unknown command 'stauts'; did you mean 'status'?"
err=$(ctl explian web 2>&1)
check "explian: did you mean 'explain'?" test "$err" = "autoscalectl: unknown command 'explian'; did you mean 'explain'?"
err=$(ctl frobnicate 2>&1); rc=$?
check "a command near none: exit 2, the commands listed in one line" eval '
	test $rc -eq 2 -a "$(echo "$err" | wc -l)" -eq 1 && echo "$err" | grep -q "the commands are: status show .* reload"'
# --no-legend: the table without its header, for scripts.
out=$(ctl --no-legend status)
check "status --no-legend: no header, the group's row first" eval '
	! echo "$out" | grep -q "^GROUP" && echo "$out" | head -1 | grep -q "^web "'
check "status without it keeps the header" eval 'ctl status | head -1 | grep -q "^GROUP *CURRENT *DESIRED"'
# members: one line per instance, as the driver observed them.
members_are() { [ "$(ctl --no-legend members web | grep -c ' running  *yes ')" -eq "$1" ]; }
check "members: the pool's 2 instances, running and ready" wait_for 10 members_are 2
out=$(ctl members web)
check "members: a header, then the instances with their age" eval '
	echo "$out" | head -1 | grep -q "^MEMBER *STATE *READY *AGE" &&
	test "$(echo "$out" | grep -cE "^[^ ]+ +running +yes +[0-9]+(s|m[0-9]+s) ")" -eq 2'
out=$(ctl --json members web)
check "members --json: the array of members" python3 -c '
import json, sys
m = json.loads(sys.argv[1])
assert len(m) == 2 and all(x["state"] == "running" and x["ready"] is True and x["created"] for x in m), m' "$out"
ctl members nosuch 2>/dev/null; rc=$?
check "members of an unknown group: exit 4 (got $rc)" test $rc -eq 4

# Pin: within the bounds, outside them refused, forced, expiry required.
ctl pin web 5 --for 1h >/dev/null; rc=$?
check "pin web 5 --for 1h (rc $rc)" test $rc -eq 0
check "the pin holds the group at 5" wait_for 30 pool_is 5
out=$(ctl show web)
check "show says pinned with its expiry" test -n "$(echo "$out" | grep -E '^pinned: +5 until 20[0-9-]+T')"
err=$(ctl pin web 20 --for 1h 2>&1); rc=$?
check "a pin outside [1, 8] is refused: exit 1 with the bounds (rc $rc)" test $rc -eq 1 -a -n "$(echo "$err" | grep 'bounds \[1, 8\]')"
check "the refusal names the flag that overrides it: $err" eval 'echo "$err" | grep -q -- "with --force"'
ctl pin web 3 2>/dev/null; rc=$?
check "a pin without an expiry is a usage error: exit 2 (rc $rc)" test $rc -eq 2
out=$(ctl --json pin web 9 --for 30m --force); rc=$?
check "a forced pin outside the bounds, --json answer" python3 -c 'import json,sys; assert json.loads(sys.argv[1])["result"]=="pinned"' "$out"
check "the forced pin takes the group to 9" wait_for 30 pool_is 9
check "the state file keeps the pin" python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["pin"]; assert p["count"]==9 and p["forced"] is True' "$T/state/web.state"
ctl unpin web >/dev/null; rc=$?
check "unpin (rc $rc)" test $rc -eq 0
check "unpinned, the group returns to what the load asks (2)" wait_for 30 pool_is 2
ctl unpin web 2>/dev/null; rc=$?
check "unpin when not pinned: exit 1 (rc $rc)" test $rc -eq 1

# Pause: evaluate and log, never act.
ctl pause web --for 1h >/dev/null; rc=$?
check "pause --for 1h (rc $rc)" test $rc -eq 0
set_load 60
# The daemon has decided on the new load, and not acted on it.
check "paused: the decision on the new load says the pause holds it" \
	wait_for 20 grep -Eq "queue 60 vs 10/instance -> 6.*paused by an operator: not acting" "$T/daemon.log"
check "paused: the load rose to 6 instances' worth, the pool stays at 2" pool_is 2
out=$(ctl explain web)
check "explain shows the decision and the pause" test -n "$(echo "$out" | grep 'paused')" -a -n "$(echo "$out" | grep 'value 60')"
out=$(ctl status)
check "status shows the pause" test -n "$(echo "$out" | grep -E '^web .* paused')"
ctl resume web >/dev/null; rc=$?
check "resume (rc $rc)" test $rc -eq 0
check "resumed, the group scales out to 6" wait_for 30 pool_is 6
ctl resume web 2>/dev/null; rc=$?
check "resume when not paused: exit 1 (rc $rc)" test $rc -eq 1
ctl pause web --until 2000-01-01T00:00:00Z 2>/dev/null; rc=$?
check "a pause until a time in the past: exit 1 (rc $rc)" test $rc -eq 1
pause_over() { python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["pause"] is not None)' "$T/state/web.state"; }
ctl pause web --for 3s >/dev/null
check "a pause for 3 s is in the state file" eval '! pause_over'
check "a pause expires by itself" wait_for 20 pause_over

# Dry run per group.
ctl dry-run web on >/dev/null; rc=$?
check "dry-run web on (rc $rc)" test $rc -eq 0
set_load 20
check "in dry run the daemon decides to scale in, and says it does not act" \
	wait_for 20 grep -Eq "\(dry run, not acting\) .*scale in 6 -> 2" "$T/daemon.log"
check "in dry run the pool stays at 6" pool_is 6
check "status shows the dry run" test -n "$(ctl status | grep -E '^web .*dry run')"
ctl dry-run web off >/dev/null
check "dry run off: the group scales in to 2" wait_for 30 pool_is 2
ctl dry-run web maybe 2>/dev/null; rc=$?
check "dry-run with neither on nor off: exit 2 (rc $rc)" test $rc -eq 2

# Reload: a good one, then a broken one that is refused with its reason.
ctl reload >/dev/null; rc=$?
check "reload (rc $rc)" test $rc -eq 0
cp "$T/autoscaled.conf" "$T/good.conf"
echo 'groups = ( { name = "web"; min = 5; max = 2; } );' > "$T/autoscaled.conf"
err=$(ctl reload 2>&1); rc=$?
check "a broken reload: exit 1 naming file and line (rc $rc)" test $rc -eq 1 -a -n "$(echo "$err" | grep 'autoscaled.conf:1:')"
cp "$T/good.conf" "$T/autoscaled.conf"
check "the daemon still serves after the broken reload" eval 'ctl show web >/dev/null'
# A file that reads well but whose source refuses an option: the reload
# checks what -n checks before it replaces anything, and says where.
sed -e 's/command = \[/comand = [/' "$T/good.conf" > "$T/autoscaled.conf"
line=$(grep -n 'comand = ' "$T/autoscaled.conf" | cut -d: -f1)
err=$(ctl reload 2>&1); rc=$?
check "a reload with a bad source option: exit 1 naming the option at its line (rc $rc: $err)" \
	test $rc -eq 1 -a -n "$(echo "$err" | grep "autoscaled.conf:$line: signal 'queue': source 'exec': unknown option 'comand'")"
cp "$T/good.conf" "$T/autoscaled.conf"
check "the daemon still serves after the refused reload" eval 'ctl show web >/dev/null'

# Raw requests a client library could make.
if command -v curl >/dev/null; then
	code() { curl -s -o /dev/null -w '%{http_code}' --unix-socket "$T/admin.sock" "$@"; }
	check "GET /v1/health: 200" test "$(code http://l/v1/health)" = 200
	check "DELETE /v1/groups/web: 405" test "$(code -X DELETE http://l/v1/groups/web)" = 405
	check "POST pause with a typo: 400" test "$(code -d '{"fro":"1h"}' http://l/v1/groups/web/pause)" = 400
	check "POST pin with a body of 8 KiB: 413" test "$(code --data-binary @<(head -c 8192 /dev/zero | tr '\0' ' ') http://l/v1/groups/web/pin)" = 413
	check "an unknown path: 404 with a JSON error" test "$(curl -s --unix-socket "$T/admin.sock" http://l/v2 | python3 -c 'import json,sys; print(json.load(sys.stdin)["error"][:7])')" = "no such"
	# A newline in a path (405s are logged) must not forge a log line.
	check "a path with %0a: 405" test "$(code 'http://l/v1/groups/x%0aerror:%20web:%20forged/pause')" = 405
	check "the log shows the newline escaped" wait_for 5 grep -qF 'admin: GET /v1/groups/x\nerror: web: forged/pause: 405' "$T/daemon.log"
	check "the log has no forged line" eval '! grep -q "^error: web: forged" "$T/daemon.log"'
	# Invalid UTF-8 in a path is refused, and the reply is still UTF-8 JSON.
	check "a path with invalid UTF-8: 400" test "$(code 'http://l/v1/groups/w%ffb')" = 400
	check "the 400 is valid UTF-8 JSON" eval "curl -s --unix-socket '$T/admin.sock' 'http://l/v2%c0%af' |
		python3 -c 'import json,sys; assert \"UTF-8\" in json.loads(sys.stdin.buffer.read().decode(\"utf-8\"))[\"error\"]'"
else
	ok "# SKIP curl is not installed"
fi

# Permission: the socket is 0660, owned by the configured group.
check "the socket is mode 0660, group nogroup" test "$(stat -c '%a %G' "$T/admin.sock")" = "660 nogroup"
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	err=$(setpriv --reuid=nobody --regid=daemon --clear-groups "$CTL" -s "$T/admin.sock" status 2>&1); rc=$?
	check "a user outside the group is denied: exit 3, 'permission denied' (rc $rc)" test $rc -eq 3 -a -n "$(echo "$err" | grep 'permission denied')"
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$CTL" -s "$T/admin.sock" status >/dev/null; rc=$?
	check "a member of the admin group may use it (rc $rc)" test $rc -eq 0
	# Every change is logged with the caller's uid, from the socket.
	nobody=$(id -u nobody)
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$CTL" -s "$T/admin.sock" pause web --for 1m >/dev/null
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$CTL" -s "$T/admin.sock" resume web >/dev/null
	logged() { grep -qE "admin: $1: 200 \(uid $2, pid [0-9]+\)" "$T/daemon.log"; }
	check "the log names uid $nobody for its pause and its resume" eval '
		wait_for 5 logged "POST /v1/groups/web/pause" "$nobody" && logged "POST /v1/groups/web/resume" "$nobody"'
	check "and uid 0 for root's pin" logged "POST /v1/groups/web/pin" 0
	check "a read is not logged" eval '! grep -q "admin: GET /v1/groups: 200" "$T/daemon.log"'
else
	ok "# SKIP not root or no setpriv: permission checks need another user"
	ok "# SKIP not root or no setpriv"
	ok "# SKIP not root or no setpriv"
	ok "# SKIP not root or no setpriv"
	ok "# SKIP not root or no setpriv"
fi
stop_daemon
ctl status 2>/dev/null; rc=$?
check "no daemon: exit 3 (rc $rc)" test $rc -eq 3
check "the stopped daemon removed its socket" test ! -e "$T/admin.sock"
tap_done
