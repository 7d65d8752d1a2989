#!/bin/sh
# `autoscaled simulate` end to end: a 3-hour ramp through the HPA baseline,
# with the JSON metrics, the per-step CSV and the SVG plot checked (the plot
# parsed as XML: xmllint if installed, else python3's xml.etree).
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The daemon's own `simulate` command when main.c dispatches it, else the
# bench driver built from the same code.
if [ -n "${AUTOSCALED:-}" ] && "$AUTOSCALED" simulate --help 2>/dev/null | grep -q -- --trace; then
	sim() { "$AUTOSCALED" simulate "$@"; }
else
	sim() { "$top_builddir/bench/simulate-bench" "$@"; }
fi

conf="$top_srcdir/bench/configs/hpa.conf"
trace="$top_srcdir/tests/data/traces/ramp.csv"
. "$top_srcdir/tests/integration/tap.sh"
tap_plan 8

if sim -c "$conf" --group pool --trace "$trace" --format csv --capacity-per-instance 20 --boot-delay 60s \
	--json --csv "$tmp/steps.csv" --svg "$tmp/plot.svg" >"$tmp/out.json" 2>"$tmp/err"; then
	ok "simulate runs"
else
	not_ok "simulate runs: $(cat "$tmp/err")"
fi

# The ramp needs 1 to 10 instances: the policy must follow it up and down,
# and cannot cost less than the oracle while serving nearly all of it.
if python3 - "$tmp/out.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
for k in ("vm_hours", "oracle_vm_hours", "cost_ratio", "theta_u", "theta_o", "tau_u", "tau_o", "jitter",
          "unserved_fraction", "actions_out", "actions_in", "reversals"):
    assert k in m, k
assert m["actions_out"] > 0 and m["actions_in"] > 0, m
assert 1.0 <= m["cost_ratio"] < 3.0, m
assert abs(m["cost_ratio"] - m["vm_hours"] / m["oracle_vm_hours"]) < 1e-9, m
assert 0 <= m["tau_u"] < 20 and m["unserved_fraction"] < 0.05, m
assert 2.9 < m["hours"] < 3.1, m
PY
then ok "metrics are present and plausible"; else not_ok "metrics are present and plausible"; fi

# One row per 15 s step of the 3 hours, plus the header.
rows=$(wc -l <"$tmp/steps.csv")
if [ "$rows" -eq 721 ] && head -1 "$tmp/steps.csv" | grep -q '^t_s,time_ms,demand,required,ready,billed,desired,action,hold,scored,forecast$'; then
	ok "per-step CSV"
else
	not_ok "per-step CSV ($rows lines)"
fi

if command -v xmllint >/dev/null 2>&1; then
	if xmllint --noout "$tmp/plot.svg" 2>"$tmp/xmlerr"; then ok "SVG is well-formed (xmllint)"; else not_ok "SVG is well-formed: $(cat "$tmp/xmlerr")"; fi
else
	if python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$tmp/plot.svg" 2>"$tmp/xmlerr"; then
		ok "SVG is well-formed (xml.etree)"
	else
		not_ok "SVG is well-formed: $(cat "$tmp/xmlerr")"
	fi
fi

if python3 - "$tmp/plot.svg" <<'PY'
import sys, xml.etree.ElementTree as E
ns = "{http://www.w3.org/2000/svg}"
root = E.parse(sys.argv[1]).getroot()
assert root.tag == ns + "svg"
ids = {e.get("id"): e for e in root.iter()}
# Demand has a vertex per step; the counts one per change (the ramp goes
# up and down through several counts).
assert len(ids["demand"].get("points").split()) > 500
for series in ("ready", "billed"):
    ys = {float(p.split(",")[1]) for p in ids[series].get("points").split()}
    assert len(ys) >= 5, (series, ys)
acts = ids["actions"]
classes = [e.get("class") for e in acts]
assert "scale-out" in classes and "scale-in" in classes, classes
assert "legend" in ids and "axes" in ids
PY
then ok "SVG holds demand, ready, billed, the actions and a legend"; else not_ok "SVG series"; fi

if sim -c "$conf" --group pool --trace "$trace" --format parquet >/dev/null 2>&1; then
	not_ok "an unknown format is refused"
else
	ok "an unknown format is refused"
fi
sim -c "$conf" --group nosuch --trace "$trace" --format csv >/dev/null 2>"$tmp/err"
if [ $? -ne 0 ] && grep -q "no group 'nosuch'" "$tmp/err"; then ok "an unknown group is named"; else not_ok "an unknown group is named"; fi
sim -c "$conf" --group pool --trace "$tmp/none.csv" --format csv >/dev/null 2>"$tmp/err"
if [ $? -ne 0 ] && grep -q "none.csv" "$tmp/err"; then ok "a missing trace is named"; else not_ok "a missing trace is named"; fi
tap_done
