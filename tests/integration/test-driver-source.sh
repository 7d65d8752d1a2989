#!/bin/bash
# A source the driver feeds (as libvirt feeds libvirt_cpu): the filepool
# test driver declares filepool_load in its descriptor and reports each
# member's value from its load file with every observation; the daemon
# reads it as a signal of the group, with no endpoint polled. Its reading
# is the mean over the members that count, and no value is an invalid
# reading, never zero: the group holds until values arrive, then acts on
# them.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/integration/ops-lib.sh"

# Two members created long ago, past any initialization period.
printf 'next 3\nvm-1 1000\nvm-2 1000\n' > "$T/pool"
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
  signals = ( { name = "cpu"; source = "filepool_load"; type = "utilization"; target = 50.0;
                window = "3s"; aggregation = "last"; staleness = "5s"; } );
  behavior = { initialization_period = "1h"; scale_in = { stabilization = "2s"; policies = ( ); };
               scale_out = { policies = ( ); }; };
} );
CONF

out=$("$AUTOSCALED" -n -c "$T/autoscaled.conf" 2>&1)
check "-n accepts a signal of the driver's own source ($out)" test $? -eq 0

start_daemon || { not_ok "the daemon starts"; cat "$T/daemon.log"; tap_done; exit 1; }
check "without values the reading is invalid and says why" wait_for 15 cpu_is '
assert not s["valid"] and s["value"] is None, s
assert "no ready member has a value of '"'filepool_load'"' yet" in s["reason"], s'
check "and nothing is done on it (calls: $(tr '\n' ';' < "$T/calls"))" wait_evaluations 3
check "no driver call acted" test ! -s "$T/calls"
check "the pool stayed at 2" pool_is 2

# A member the file names that the pool does not have counts for nothing.
printf 'vm-1 90\nvm-2 90\nvm-99 0\n' > "$T/values.tmp" && mv "$T/values.tmp" "$T/values"
check "the members' values reach the signal: 90" wait_for 15 cpu_is 'assert s["valid"] and s["value"] == 90, s'
check "and the group scales out on them: 2 -> 4" wait_for 15 grep -q ' set_capacity 2 4$' "$T/calls"
check "that was its first action" test "$(head -1 "$T/calls" | cut -d' ' -f2-)" = "set_capacity 2 4"
# Where each member lives, as the driver reports it (filepool: the pool
# file), reaches the operator.
out=$(ctl --json members web)
check "members --json carry the driver's location" python3 -c '
import json, sys
m = json.loads(sys.argv[1])
assert len(m) >= 2 and all(x["location"] == sys.argv[2] for x in m), m' "$out" "$T/pool"
check "autoscalectl members shows it" eval 'ctl members web | head -1 | grep -q " LOCATION\$" &&
	ctl --no-legend members web | grep -q " running  *yes .* $T/pool\$"'
stop_daemon
check "the daemon stops cleanly" test $? -eq 0
tap_done
