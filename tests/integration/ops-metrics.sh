#!/bin/bash
# The metrics endpoint scraped by a real Prometheus: the exposition passes
# promtool's checks, and a PromQL query returns the group's desired count,
# which follows the load. The alerting series (build, reload, validity,
# bounds, profile, freshness, holds) are there; the shipped alert rules pass
# their unit tests and load into Prometheus, and they and the Grafana
# dashboard name only metrics the daemon exports. A source that dies turns
# its signal's validity to 0, the series stays, and the alert goes pending.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/integration/ops-lib.sh"
command -v prometheus >/dev/null || skip_all "prometheus is not installed (Debian: apt-get install prometheus)"
command -v curl >/dev/null || skip_all "curl is not installed"

set_load 30
start_daemon_with_metrics
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
check "actions, histograms, summaries, pause and pin families" eval '
	echo "$body" | grep -q "^autoscaled_actions_total{group=\"web\",direction=\"out\"} 1$" &&
	echo "$body" | grep -q "^# TYPE autoscaled_evaluation_duration_seconds histogram$" &&
	echo "$body" | grep -q "^autoscaled_evaluation_duration_seconds_count [1-9]" &&
	echo "$body" | grep -q "^autoscaled_group_evaluation_duration_seconds_count{group=\"web\"} [1-9]" &&
	echo "$body" | grep -q "^autoscaled_driver_call_duration_seconds_count{driver=\"filepool\",operation=\"observe\"} [1-9]" &&
	echo "$body" | grep -q "^# TYPE autoscaled_driver_call_cpu_seconds_total counter$" &&
	echo "$body" | grep "^autoscaled_driver_call_cpu_seconds_total{driver=\"filepool\",operation=\"observe\"} " |
		grep -vq " 0$" &&
	echo "$body" | grep -q "^autoscaled_group_driver_call_duration_seconds_count{group=\"web\",operation=\"observe\"} [1-9]" &&
	echo "$body" | grep -q "^autoscaled_group_paused{group=\"web\"} 0$" &&
	echo "$body" | grep -q "^autoscaled_group_pinned{group=\"web\"} 0$"'
if command -v promtool >/dev/null; then
	lint=$(echo "$body" | promtool check metrics 2>&1); rc=$?
	check "promtool check metrics finds nothing to fix${lint:+: $lint}" test $rc -eq 0 -a -z "$lint"
else
	ok "# SKIP promtool is not installed"
fi
# A scraper that takes gzip, as Prometheus does, gets the exposition
# compressed: every family a plain scrape just showed is in it (a family
# may be added between the two, none goes).
curl -sf "http://127.0.0.1:$MPORT/metrics" | grep '^# TYPE ' | sort > "$T/families.plain"
gz_headers=$(curl -sf -H 'Accept-Encoding: gzip' -D - -o "$T/scrape.gz" "http://127.0.0.1:$MPORT/metrics")
check "a scrape that takes gzip gets it, with every family" eval \
	'echo "$gz_headers" | grep -qi "^content-encoding: gzip" &&
	gzip -dc "$T/scrape.gz" | grep "^# TYPE " | sort > "$T/families.gzip" &&
	test -z "$(comm -23 "$T/families.plain" "$T/families.gzip")" &&
	test "$(wc -l < "$T/families.plain")" -gt 20'
# The series an operator alerts on.
has() { echo "$body" | grep -q "$1"; }
check "build info with the version" has "^autoscaled_build_info{version=\"$(
	"$AUTOSCALED" --version | awk '{print $2}')\"} 1$"
check "the configuration the daemon started with counts as a successful load" eval '
	has "^autoscaled_config_last_reload_successful 1$" &&
	has "^autoscaled_config_last_reload_success_timestamp_seconds 1[0-9]\{9\}"'
check "the signal is valid" has '^autoscaled_signal_valid{group="web",signal="queue"} 1$'
check "the active profile's bounds and the profile as info" eval '
	has "^autoscaled_group_min_instances{group=\"web\"} 1$" &&
	has "^autoscaled_group_max_instances{group=\"web\"} 8$" &&
	has "^autoscaled_group_default_instances{group=\"web\"} [0-9]" &&
	has "^autoscaled_group_profile_info{group=\"web\",profile=\"[^\"]*\"} 1$"'
# The timestamps are wall-clock seconds, at most a few seconds old.
fresh() {
	local v
	v=$(echo "$body" | awk -v s="$1" '$1 == s { print $2 }')
	[ -n "$v" ] && python3 -c "import sys, time; sys.exit(not (0 <= time.time() - float(sys.argv[1]) < 10))" "$v"
}
check "last evaluation, observation and sample are recent" eval '
	fresh "autoscaled_group_last_evaluation_timestamp_seconds{group=\"web\"}" &&
	fresh "autoscaled_group_last_observation_success_timestamp_seconds{group=\"web\"}" &&
	fresh "autoscaled_signal_last_sample_timestamp_seconds{group=\"web\",signal=\"queue\"}"'
