#!/bin/sh
# The daemon's footprint with many groups: threads, CPU and memory of one
# agent running BENCH_GROUPS groups (default 1000) of DRIVER (libvirt on libvirt's
# test hypervisor test:///default, or filepool, the cheap test driver of
# tests/helpers whose calls read a small file: the daemon's own share),
# each with SIGNALS (default 3) replayed signals and an interval of
# INTERVAL (default 15 s). Every group starts at min = 1, so each makes one
# scale-out in its first cycle (a domain cloned from the hypervisor's "test"
# domain, or a line in its pool file), then holds.
#
# Samples /proc every second; prints one JSON line:
#   threads_max, threads_end   threads of the daemon, most and at the end
#   cpu_warm_s                 CPU seconds (user + system) in the first WARM s (default 40)
#   cpu_steady_pct             per cent of one core from WARM to WARM + STEADY (default 60) s
#   rss_end_mb, rss_max_mb     resident memory at the end, and its peak (VmHWM)
#   scaled_out_to_min          groups whose first scale-out is done (from the log)
#   reload_s, reload_cpu_s     then a reload (SIGHUP) of the same file: the time
#                              until the daemon logs it done, and its CPU time
#                              (the main loop evaluates no group meanwhile)
#
# Run from the build directory:
#   top_srcdir=.. sh ../bench/footprint.sh
#   BENCH_GROUPS=100 DRIVER=filepool top_srcdir=.. sh ../bench/footprint.sh
# AUTOSCALED names another daemon binary (a build of another revision);
# CONCURRENCY sets agent.driver_concurrency for DRIVER.
set -eu
top_srcdir=${top_srcdir:-..}
top_builddir=${top_builddir:-.}
AUTOSCALED=${AUTOSCALED:-$top_builddir/autoscaled}
groups=${BENCH_GROUPS:-1000}
signals=${SIGNALS:-3}
interval=${INTERVAL:-15}
warm=${WARM:-40}
steady=${STEADY:-60}
driver=${DRIVER:-libvirt}
case $driver in
libvirt) drivers=$top_builddir/drivers/.libs ;;
filepool) drivers=$top_builddir/tests/helpers/.libs ;;
*) echo "footprint: DRIVER is libvirt or filepool" >&2; exit 2 ;;
esac
[ -f "$drivers/$driver.so" ] || { echo "footprint: $drivers/$driver.so is not built" >&2; exit 2; }
drivers=$(cd "$drivers" && pwd)
AUTOSCALED_DRIVER_DIR=$drivers
export AUTOSCALED_DRIVER_DIR

tmp=$(mktemp -d "${TMPDIR:-/tmp}/autoscaled-footprint.XXXXXX")
pid=""
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM

# Three columns, an hour at one row a minute: the values stay below the
# target, so that no group scales beyond its minimum.
python3 - "$tmp/load.csv" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("time,a,b,c\n")
    for i in range(61):
        f.write("%d,%d,%d,%d\n" % (i * 60, 3 + i % 3, 4 + i % 2, 2 + i % 4))
PY

concurrency=""
[ -n "${CONCURRENCY:-}" ] && concurrency="driver_concurrency = { $driver = $CONCURRENCY; };"
python3 - "$tmp" "$groups" "$signals" "$interval" "$driver" "$drivers" "$concurrency" <<'PY'
import os, sys
tmp, n, n_sig, interval, driver, drivers, concurrency = sys.argv[1:8]
n, n_sig = int(n), int(n_sig)
cols = ["a", "b", "c"]
out = ['agent = { interval = %s; state_directory = "%s/state"; admin_socket = "%s/admin.sock";'
       ' driver_directory = "%s"; %s };' % (interval, tmp, tmp, drivers, concurrency), "groups = ("]
