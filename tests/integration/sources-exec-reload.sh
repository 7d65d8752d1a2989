#!/bin/bash
# A reload that lands while an exec source's command runs: the old source
# is freed mid-run, its command killed, and the child left to a background
# reaper. The command holds a few hundred MiB, so after SIGKILL it takes a
# while to die and the reaper, not the cancel itself, collects it. Both
# reload routes (SIGHUP and autoscalectl reload) must leave the daemon
# running and the command reaped: no process, no zombie.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/integration/ops-lib.sh"
command -v python3 >/dev/null || skip_all "python3 is missing"

# The command: allocates and touches MEM MiB, writes its pid, then sleeps
# far past any reload. Each configuration gets another file name, so the
# signal changes and a reload must replace the source.
cat > "$T/hog.py" <<'PY'
import os, sys, time
hold = bytearray(int(sys.argv[2]) << 20)
for i in range(0, len(hold), 4096):
    hold[i] = 1
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(60)
print(1)
PY

# conf ROUND: a group whose only signal is the hog for this round.
conf() {
	cat > "$T/autoscaled.conf" <<CONF
agent = {
  interval = "1s";
  state_directory = "$T/state";
  admin_socket = "$T/admin.sock";
  driver_directory = "$POOL_DRIVERS";
};
groups = ( {
  name = "web"; driver = "filepool"; min = 1; max = 8;
  driver_options = { pool = "$T/pool"; calls = "$T/calls"; };
  signals = ( { name = "hog"; source = "exec"; type = "average"; target = 10.0;
                source_options = { command = [ "python3", "$T/hog.py", "$T/pid.$1", "400" ]; };
                poll_interval = "30m"; timeout = "30m"; window = "1h"; aggregation = "last"; } );
} );
CONF
}

# state PID: the process's state letter, empty once it is gone.
state() { awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null; }
gone() { [ -z "$(state "$1")" ]; }
# wait_alive SECONDS COMMAND...: wait_for, but a dead daemon fails at once.
wait_alive() {
	local n=$(($1 * 5)); shift
	while [ "$n" -gt 0 ] && kill -0 "$DAEMON_PID" 2>/dev/null; do
		"$@" && return 0
		sleep 0.2
		n=$((n - 1))
	done
	return 1
}
reloaded() { [ "$(grep -c "agent: reloaded" "$T/daemon.log")" -ge "$1" ]; }

conf 1
start_daemon || { not_ok "the daemon starts"; cat "$T/daemon.log"; tap_done; exit 1; }

n=0
for route in SIGHUP "autoscalectl reload"; do
	n=$((n + 1))
	check "round $n: the command runs and holds its memory" wait_alive 20 test -s "$T/pid.$n"
	pid=$(cat "$T/pid.$n")
	conf $((n + 1))
	if [ "$route" = SIGHUP ]; then
		kill -HUP "$DAEMON_PID"
	else
		ctl reload >/dev/null
	fi
	check "a reload by $route mid-command is done" wait_alive 10 reloaded "$n"
	check "the command is reaped after a reload by $route (no process, no zombie)" wait_alive 10 gone "$pid"
	check "the daemon survived the reaper after a reload by $route" kill -0 "$DAEMON_PID"
	check "the admin API answers after a reload by $route" ctl status
	kill -0 "$DAEMON_PID" 2>/dev/null || break
done
[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
stop_daemon
tap_done