check "a hold-reason counter for every reason" eval '
	test "$(echo "$body" | grep -c "^autoscaled_holds_total{group=\"web\",reason=")" -ge 9 &&
	has "^autoscaled_holds_total{group=\"web\",reason=\"stabilization\"} [0-9]"'
echo "$body" > "$T/scrape"

CONTRIB="$top_srcdir/contrib"
if command -v promtool >/dev/null; then
	out=$(promtool check rules "$CONTRIB/prometheus/alerts.yml" 2>&1); rc=$?
	check "promtool check rules accepts the shipped alerts" test $rc -eq 0
	[ $rc -eq 0 ] || echo "$out" | sed 's/^/# /'
	out=$(cd "$CONTRIB/prometheus" && promtool test rules alerts.test.yml 2>&1); rc=$?
	check "promtool test rules: the alerts' unit tests pass" test $rc -eq 0
	[ $rc -eq 0 ] || echo "$out" | sed 's/^/# /'
else
	ok "# SKIP promtool is not installed"
	ok "# SKIP promtool is not installed"
fi

check "POST /metrics: 405" test "$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$MPORT/metrics")" = 405

cat > "$T/prometheus.yml" <<YML
global: { scrape_interval: 1s, evaluation_interval: 1s }
rule_files: [ "$(cd "$CONTRIB/prometheus" && pwd)/alerts.yml" ]
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
out=$(python3 "$top_srcdir/tests/integration/check-promql.py" "$T/scrape" --prometheus "http://127.0.0.1:$PPORT" \
	"$CONTRIB/grafana/autoscaled.json" "$CONTRIB/prometheus/alerts.yml" 2>&1); rc=$?
check "the dashboard and the alerts name only exported metrics, in PromQL Prometheus accepts" test $rc -eq 0
[ $rc -eq 0 ] || echo "$out" | sed 's/^/# /'
rules_loaded() {
	curl -s "http://127.0.0.1:$PPORT/api/v1/rules" | grep -q '"name":"AutoscaledSignalInvalid"'
}
check "Prometheus loaded the shipped alerts" wait_for 10 rules_loaded
check "PromQL: the scrape target is up" test "$(query 'up{job="autoscaled"}')" = 1
check "PromQL: one scale-out counted, then another" \
	test "$(query 'sum(autoscaled_actions_total{group="web",direction="out"})')" = 2
ctl pin web 5 --for 10m >/dev/null
check "PromQL: the pin shows" wait_for 20 query_is 'autoscaled_group_pinned{group="web"}' 1

# The source dies (its command fails): the signal turns invalid, its
# validity series stays at 0 while its value goes, and the alert is pending.
rm -f "$T/load"
check "the dead source's signal turns invalid, and its validity stays" \
	wait_for 15 scrape_has 'autoscaled_signal_valid{group="web",signal="queue"} 0'
body=$(curl -sf "http://127.0.0.1:$MPORT/metrics")
check "an invalid signal has no value series" eval '! has "^autoscaled_signal_value{group=\"web\",signal=\"queue\"}"'
check "PromQL: autoscaled_signal_valid is 0, not absent" \
	wait_for 20 query_is 'autoscaled_signal_valid{group="web",signal="queue"}' 0
check "PromQL: AutoscaledSignalInvalid is pending" \
	wait_for 20 query_is 'ALERTS{alertname="AutoscaledSignalInvalid",group="web",alertstate="pending"}' 1
set_load 50
check "the source is back: the signal is valid again" \
	wait_for 15 scrape_has 'autoscaled_signal_valid{group="web",signal="queue"} 1'

# A reload that fails says so and keeps the time of the last good load.
before=$(curl -sf "http://127.0.0.1:$MPORT/metrics" | awk '$1 == "autoscaled_config_last_reload_success_timestamp_seconds" { print $2 }')
cp "$T/autoscaled.conf" "$T/good.conf"
echo "this is not a configuration" >> "$T/autoscaled.conf"
ctl reload >/dev/null 2>&1
check "a failed reload: autoscaled_config_last_reload_successful 0" \
	wait_for 10 scrape_has 'autoscaled_config_last_reload_successful 0'
check "the failed reload leaves the success timestamp" \
	scrape_has "autoscaled_config_last_reload_success_timestamp_seconds $before"
cp "$T/good.conf" "$T/autoscaled.conf"
ctl reload >/dev/null
check "a good reload: 1 again, and a newer timestamp" eval '
	wait_for 10 scrape_has "autoscaled_config_last_reload_successful 1" &&
	! scrape_has "autoscaled_config_last_reload_success_timestamp_seconds $before"'
stop_daemon
tap_done
