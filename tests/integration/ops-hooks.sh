#!/bin/bash
# Notifications and hooks with the daemon: the webhook's request received
# by a Python server that verifies its HMAC signature on its own, the
# command hook given the record on stdin, and a pre-scale-in hook that
# refuses to drain one instance, which is then kept while another goes.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/integration/ops-lib.sh"
command -v python3 >/dev/null || skip_all "python3 is not installed"

echo "hook-secret-42" > "$T/secret"
chmod 600 "$T/secret"
python3 "$top_srcdir/tests/helpers/webhook-receiver.py" "$T/port" "$T/requests" "hook-secret-42" 200 \
	> "$T/receiver.log" 2>&1 &
EXTRA_PIDS=$!
watch_pid "$EXTRA_PIDS" webhook-receiver "$T/receiver.log"
wait_for 30 test -s "$T/port" || { not_ok "the webhook receiver starts"; tap_done; exit 1; }
port=$(cat "$T/port")

# The drain hook refuses vm-4 (its work cannot move) and drains the others.
cat > "$T/drain" <<HOOK
#!/bin/sh
echo "\$1 \$AUTOSCALED_GROUP \$AUTOSCALED_INSTANCE" >> "$T/drained"
[ "\$1" != vm-4 ]
HOOK
chmod +x "$T/drain"

write_conf "
  notifications = {
    webhook = { url = \"http://127.0.0.1:$port/scale\"; secret_file = \"$T/secret\"; timeout = \"2s\"; retries = 2; };
    command = [ \"/bin/sh\", \"-c\", \"cat >> $T/records; echo >> $T/records\" ];
  };
  hooks = { pre_scale_in = [ \"$T/drain\" ]; deadline = \"5s\"; };" "" "1s"
set_load 20
start_daemon || { not_ok "the daemon starts"; tap_done; exit 1; }
check "the pool reaches 2" wait_for 30 pool_is 2
set_load 40
check "scale-out to 4" wait_for 30 pool_is 4
check "the webhook received the scale-out" wait_for 10 grep -q 'scale_out' "$T/requests"
check "every webhook request is signed with the secret (verified by the receiver)" \
	python3 -c '
import json,sys
reqs=[json.loads(l) for l in open(sys.argv[1])]
assert reqs and all(r["signature_ok"] for r in reqs), reqs
assert all(r["content_type"]=="application/json" and r["delivery"] and r["path"]=="/scale" for r in reqs)
rec=json.loads(reqs[-1]["body"]); assert rec["group"]=="web" and rec["action"]=="scale_out" and rec["desired"]==4, rec' "$T/requests"
check "the command hook got the decision record on stdin" \
	python3 -c '
import json,sys
recs=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert any(r["action"]=="scale_out" and r["desired"]==4 for r in recs), recs' "$T/records"

set_load 30
check "scale-in to 3" wait_for 30 pool_is 3
check "the drain hook ran for vm-4 (newest, refused) then vm-3" \
	test "$(cut -d' ' -f1 "$T/drained" | tr '\n' ' ')" = "vm-4 vm-3 " -a -n "$(grep '^vm-3 web vm-3$' "$T/drained")"
check "the refused victim is kept, the drained one removed" \
	test -n "$(grep '^vm-4 ' "$T/pool")" -a -z "$(grep '^vm-3 ' "$T/pool")"
check "the driver was asked to remove exactly the drained instance" grep -q ' remove 1 vm-3$' "$T/calls"
check "the webhook received the scale-in" wait_for 10 grep -q 'scale_in' "$T/requests"
# With a drain hook the agent picks the victims, not the driver's
# victim_policy: the record says so.
check "the scale-in's record says who picked the victims" \
	python3 -c '
import json,sys
recs=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ins=[r for r in recs if r["action"]=="scale_in"]
assert ins and all(r["victims"]=="drain_order" for r in ins), ins
assert all("the driver'"'"'s victim_policy does not apply" in r["explanation"] for r in ins), ins
assert all(r["victims"] is None for r in recs if r["action"]!="scale_in"), recs' "$T/records"

# When no victim can be drained the group holds.
sed -i 's/\[ "\$1" != vm-4 \]/exit 1/' "$T/drain"
set_load 10
check "every drain refused: the daemon says it holds, and why" \
	wait_for 30 grep -q "scale-in held: no instance could be drained" "$T/daemon.log"
check "the group holds at 3" pool_is 3
stop_daemon
tap_done
