#!/bin/sh
# The prometheus source against a real Prometheus scraping a test exporter
# (a file served over HTTP) whose value the test changes: instant queries,
# reductions of several series, and invalid readings for no series, NaN,
# Inf, a bad query and a server that is down.
. "${top_srcdir:?}/tests/integration/lib.sh"
need prometheus python3 curl

EXP="$TMP/exporter"
mkdir -p "$EXP" "$TMP/tsdb"
write_metrics() {
	cat >"$EXP/metrics.tmp" <<M
# TYPE test_queue_depth gauge
test_queue_depth $1
test_inflight{shard="a"} 2
test_inflight{shard="b"} 5
test_weird NaN
M
	mv "$EXP/metrics.tmp" "$EXP/metrics"
}
write_metrics 7
fixture E http "$EXP"
P=$(free_port)
cat >"$TMP/prometheus.yml" <<Y
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: exporter
    static_configs:
      - targets: ['127.0.0.1:$E']
Y
server prometheus "$TMP/prometheus.log" prometheus --config.file="$TMP/prometheus.yml" \
	--storage.tsdb.path="$TMP/tsdb" --web.listen-address="127.0.0.1:$P" --log.level=warn
wait_for 60 curl -sf "http://127.0.0.1:$P/-/ready" -o /dev/null ||
	{ echo "Bail out! prometheus did not start"; sed 's/^/# /' "$TMP/prometheus.log"; exit 1; }
U="http://127.0.0.1:$P"
q() { echo "source = \"prometheus\"; url = \"$U\"; query = \"$1\"; $2"; }

# reads QUERY VALUE: the query reads VALUE.
reads() {
	probe "$(q "$1")"
	probe_status_is 0 && awk -v w="$2" '$2 == "ok" && $3 + 0 == w + 0 { f = 1 } END { exit !f }' "$TMP/out"
}
# wait_value QUERY VALUE: up to 30 s for the query to read VALUE (at once
# a failure if Prometheus or the exporter dies).
wait_value() {
	wait_for 30 reads "$1" "$2" && return 0
	sed 's/^/# /' "$TMP/out"
	return 1
}

if wait_value test_queue_depth 7; then ok "reads the exporter's value through Prometheus"; else not_ok "reads the exporter's value"; fi
write_metrics 42
if wait_value test_queue_depth 42; then ok "follows the value the exporter serves"; else not_ok "follows the served value"; fi
expect_ok "a base URL with a trailing slash" 42 "source = \"prometheus\"; url = \"$U/\"; query = \"test_queue_depth\";"
expect_ok "a PromQL expression" 84 "$(q 'test_queue_depth * 2')"
expect_invalid "several series without a reduction are refused" ENOTUNIQ "2 series" "$(q test_inflight)"
expect_ok "several series reduced by sum" 7 "$(q test_inflight 'reduce = "sum";')"
expect_ok "several series reduced by avg" 3.5 "$(q test_inflight 'reduce = "avg";')"
expect_ok "several series reduced by max" 5 "$(q test_inflight 'reduce = "max";')"
expect_ok "several series reduced by min" 2 "$(q test_inflight 'reduce = "min";')"
expect_ok "a scalar result" 3 "$(q 'scalar(vector(3))')"
expect_invalid "an empty vector is invalid, not zero" ENODATA "no series" "$(q no_such_metric_at_all)"
expect_invalid "NaN is invalid" ERANGE "NaN" "$(q test_weird)"
expect_invalid "Inf is invalid" ERANGE "Inf" "$(q 'vector(1) / 0')"
expect_invalid "a bad query carries Prometheus's message" EREMOTEIO "bad_data: .*parse error" "$(q 'test_queue_depth{')"
expect_invalid "a range vector is refused" EBADMSG "not an instant vector" "$(q 'test_queue_depth[1m]')"
DOWN=$(free_port)
expect_invalid "Prometheus down: connection refused" ECONNREFUSED "connect" \
	"source = \"prometheus\"; url = \"http://127.0.0.1:$DOWN\"; query = \"up\";"
expect_invalid "an exporter page is not an API reply" EREMOTEIO "HTTP status 404" \
	"source = \"prometheus\"; url = \"http://127.0.0.1:$E\"; query = \"up\";"
probe "$(q up 'reduce = "median";')"
if [ "$probe_rc" = 2 ] && grep -q "reduce must be sum, avg, max, min or none" "$TMP/out"; then ok "an unknown reduction is a config error"; else not_ok "unknown reduction"; fi
tap_done
