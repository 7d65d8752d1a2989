#!/bin/bash
# Forecasting in the daemon. A forecaster seeded from a trace of a busy
# past forecasts far more than today's load: in observe mode that is in the
# decision records, the metrics and `autoscalectl forecast`, and the pool
# does not move; switched on by a reload, the same forecast raises it. The
# learnt history is written beside the state file and restored after a
# restart.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/integration/ops-lib.sh"
command -v curl >/dev/null || skip_all "curl is not installed"

# Ten minutes of a queue of 200 up to now, one value a second.
now=$(date +%s)
for ((t = now - 600; t < now; t++)); do echo "$t,200"; done > "$T/seed.csv"

# forecast_conf MODE PORT [FORECAST-OPTIONS]: the ops group, its queue
# signal with a forecast.
forecast_conf() {
	write_conf "" "metrics_listen = \"127.0.0.1:$2\";"
	python3 - "$T/autoscaled.conf" "$1" "$T/seed.csv" "${3:-}" <<'PY'
import sys
path, mode, seed, extra = sys.argv[1:]
s = open(path).read()
s = s.replace('staleness = "5s"; }', 'staleness = "5s";\n  forecast = { mode = "%s"; quantile = 0.9; seed_file = "%s"; %s }; }' % (mode, seed, extra))
s = s.replace("behavior = {", 'behavior = { boot_time = "60s";')
open(path, "w").write(s)
PY
}

set_load 30
MPORT=$(free_port)
forecast_conf observe "$MPORT"
start_daemon || { not_ok "the daemon starts"; tap_done; exit 1; }
check "the pool reaches 3 on the reactive signal" wait_for 30 pool_is 3
check "the seed file is learnt" grep -q "signal 'queue' seeded from" "$T/daemon.log"

record() { ctl --json explain web | python3 -c 'import json, sys
d = json.load(sys.stdin)["last_decision"]
f = d["signals"][0]["forecast"]
print(f["mode"], f["recommendation"], f["raised"], d["desired"], d["boot_time_s"])'; }
forecast_high() { set -- $(record); [ "$1" = observe ] && [ "$2" -ge 8 ] && [ "$3" = False ]; }
check "observe: the record holds a forecast of at least 8 instances, not acted on" wait_for 20 forecast_high
check "observe: several evaluations later the pool is still at 3" eval 'wait_evaluations 3 && pool_is 3'
scrape() { curl -sf "http://127.0.0.1:$MPORT/metrics"; }
check "observe: the forecast is in the metrics" eval '
	scrape | grep -q "^autoscaled_signal_forecast{group=\"web\",signal=\"queue\"} [0-9]" &&
	scrape | grep -q "^autoscaled_signal_forecast_recommendation{group=\"web\",signal=\"queue\"} [0-9]" &&
	scrape | grep -q "^autoscaled_group_boot_seconds{group=\"web\"} [0-9]"'
check "autoscalectl explain shows the forecast as observed only" eval 'ctl explain web | grep -q "observe: not acted on"'
check "autoscalectl forecast sets forecasts against what came" eval '
	ctl forecast web | head -1 | grep -q "actual.*forecast" && ctl forecast web | grep -q " queue "'

# Mode on: the same forecast acts.
forecast_conf on "$MPORT"
kill -HUP "$DAEMON_PID"
check "on: the forecast raises the pool to its max" wait_for 30 pool_is 8
raised() { set -- $(record); [ "$1" = on ] && [ "$3" = True ]; }
check "on: the record says the forecast raised the count" wait_for 10 raised

# The history outlives the daemon.
check "the daemon stops cleanly" stop_daemon
check "the forecast file is written beside the state" test -s "$T/state/web.forecast"
start_daemon || { not_ok "the daemon restarts"; tap_done; exit 1; }
check "the history is restored after a restart" grep -q "forecast: history of 1 signal restored" "$T/daemon.log"
check "the restart is not seeded again" test "$(grep -c "seeded from" "$T/daemon.log")" -eq 1

# A service level: a queue of 90 against the 80 the pool's max serves
# keeps every sample above the target by less than the headroom the
# offset could add (the forecast's errors since the seed are tens), so the
# forecaster moves its quantiles up; the offset is in the record, the
# metrics and `autoscalectl explain`, and outlives a restart.
set_load 90
forecast_conf on "$MPORT" "service_level = 0.99;"
kill -HUP "$DAEMON_PID"
service() { ctl --json explain web | python3 -c 'import json, sys
f = json.load(sys.stdin)["last_decision"]["signals"][0]["forecast"]
print(f["service_level"], f["service_offset"])'; }
offset_up() { set -- $(service); [ "$1" = 0.99 ] && python3 -c "import sys; sys.exit(not float(sys.argv[1]) >= 1)" "$2"; }
check "service level: the offset climbs while the group is above its target" wait_for 60 offset_up
check "service level: the offset is in the metrics" eval '
	scrape | grep -q "^autoscaled_signal_forecast_service_offset{group=\"web\",signal=\"queue\"} [0-9]*\.*[0-9]*[1-9]"'
# Every sample since the reload was short: the share measured is near 1
# (a running mean over the first samples), beside the level asked for.
short_high() { ctl --json explain web | python3 -c 'import json, sys
f = json.load(sys.stdin)["last_decision"]["signals"][0]["forecast"]
sys.exit(not f["service_short"] > 0.5)'; }
check "service level: the share short is in the record and the metrics" eval 'short_high &&
	scrape | grep -q "^autoscaled_signal_forecast_service_level{group=\"web\",signal=\"queue\"} 0.99$" &&
	scrape | grep -Eq "^autoscaled_signal_forecast_service_short_ratio\{group=\"web\",signal=\"queue\"\} (1|0\.[5-9][0-9]*)$"'
check "autoscalectl explain shows the service level and its offset" eval \
	'ctl explain web | grep -q "service level 0.99: short in [0-9.]* % of the samples (about a day), quantiles moved by [0-9.]* typical errors" &&
	 ctl explain web | grep -q "service offset +"'
check "the daemon stops cleanly" stop_daemon
check "the offset is written with the history" python3 -c 'import json, sys
f = json.load(open(sys.argv[1]))["signals"]["queue"]
sys.exit(not (f["service_level"] == 0.99 and f["q_adjust"] > 0))' "$T/state/web.forecast"
start_daemon || { not_ok "the daemon restarts"; tap_done; exit 1; }
# Without the file the offset would start again from 0, a tenth at most
# an evaluation: the first record after the restart holds at least the
# offset written.
written=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["signals"]["queue"]["q_adjust"])' "$T/state/web.forecast")
first_offset() { ctl --json explain web | python3 -c 'import json, sys
d = json.load(sys.stdin)["last_decision"]
print(d["signals"][0]["forecast"]["service_offset"] if d else "none")'; }
has_decision() { [ "$(first_offset)" != none ]; }
check "the offset is restored after a restart" eval 'wait_for 20 has_decision &&
	python3 -c "import sys; print(\"#\", sys.argv[1:]); sys.exit(not float(sys.argv[1]) >= float(sys.argv[2]) - 1e-9)" "$(first_offset)" "$written"'
stop_daemon
tap_done