for i in range(n):
    if driver == "libvirt":
        opts = 'uri = "test:///default"; template = "test";'
    else:
        pool = "%s/pools/g%d" % (tmp, i)
        os.makedirs(os.path.dirname(pool), exist_ok=True)
        with open(pool, "w") as f:
            f.write("next 1\n")
        opts = 'pool = "%s"; calls = "/dev/null";' % pool
    sigs = ", ".join('{ name = "s%d"; source = "replay"; type = "average"; target = 10.0; poll_interval = %s;'
                     ' source_options = { file = "%s/load.csv"; column = "%s"; }; }'
                     % (k, interval, tmp, cols[k % 3]) for k in range(n_sig))
    out.append('  { name = "g%d"; driver = "%s"; min = 1; max = 3; driver_options = { %s };'
               ' signals = ( %s ); }%s' % (i, driver, opts, sigs, "," if i < n - 1 else ""))
out.append(");")
with open(tmp + "/autoscaled.conf", "w") as f:
    f.write("\n".join(out) + "\n")
PY
mkdir -p "$tmp/state"

hz=$(getconf CLK_TCK)
"$AUTOSCALED" -f -c "$tmp/autoscaled.conf" > "$tmp/daemon.log" 2>&1 &
pid=$!
start=$(date +%s%N)

# cpu_ticks: user + system time of the daemon so far, in clock ticks.
cpu_ticks() { sed 's/^.*) //' "/proc/$pid/stat" | awk '{ print $12 + $13 }'; }
status_kb() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$pid/status"; }
elapsed_ms() { echo $((($(date +%s%N) - start) / 1000000)); }

threads_max=0
cpu_warm=""
cpu_steady0=""
end_ms=$(((warm + steady) * 1000))
while :; do
	kill -0 "$pid" 2>/dev/null || { echo "footprint: the daemon exited:" >&2; tail -20 "$tmp/daemon.log" >&2; exit 1; }
	t=$(elapsed_ms)
	th=$(status_kb Threads)
	[ "$th" -gt "$threads_max" ] && threads_max=$th
	if [ -z "$cpu_warm" ] && [ "$t" -ge $((warm * 1000)) ]; then
		cpu_warm=$(cpu_ticks)
		cpu_steady0=$cpu_warm
		steady0_ms=$t
	fi
	[ "$t" -ge "$end_ms" ] && break
	sleep 1
done
cpu_end=$(cpu_ticks)
t=$(elapsed_ms)
rss=$(status_kb VmRSS)
hwm=$(status_kb VmHWM)
threads_end=$(status_kb Threads)
scaled=$(grep -c "scaled out from 0 to 1 done" "$tmp/daemon.log" || true)
reloaded() { grep -c "agent: reloaded" "$tmp/daemon.log" || true; }
cpu_r0=$(cpu_ticks)
t_r0=$(date +%s%N)
kill -HUP "$pid"
until [ "$(reloaded)" -ge 1 ]; do
	kill -0 "$pid" 2>/dev/null || { echo "footprint: the daemon exited on the reload:" >&2; tail -20 "$tmp/daemon.log" >&2; exit 1; }
	sleep 0.05
done
reload_ms=$((($(date +%s%N) - t_r0) / 1000000))
cpu_r1=$(cpu_ticks)
kill -TERM "$pid"
wait "$pid" 2>/dev/null || true
pid=""
echo "{\"driver\":\"$driver\",\"groups\":$groups,\"signals\":$signals,\"interval_s\":$interval,\"threads_max\":$threads_max,\"threads_end\":$threads_end,\"cpu_warm_s\":$(echo "$cpu_warm $hz" | awk '{ printf "%.1f", $1 / $2 }'),\"warm_s\":$warm,\"cpu_steady_pct\":$(echo "$cpu_end $cpu_steady0 $hz $t $steady0_ms" | awk '{ printf "%.1f", 100 * ($1 - $2) / $3 / (($4 - $5) / 1000) }'),\"rss_end_mb\":$((rss / 1024)),\"rss_max_mb\":$((hwm / 1024)),\"scaled_out_to_min\":$scaled,\"reload_s\":$(echo "$reload_ms" | awk '{ printf "%.2f", $1 / 1000 }'),\"reload_cpu_s\":$(echo "$cpu_r1 $cpu_r0 $hz" | awk '{ printf "%.2f", ($1 - $2) / $3 }')}"
