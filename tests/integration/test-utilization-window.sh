#!/bin/bash
# A utilization window outlives a scale-out. The busiest reading of the
# last minute was taken with two members ready at 100 %; once four are
# ready the same load reads 50 % on each. Read as 100 % of four, the
# window's peak would ask for eight: a second scale-out the load never
# needed. The daemon re-expresses the window's samples over the members
# ready now (README, design choices), for a source the driver feeds (a
# mean over the members with a value) and for one it polls (a mean over
# the members that count when it answers). The driver's calls are
# counted.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/integration/ops-lib.sh"

# conf SOURCE-LINE: the group "web" at 50 % a member, its busiest reading
# of a minute. New members count after 15 s: the readings change to the
# four's before the daemon counts them (a reading of 100 % with four ready
# would rightly ask for eight).
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
  driver_options = { pool = "$T/pool"; calls = "$T/calls"; load = "$T/values"; };
  signals = ( { name = "cpu"; $1 type = "utilization"; target = 50.0;
                window = "60s"; aggregation = "max"; staleness = "5s"; tolerance = 0.0; } );
  behavior = { initialization_period = "15s"; scale_in = { stabilization = "1m"; policies = ( ); };
               scale_out = { policies = ( ); }; };
} );
CONF
}

# every_member VALUE: each member of the pool reads VALUE.
every_member() {
	awk -v v="$1" 'NR > 1 { print $1, v }' "$T/pool" > "$T/values.tmp" && mv "$T/values.tmp" "$T/values"
}
set_cpu() { echo "$1" > "$T/cpu.tmp" && mv "$T/cpu.tmp" "$T/cpu"; }

# run WHAT: two members at 100 %, the scale-out to four, then 50 % on each
# of the four; WHAT says where the readings come from.
run() {
	printf 'next 3\nvm-1 1000\nvm-2 1000\n' > "$T/pool"
	: > "$T/calls"
	rm -rf "$T/state"
	every_member 100
	set_cpu 100
	start_daemon || { not_ok "$1: the daemon starts"; cat "$T/daemon.log"; return 1; }
	check "$1: two members at 100 % against 50 %: 2 -> 4" wait_for 20 grep -q ' set_capacity 2 4$' "$T/calls"
	check "$1: the pool has four" wait_for 10 pool_is 4
	# The load spread over the four: 50 % each.
	every_member 50
	set_cpu 50
	check "$1: the window's peak is 100 % of two, 50 % of four" wait_for 40 cpu_is '
assert s["valid"] and abs(s["value"] - 50) < 1e-9 and s["recommendation"] == 4, s'
	# The 100 % readings stay in the window for a minute: evaluations
	# within it.
	check "$1: and no second scale-out while they are in the window" wait_evaluations 8
	check "$1: one driver call in all ($(tr '\n' ';' < "$T/calls"))" test "$(wc -l < "$T/calls")" -eq 1
	check "$1: the pool stayed at 4" pool_is 4
	stop_daemon
	check "$1: the daemon stops cleanly" test $? -eq 0
}

conf 'source = "filepool_load";'
run "fed by the driver"
conf "source = \"exec\"; source_options = { command = [ \"cat\", \"$T/cpu\" ]; }; poll_interval = \"1s\";"
run "polled"
tap_done
