#!/bin/sh
# Runs each fuzz target given for FUZZ_RUNS executions (default 2000) over
# its corpus in the tree (tests/fuzz/corpus/NAME, NAME without "fuzz-")
# with its dictionary when there is one (tests/fuzz/dict/NAME.dict).
# New inputs go to a scratch directory, never into the tree. Fails on the
# first target that crashes, leaks or times out, naming it and keeping its
# log and the crashing input.
#   smoke.sh TOP_SRCDIR TARGET...
set -u
top=$1
shift
runs=${FUZZ_RUNS:-2000}
seed=${FUZZ_SEED:-1}
scratch=$(mktemp -d "${TMPDIR:-/tmp}/autoscaled-fuzz-smoke.XXXXXX") || exit 1
failed=0
for t in "$@"; do
	name=$(basename "$t")
	name=${name#fuzz-}
	corpus=$top/tests/fuzz/corpus/$name
	dict=$top/tests/fuzz/dict/$name.dict
	[ -d "$corpus" ] || { echo "fuzz-smoke: no corpus $corpus" >&2; failed=1; continue; }
	set -- -runs="$runs" -seed="$seed" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
		-artifact_prefix="$scratch/$name-"
	[ -f "$dict" ] && set -- "$@" -dict="$dict"
	mkdir -p "$scratch/$name"
	start=$(date +%s)
	if "$t" "$@" "$scratch/$name" "$corpus" >"$scratch/$name.log" 2>&1; then
		echo "fuzz-smoke: $name: $(ls "$corpus" | wc -l) seeds, $runs runs," \
			"$(($(date +%s) - start)) s: ok"
	else
		echo "fuzz-smoke: $name: FAILED; log and input kept in $scratch" >&2
		tail -n 40 "$scratch/$name.log" >&2
		failed=1
	fi
	rm -rf "${scratch:?}/$name"
done
[ "$failed" -eq 0 ] && rm -rf "$scratch"
exit "$failed"
