#!/bin/sh
# The replay source: the value at (now - start) x speed into a time,value
# series, stepwise, looping at the end; the bundled demo series loads.
. "${top_srcdir:?}/tests/integration/lib.sh"

printf 'time,load,other\n0,1,9\n10,2,9\n20,3,9\n30,4,9\n' >"$TMP/s.csv"
# speed 20 and a poll every 250 ms: each poll moves 5 s into the series,
# halfway between rows, so timer jitter cannot change the reading.
probe -n 9 -i 250 "source = \"replay\"; file = \"$TMP/s.csv\"; speed = 20;"
got=$(awk '$2 == "ok" { printf "%s ", $3 }' "$TMP/out")
if probe_status_is 0 && [ "$got" = "1 1 2 2 3 3 4 4 1 " ]; then ok "steps through the series and loops ($got)"; else not_ok "steps and loops ($got)"; fi
probe -n 2 -i 500 "source = \"replay\"; file = \"$TMP/s.csv\"; speed = 20; column = \"other\"; scale = 0.5;"
if probe_status_is 0 && [ "$(grep -c ' ok 4.5 ' "$TMP/out")" = 2 ]; then ok "column by name and scale"; else not_ok "column by name and scale"; fi
expect_ok "the quick-start demo's series starts at its first value" 0.767 \
	"source = \"replay\"; file = \"$top_srcdir/data/demo-load.csv\"; speed = 1440;"
printf 'time,load\n0,1\n10,x\n' >"$TMP/bad.csv"
probe "source = \"replay\"; file = \"$TMP/bad.csv\";"
if [ "$probe_rc" = 2 ] && grep -q "bad.csv': line 3" "$TMP/out"; then ok "a bad row is a config error with its line"; else not_ok "bad row"; fi
probe "source = \"replay\"; file = \"$TMP/none.csv\";"
if [ "$probe_rc" = 2 ] && grep -q "cannot read" "$TMP/out"; then ok "a missing file is a config error"; else not_ok "missing file"; fi
probe "source = \"replay\"; file = \"$TMP/s.csv\"; speed = 0;"
if [ "$probe_rc" = 2 ] && grep -q "option 'speed' must be between" "$TMP/out"; then ok "speed must be positive"; else not_ok "speed must be positive"; fi
tap_done
