# A few TAP helpers for the shell tests; sourced, not run.
tap_n=0
tap_failed=0
ok() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $*"; }
not_ok() { tap_n=$((tap_n + 1)); tap_failed=$((tap_failed + 1)); echo "not ok $tap_n - $*"; }
# check DESCRIPTION COMMAND...: ok when the command succeeds.
check() { local d=$1; shift; if "$@"; then ok "$d"; else not_ok "$d"; fi; }
skip_all() { echo "1..0 # SKIP $*"; exit 0; }
tap_done() { echo "1..$tap_n"; [ "$tap_failed" -eq 0 ]; }
