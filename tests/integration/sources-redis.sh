#!/bin/sh
# The redis source against a real redis-server: queue depth by LLEN, XLEN,
# the pending entries of a consumer group and ZCARD, as the test pushes and
# consumes; AUTH with a password and with an ACL user; database selection;
# a UNIX socket; failures as invalid readings with a reason.
. "${top_srcdir:?}/tests/integration/lib.sh"
need redis-server redis-cli python3
[ -x "$PROBE" ] || skip_all "source-probe not built"
"$PROBE" 'source = "redis"; key = "k";' 2>&1 | grep -q "not available in this build" &&
	skip_all "built without hiredis"

P=$(free_port)
mkdir -p "$TMP/redis"
bg redis-server --bind 127.0.0.1 -::1 --port "$P" --dir "$TMP/redis" --save '' --appendonly no \
	--unixsocket "$TMP/redis.sock" --unixsocketperm 700 --requirepass topsecret --loglevel warning --logfile "$TMP/redis.log"
i=0
until redis-cli -p "$P" -a topsecret --no-auth-warning ping 2>/dev/null | grep -q PONG; do
	i=$((i + 1))
	[ $i -gt 100 ] && { echo "Bail out! redis-server did not start"; exit 1; }
	sleep 0.1
done
rc() { redis-cli -p "$P" -a topsecret --no-auth-warning "$@" >/dev/null; }
r() { echo "source = \"redis\"; port = $P; password = \"topsecret\"; $1"; }

rc rpush jobs a b c d e
expect_ok "LLEN of a list the test filled" 5 "$(r 'key = "jobs";')"
rc lpop jobs 2
expect_ok "LLEN follows consumption" 3 "$(r 'key = "jobs"; command = "llen";')"
expect_ok "an absent list has length 0" 0 "$(r 'key = "none";')"
rc -n 3 lpush jobs x y
expect_ok "database selection (db 3)" 2 "$(r 'key = "jobs"; database = 3;')"
for n in 1 2 3 4 5 6; do rc xadd events '*' n "$n"; done
expect_ok "XLEN of a stream" 6 "$(r 'key = "events"; command = "xlen";')"
rc xgroup create events workers 0
rc xreadgroup group workers w1 count 4 streams events '>'
expect_ok "XPENDING: entries read but not acknowledged" 4 \
	"$(r 'key = "events"; command = "xpending"; group = "workers";')"
id=$(redis-cli -p "$P" -a topsecret --no-auth-warning xrange events - + count 1 | head -1)
rc xack events workers "$id"
expect_ok "XPENDING follows acknowledgements" 3 "$(r 'key = "events"; command = "xpending"; group = "workers";')"
rc zadd delayed 1 a 2 b 3 c
expect_ok "ZCARD of a sorted set" 3 "$(r 'key = "delayed"; command = "zcard";')"
rc acl setuser probe on '>probe-pw' '~*' '+@read' '+select'
expect_ok "AUTH as an ACL user" 3 "source = \"redis\"; port = $P; username = \"probe\"; password = \"probe-pw\"; key = \"jobs\";"
expect_ok "over the UNIX socket" 3 "source = \"redis\"; socket = \"$TMP/redis.sock\"; password = \"topsecret\"; key = \"jobs\";"

expect_ok "a host name, looked up off the loop" 3 "source = \"redis\"; host = \"localhost\"; port = $P; password = \"topsecret\"; key = \"jobs\";"
# A name that does not resolve is invalid with the resolver's reason (or
# the signal's timeout where DNS cannot be reached), and a reading beside
# it is not held up by the lookup.
probe "source = \"redis\"; name = \"dns\"; host = \"no-such-host.invalid\"; port = $P; key = \"jobs\"; timeout = 1500;" \
	"$(r 'name = "near"; key = "jobs";')"
near=$(awk '$1 == "near" && $2 == "ok" { print $4 }' "$TMP/out")
if probe_status_is 1 && grep -q "^dns invalid \(EHOSTUNREACH [0-9]* cannot resolve 'no-such-host.invalid'\|ETIMEDOUT\)" "$TMP/out" &&
	[ -n "$near" ] && [ "$near" -lt 300 ]; then
	ok "an unresolvable host is invalid, and delays no other reading"
else
	not_ok "an unresolvable host is invalid, and delays no other reading"
fi
expect_invalid "a wrong password" EACCES "AUTH failed: .*WRONGPASS\|AUTH failed: .*invalid" \
	"source = \"redis\"; port = $P; password = \"wrong\"; key = \"jobs\";"
expect_invalid "no password where one is needed" EREMOTEIO "NOAUTH" "source = \"redis\"; port = $P; key = \"jobs\";"
expect_invalid "a command on the wrong type" EREMOTEIO "WRONGTYPE" "$(r 'key = "delayed"; command = "llen";')"
expect_invalid "XPENDING of an unknown group" EREMOTEIO "NOGROUP" \
	"$(r 'key = "events"; command = "xpending"; group = "nobody";')"
DOWN=$(free_port)
expect_invalid "server down: connection refused" ECONNREFUSED "refused" "source = \"redis\"; port = $DOWN; key = \"jobs\";"
fixture HANG hang
probe "source = \"redis\"; port = $HANG; key = \"jobs\"; timeout = 600;"
e=$(field 4)
if probe_status_is 1 && [ "$(field 3)" = ETIMEDOUT ] && [ "$e" -ge 550 ] && [ "$e" -le 2500 ]; then
	ok "a server that never answers times out ($e ms)"
else
	not_ok "a server that never answers times out"
fi
expect_cancel "freeing a source mid-poll" "source = \"redis\"; port = $HANG; key = \"jobs\"; timeout = 5000;"
fixture GARBAGE garbage
probe "source = \"redis\"; port = $GARBAGE; key = \"jobs\"; timeout = 2000;"
if probe_status_is 1 && grep -q " invalid E[A-Z]* [0-9]* .*\(Protocol error\|connection\)" "$TMP/out"; then
	ok "a server speaking garbage is invalid"
else
	not_ok "a server speaking garbage is invalid"
fi

# Several polls of one source reuse nothing stale.
rc rpush jobs m n
probe -n 3 -i 100 "$(r 'key = "jobs";')"
if probe_status_is 0 && [ "$(grep -c ' ok 5 ' "$TMP/out")" = 3 ]; then ok "repeated polls"; else not_ok "repeated polls"; fi
probe "$(r 'key = "events"; command = "xpending";')"
if [ "$probe_rc" = 2 ] && grep -q "xpending needs option 'group'" "$TMP/out"; then ok "xpending needs a group"; else not_ok "xpending needs a group"; fi
probe "$(r 'key = "jobs"; command = "hlen";')"
if [ "$probe_rc" = 2 ] && grep -q "command must be llen, xlen, xpending or zcard" "$TMP/out"; then ok "an unknown command is a config error"; else not_ok "unknown command"; fi
tap_done
