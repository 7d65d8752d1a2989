#!/bin/sh
# The exec source: argv without a shell, the last number on stdout, the
# timeout killing the whole process group, and a non-zero exit reported
# with its status and the start of stderr.
. "${top_srcdir:?}/tests/integration/lib.sh"
need sh sleep

x() { echo "source = \"exec\"; $1"; }

expect_ok "the last number printed" 42 "$(x 'command = ["sh", "-c", "echo depth 17; echo items: 42"];')"
expect_ok "a command string split at blanks, no shell" 3 "$(x 'command = "expr 1 + 2";')"
expect_ok "shell = true runs a pipeline" 3 "$(x 'shell = true; command = "printf \"a\nb\nc\n\" | wc -l";')"
probe "$(x 'command = ["echo", "$HOME;", "7"];')"
if probe_status_is 0 && grep -q 'ok 7 ' "$TMP/out"; then ok "without a shell, arguments are not expanded"; else not_ok "without a shell"; fi
expect_invalid "a non-zero exit is invalid with status and stderr" EIO "exit status 3: disk on fire" \
	"$(x 'shell = true; command = "echo 12; echo disk on fire >&2; exit 3";')"
expect_invalid "death by a signal is invalid" EIO "killed by signal 9" "$(x 'shell = true; command = "kill -9 $$";')"
expect_invalid "no number is invalid" ENODATA "printed no number" "$(x 'command = ["echo", "nothing"];')"
expect_invalid "NaN is invalid" ENODATA "printed no number" "$(x 'command = ["echo", "nan"];')"
expect_invalid "a missing program is invalid" ENOENT "cannot run 'no-such-program-here'" \
	"$(x 'command = ["no-such-program-here"];')"
expect_invalid "more than 1 MiB of output is refused" EFBIG "more than 1 MiB" \
	"$(x 'shell = true; command = "head -c 2000000 /dev/zero | tr \"\\\\0\" 1";')"

# A command that forks a grandchild and hangs: after the timeout the whole
# process group is killed, so the grandchild is gone too.
probe "$(x "timeout = 600; shell = true; command = \"sleep 30 & echo \$! > $TMP/grandchild; wait\";")"
e=$(field 4)
if probe_status_is 1 && [ "$(field 3)" = ETIMEDOUT ] && [ "$e" -ge 550 ] && [ "$e" -le 3000 ]; then
	ok "a hung command is killed after its timeout ($e ms)"
else
	not_ok "a hung command is killed after its timeout"
fi
gc=$(cat "$TMP/grandchild" 2>/dev/null)
# Gone means no such process, or a zombie waiting for an init that may not
# reap (containers): pid_alive says no to both. SIGKILL is delivered
# asynchronously, so give it a moment.
if [ -n "$gc" ] && wait_for 10 eval '! pid_alive "$gc"'; then
	ok "the timeout kills the process group (grandchild $gc is gone)"
else
	not_ok "the timeout kills the process group"
	[ -n "$gc" ] && kill "$gc" 2>/dev/null
fi

# Freeing the source mid-run kills the command and reaps it.
probe -K "$TMP/victim" "$(x "timeout = 5000; shell = true; command = \"echo \$\$ > $TMP/victim.tmp; mv $TMP/victim.tmp $TMP/victim; exec sleep 30\";")"
v=$(cat "$TMP/victim" 2>/dev/null)
if probe_status_is 1 && grep -q "s0 cancelled" "$TMP/out" && grep -q "^children reaped" "$TMP/out" && [ -n "$v" ] && [ ! -e "/proc/$v" ]; then
	ok "freeing a source mid-run kills its command and reaps it"
else
	not_ok "freeing a source mid-run kills its command and reaps it"
	[ -n "$v" ] && kill "$v" 2>/dev/null
fi

# A command that holds memory dies slowly after SIGKILL, so the cancel
# cannot reap it at once: the background reaper must, and the loop must
# survive it (it used to release its event source twice and abort).
cat > "$TMP/hog.py" <<'PY'
import os, sys, time
hold = bytearray(400 << 20)
for i in range(0, len(hold), 4096):
    hold[i] = 1
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(60)
PY
if command -v python3 >/dev/null; then
	probe -K "$TMP/hog" "$(x "timeout = 30000; command = [\"python3\", \"$TMP/hog.py\", \"$TMP/hog\"];")"
	h=$(cat "$TMP/hog" 2>/dev/null)
	if probe_status_is 1 && grep -q "s0 cancelled" "$TMP/out" && grep -q "^children left" "$TMP/out" &&
		grep -q "^children reaped" "$TMP/out" && [ -n "$h" ] && [ ! -e "/proc/$h" ]; then
		ok "a slowly dying command is reaped in the background ($(grep '^children reaped' "$TMP/out" | cut -d' ' -f3) ms)"
	else
		not_ok "a slowly dying command is reaped in the background (probe status $probe_rc)"
		[ -n "$h" ] && kill -9 "$h" 2>/dev/null
	fi
	# Without pidfd_open(2) (old kernels, valgrind) a timer polls
	# waitpid(2) instead: strace makes the call fail to take that path.
	if command -v strace >/dev/null && strace -qq -o /dev/null -e inject=pidfd_open:error=ENOSYS true 2>/dev/null; then
		rm -f "$TMP/hog"
		probe_pre="strace -qq -o /dev/null -e trace=pidfd_open -e inject=pidfd_open:error=ENOSYS"
		$probe_pre "$PROBE" -K "$TMP/hog" \
			"$(x "timeout = 30000; command = [\"python3\", \"$TMP/hog.py\", \"$TMP/hog\"];")" >"$TMP/out" 2>&1
		probe_rc=$?
		sed 's/^/# /' "$TMP/out"
		h=$(cat "$TMP/hog" 2>/dev/null)
		if grep -q "^children left" "$TMP/out" && grep -q "^children reaped" "$TMP/out" &&
			[ -n "$h" ] && [ ! -e "/proc/$h" ]; then
			ok "without pidfd_open, the polling reaper collects it too"
		else
			not_ok "without pidfd_open, the polling reaper collects it too (probe status $probe_rc)"
			[ -n "$h" ] && kill -9 "$h" 2>/dev/null
		fi
	else
		ok "# SKIP strace cannot inject a failing pidfd_open here"
	fi
else
	ok "# SKIP python3 is missing"
	ok "# SKIP python3 is missing"
fi

# Many polls in a row leave no zombie or descriptor behind.
probe -n 20 -i 10 "$(x 'command = ["echo", "5"];')"
if probe_status_is 0 && [ "$(grep -c ' ok 5 ' "$TMP/out")" = 20 ]; then ok "20 runs in a row"; else not_ok "20 runs in a row"; fi

probe "$(x 'shell = true; command = ["a", "b"];')"
if [ "$probe_rc" = 2 ] && grep -q "command must be one string" "$TMP/out"; then ok "shell = true wants one string"; else not_ok "shell = true wants one string"; fi
probe "$(x '')"
if [ "$probe_rc" = 2 ] && grep -q "option 'command' is required" "$TMP/out"; then ok "command is required"; else not_ok "command is required"; fi
tap_done
