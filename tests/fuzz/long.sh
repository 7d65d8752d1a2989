#!/bin/sh
# The long fuzz run (docs/fuzzing.md): each target given runs until it has
# made FUZZ_LONG_RUNS executions (default 10 million) or for FUZZ_LONG_SECONDS
# (default 3600), whichever comes first (FUZZ_LONG_TIMEOUT: seconds an input
# may take, default 10), starting from its corpus in the tree
# with its dictionary. New inputs go to OUT/NAME, findings to OUT/NAME-*, and
# each target's log to OUT/NAME.log. One line per target on standard output:
#   NAME executions seconds exec/s coverage-edges features findings
# Exits non-zero when any target found something.
#   long.sh TOP_SRCDIR OUT TARGET...
set -u
top=$1
out=$2
shift 2
runs=${FUZZ_LONG_RUNS:-10000000}
secs=${FUZZ_LONG_SECONDS:-3600}
# A niced fuzzer on a busy machine can go without CPU for seconds: a
# timeout that short is the scheduler, not a hang.
timeout=${FUZZ_LONG_TIMEOUT:-10}
mkdir -p "$out" || exit 1
failed=0
printf '%-16s %12s %8s %8s %8s %8s %s\n' target executions seconds exec/s edges features findings
for t in "$@"; do
	name=$(basename "$t")
	name=${name#fuzz-}
	corpus=$top/tests/fuzz/corpus/$name
	dict=$top/tests/fuzz/dict/$name.dict
	mkdir -p "$out/$name"
	set -- -runs="$runs" -max_total_time="$secs" -timeout="$timeout" -rss_limit_mb=2048 -max_len=65536 \
		-print_final_stats=1 -artifact_prefix="$out/$name-"
	[ -f "$dict" ] && set -- "$@" -dict="$dict"
	start=$(date +%s)
	"$t" "$@" "$out/$name" "$corpus" >"$out/$name.log" 2>&1
	rc=$?
	took=$(($(date +%s) - start))
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$name.log" | tail -n 1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out/$name.log" | tail -n 1)
	last=$(grep -E '^#[0-9]+' "$out/$name.log" | tail -n 1)
	edges=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
	feat=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
	found=$(ls "$out" | grep -c "^$name-")
	[ "$rc" -ne 0 ] && [ "$found" -eq 0 ] && found="exit $rc"
	printf '%-16s %12s %8s %8s %8s %8s %s\n' "$name" "${execs:-?}" "$took" "${rate:-?}" \
		"${edges:-?}" "${feat:-?}" "$found"
	[ "$rc" -ne 0 ] && failed=1
done
exit "$failed"
