#!/bin/sh
# One full observe cycle of BENCH_GROUPS (default 200) MIGs and 200 scale sets,
# one thread per group, against the emulators with LATENCY_MS (default 100)
# added to every reply. With BENCH_POOL=LIMIT the calls go through the
# daemon's pool of driver calls instead (src/agent/workers.c), LIMIT threads
# (0: the daemon's default for the driver). Run from the build directory
# after `make check` (or `make bench/cloud-observe`):
#   top_srcdir=.. sh ../bench/cloud-observe.sh
#   BENCH_POOL=0 BENCH_GROUPS=2000 top_srcdir=.. sh ../bench/cloud-observe.sh
set -eu
top_srcdir=${top_srcdir:-..}
top_builddir=${top_builddir:-.}
groups=${BENCH_GROUPS:-200}
latency=${LATENCY_MS:-100}
pool=""
[ -n "${BENCH_POOL:-}" ] && pool="--pool $BENCH_POOL"
AUTOSCALED_DRIVER_DIR=${AUTOSCALED_DRIVER_DIR:-$top_builddir/drivers/.libs}
export AUTOSCALED_DRIVER_DIR
tmp=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM

start_emulator() { # MODULE SETUP
	rm -f "$tmp/port"
	python3 "$top_srcdir/tests/emulators/$1.py" --port-file "$tmp/port" --latency-ms "$latency" --setup "$2" &
	pid=$!
	i=0
	while [ ! -s "$tmp/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	port=$(cat "$tmp/port")
}

setup=$(python3 -c "import json; print(json.dumps({'page_cap': 500, 'groups': [['p1', 'zones', 'z1', 'mig%d' % i, 3] for i in range($groups)]}))")
start_emulator gce "$setup"
"$top_builddir/bench/cloud-observe" $pool gce-mig "$groups" project=p1 zone=z1 \
	name=mig%d compute_base="http://127.0.0.1:$port/compute/v1" metadata_host="127.0.0.1:$port"
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""

setup=$(python3 -c "import json; print(json.dumps({'page_cap': 500, 'sets': [['s1', 'rg', 'ss%d' % i, 3] for i in range($groups)]}))")
start_emulator azure "$setup"
"$top_builddir/bench/cloud-observe" $pool azure-vmss "$groups" subscription=s1 \
	resource_group=rg name=ss%d arm_base="http://127.0.0.1:$port" credentials=managed_identity \
	imds_base="http://127.0.0.1:$port"
