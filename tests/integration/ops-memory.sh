#!/bin/bash
# The heap gives its free pages back. 3,000 groups on the filepool driver,
# then two reloads that change every group (each builds the new runtimes
# while the old ones live, and frees the old ones in the middle of the
# heap). The daemon trims the heap after its start and after each reload:
# of the bytes the heap holds free, at most half (or 6 MiB) may stay
# resident. Read from the kernel (the [heap] mapping's Rss in smaps) and
# from the daemon's own metrics (autoscaled_heap_{in_use,free}_bytes, from
# the allocator). Without the trims the free bytes stay resident: 8.5,
# 6.7 and 6.1 MiB of 8.5, 6.7 and 6.1 free after the start and the two
# reloads, against 2.6-4.9 MiB of 5.7-8.4 with them. (With 2,000 groups,
# once a group's runtime took less room, the heap held at most 5 MiB free
# and the bound could not tell the two apart.)
#
# A daemon linked with jemalloc (src/base/heap.h) has no [heap] mapping; its
# figure of the free bytes is those it holds resident, which must then stay
# at most half the bytes in use (or 6 MiB): its settings give freed pages
# back within two seconds, and the daemon purges them after its start and
# each reload. Measured: 0.8-2.8 MiB free for 10.6-12 MiB in use; with
# MALLOC_CONF=dirty_decay_ms:-1 (never given back) the reloads leave more.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/integration/ops-lib.sh"
command -v curl >/dev/null || skip_all "curl is not installed"
# ASan has an allocator of its own, which glibc's trim does not touch.
[ "${AUTOSCALED_SANITIZERS:-}" = yes ] && skip_all "a sanitized build: ASan's allocator is not glibc's heap"

N=3000
python3 - "$T/load.csv" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("time,a,b,c\n")
    for i in range(61):
        f.write("%d,%d,%d,%d\n" % (i * 60, 3 + i % 3, 4 + i % 2, 2 + i % 4))
PY
# write_many TARGET: every group's three signals at TARGET, below which
# the replayed values stay (each group holds at its minimum of 1).
write_many() {
	python3 - "$T" "$N" "$MPORT" "$POOL_DRIVERS" "$1" <<'PY'
import os, sys
t, n, port, drivers, target = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
out = ['agent = { interval = "15s"; state_directory = "%s/state"; admin_socket = "%s/admin.sock";'
       ' driver_directory = "%s"; metrics_listen = "127.0.0.1:%s"; };' % (t, t, drivers, port), "groups = ("]
os.makedirs(t + "/pools", exist_ok=True)
for i in range(n):
    pool = "%s/pools/g%d" % (t, i)
    if not os.path.exists(pool):
        with open(pool, "w") as f:
            f.write("next 1\n")
    sigs = ", ".join('{ name = "s%d"; source = "replay"; type = "average"; target = %s; poll_interval = "15s";'
                     ' source_options = { file = "%s/load.csv"; column = "%s"; }; }' % (k, target, t, "abc"[k])
                     for k in range(3))
    out.append('  { name = "g%d"; driver = "filepool"; min = 1; max = 3;'
               ' driver_options = { pool = "%s"; calls = "/dev/null"; }; signals = ( %s ); }%s'
               % (i, pool, sigs, "," if i < n - 1 else ""))
out.append(");")
with open(t + "/autoscaled.conf.tmp", "w") as f:
    f.write("\n".join(out) + "\n")
os.rename(t + "/autoscaled.conf.tmp", t + "/autoscaled.conf")
PY
}

MPORT=$(free_port)
write_many 10.0
start_daemon
jemalloc=no
grep -q libjemalloc "/proc/$DAEMON_PID/maps" && jemalloc=yes
scaled() { [ "$(grep -c "scaled out from 0 to 1 done" "$T/daemon.log")" -ge $N ]; }
check "all $N groups scale out to their minimum" wait_for 120 scaled

# heap_kb: the resident kB of the heap's mapping.
heap_kb() { awk '/\[heap\]$/ { h = 1; next } h && /^Rss:/ { print $2; exit }' "/proc/$DAEMON_PID/smaps"; }
scrape() { curl -sf "http://127.0.0.1:$MPORT/metrics" > "$T/scrape"; }
value_kb() { awk -v n="$1" '$1 == n { printf "%d", $2 / 1024 }' "$T/scrape"; }
most_free=0
# measure WHEN: the heap's figures now, and the check on them. The
# kernel's figure is read first: rendering the scrape touches free pages
# of the heap (its text grows by copies), and the daemon's figures are
# taken before it renders. A scrape within a second of another shares its
# text (METRICS_SHARE_MS): the figures must be new, so the two are read
# again until the scrape's CPU time has moved past the one before.
last_cpu=
read_heap() {
	local cpu
	res=$(heap_kb)
	# jemalloc's pages are no [heap] mapping: its own figures are checked.
	[ "$jemalloc" = yes ] && res=0
	scrape || return 1
	cpu=$(awk '$1 == "process_cpu_seconds_total" { print $2 }' "$T/scrape")
	[ -n "$cpu" ] && [ "$cpu" != "$last_cpu" ] && last_cpu=$cpu
}
measure() {
	local in_use free extra allowed
	res=
	check "the metrics are scraped $1" wait_for 10 read_heap
	in_use=$(value_kb autoscaled_heap_in_use_bytes)
	free=$(value_kb autoscaled_heap_free_bytes)
	if [ -z "$res" ] || [ -z "$in_use" ] || [ -z "$free" ]; then
		not_ok "the heap's figures $1 (resident '$res', in use '$in_use', free '$free' kB)"
		return
	fi
	[ "$free" -gt "$most_free" ] && most_free=$free
	if [ "$jemalloc" = yes ]; then
		allowed=$((in_use / 2 > 6144 ? in_use / 2 : 6144))
		check "$1: jemalloc holds $free kB free resident for $in_use kB in use (at most $allowed)" \
			test "$free" -le "$allowed"
		return
	fi
	extra=$((res - in_use))
	allowed=$((free / 2 > 6144 ? free / 2 : 6144))
	check "$1: the heap holds $free kB free, $extra kB of it resident (at most $allowed)" \
		test "$extra" -le "$allowed"
}
measure "after the start"
reloads=0
for target in 11.0 10.0; do
	write_many "$target"
	kill -HUP "$DAEMON_PID"
	reloads=$((reloads + 1))
	check "reload $reloads is done" wait_for 60 eval \
		'[ "$(grep -c "agent: reloaded" "$T/daemon.log")" -ge $reloads ]'
	measure "after reload $reloads"
done
# Otherwise the checks above had nothing to give back, and show nothing:
# without the trims the free bytes stay resident, which the bound of 6 MiB
# catches only once there are more of them.
if [ "$jemalloc" = no ]; then
	check "the heap held more than 7 MiB free at least once (most: $most_free kB)" \
		test "$most_free" -gt 7168
fi
check "the daemon still answers" daemon_answers
stop_daemon; rc=$?
check "the daemon stops cleanly (rc $rc)" test $rc -eq 0
tap_done
