#!/bin/bash
# The metrics endpoint scraped by a real Prometheus: the exposition passes
# promtool's checks, and a PromQL query returns the group's desired count,
# which follows the load.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/integration/ops-lib.sh"
command -v prometheus >/dev/null || skip_all "prometheus is not installed (Debian: apt-get install prometheus)"
command -v curl >/dev/null || skip_all "curl is not installed"

set_load 30
# A free port for the metrics endpoint, and another if something took it
# before the daemon listened.
for attempt in 1 2 3; do
	MPORT=$(free_port)
	write_conf "" "metrics_listen = \"127.0.0.1:$MPORT\";"
	: >"$T/daemon.log"
	start_daemon && break
	grep -q "cannot listen on .*Address already in use" "$T/daemon.log" || break
	echo "# port $MPORT was taken: another one"
	kill9_daemon
done
[ -n "$DAEMON_PID" ] && daemon_answers || { not_ok "the daemon starts"; tap_done; exit 1; }
check "the pool reaches 3" wait_for 30 pool_is 3

# The gauge of the current count follows one evaluation after the action.
scrape_has() { curl -sf "http://127.0.0.1:$MPORT/metrics" | grep -qx "$1"; }
check "GET /metrics shows the current count once observed" \
	wait_for 10 scrape_has 'autoscaled_group_current_instances{group="web"} 3'
body=$(curl -sf "http://127.0.0.1:$MPORT/metrics")
check "desired and current instances of the group" \
	test -n "$(echo "$body" | grep -x 'autoscaled_group_desired_instances{group="web"} 3')" \
	-a -n "$(echo "$body" | grep -x 'autoscaled_group_current_instances{group="web"} 3')"
check "the signal's value and recommendation" \
	test -n "$(echo "$body" | grep -x 'autoscaled_signal_value{group="web",signal="queue"} 30')" \
	-a -n "$(echo "$body" | grep -x 'autoscaled_signal_recommendation{group="web",signal="queue"} 3')"
check "actions, histograms, pause and pin families" eval '
	echo "$body" | grep -q "^autoscaled_actions_total{group=\"web\",direction=\"out\"} 1$" &&
	echo "$body" | grep -q "^# TYPE autoscaled_evaluation_duration_seconds histogram$" &&
	echo "$body" | grep -q "^autoscaled_driver_call_duration_seconds_count{group=\"web\",operation=\"observe\"} [1-9]" &&
	echo "$body" | grep -q "^autoscaled_group_paused{group=\"web\"} 0$" &&
	echo "$body" | grep -q "^autoscaled_group_pinned{group=\"web\"} 0$"'
if command -v promtool >/dev/null; then
	lint=$(echo "$body" | promtool check metrics 2>&1); rc=$?
	check "promtool check metrics finds nothing to fix${lint:+: $lint}" test $rc -eq 0 -a -z "$lint"
else
	ok "# SKIP promtool is not installed"
fi
check "POST /metrics: 405" test "$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$MPORT/metrics")" = 405

cat > "$T/prometheus.yml" <<YML
global: { scrape_interval: 1s, evaluation_interval: 1s }
scrape_configs:
  - job_name: autoscaled
    static_configs: [ { targets: [ "127.0.0.1:$MPORT" ] } ]
YML
PPORT=$(free_port)
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
	--web.listen-address="127.0.0.1:$PPORT" > "$T/prometheus.log" 2>&1 &
EXTRA_PIDS=$!
watch_pid "$EXTRA_PIDS" prometheus "$T/prometheus.log"
check "prometheus is ready" wait_for 30 curl -sf "http://127.0.0.1:$PPORT/-/ready" -o /dev/null

query() {
	curl -s --get "http://127.0.0.1:$PPORT/api/v1/query" --data-urlencode "query=$1" |
		python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'
}
# query_is QUERY VALUE, re-evaluated at each try of wait_for.
query_is() { test "$(query "$1")" = "$2"; }
check "PromQL: autoscaled_group_desired_instances{group=\"web\"} is 3" \
	wait_for 20 query_is 'autoscaled_group_desired_instances{group="web"}' 3
set_load 70
check "the pool follows the load to 7" wait_for 30 pool_is 7
check "PromQL: the desired count follows to 7" \
	wait_for 20 query_is 'autoscaled_group_desired_instances{group="web"}' 7
check "PromQL: the scrape target is up" test "$(query 'up{job="autoscaled"}')" = 1
check "PromQL: one scale-out counted, then another" \
	test "$(query 'sum(autoscaled_actions_total{group="web",direction="out"})')" = 2
ctl pin web 5 --for 10m >/dev/null
check "PromQL: the pin shows" wait_for 20 query_is 'autoscaled_group_pinned{group="web"}' 1
stop_daemon
tap_done
