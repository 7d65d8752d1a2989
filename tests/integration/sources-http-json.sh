#!/bin/sh
# The http_json source against a local HTTP server: JSON pointers, numeric
# strings, headers and auth, a changing value, and every failure a user can
# meet (refused, hung, garbage, oversized, NaN, absent) as an invalid
# reading with a reason; a hung endpoint delays no other source.
. "${top_srcdir:?}/tests/integration/lib.sh"
need python3

DOC="$TMP/www"
mkdir -p "$DOC"
printf '{"queue": {"depth": 17, "a/b": [1, {"m~n": "42.5"}]}, "nan": "NaN", "text": "many"}' >"$DOC/v.json"
printf 'this is not json' >"$DOC/garbage.json"
fixture H http "$DOC"
fixture HANG hang
DOWN=$(free_port)
U="http://127.0.0.1:$H"
j() { echo "source = \"http_json\"; url = \"$1\"; $2"; }

expect_ok "a number at a JSON pointer" 17 "$(j "$U/v.json" 'pointer = "/queue/depth";')"
expect_ok "pointer escapes ~1 and ~0, array index, numeric string" 42.5 \
	"$(j "$U/v.json" 'pointer = "/queue/a~1b/1/m~0n";')"
printf '{"queue": {"depth": 23}}' >"$DOC/v.json"
expect_ok "the reading follows the served value" 23 "$(j "$U/v.json" 'pointer = "/queue/depth";')"
printf '[5, 6, 7]' >"$DOC/arr.json"
expect_ok "a whole-number document" 7 "$(j "$U/arr.json" 'pointer = "/2";')"

probe "$(j "$U/headers" 'pointer = "/x-tenant"; headers = ["X-Tenant: 12"]; bearer_token = "s3cret";')"
if probe_status_is 0 && grep -q "ok 12 " "$TMP/out"; then ok "configured headers are sent"; else not_ok "configured headers are sent"; fi
printf 'tok-from-file\n' >"$TMP/token"
# A token is a credential: one its group or others may read is refused.
chmod 644 "$TMP/token"
"$PROBE" "$(j "$U/headers" "pointer = \"/authorization\"; bearer_token_file = \"$TMP/token\";")" >"$TMP/out" 2>&1
probe_rc=$?
sed 's/^/# /' "$TMP/out"
if [ "$probe_rc" = 2 ] && grep -q "'$TMP/token': its group or others may access it; run chmod 600" "$TMP/out" &&
	! grep -q tok-from-file "$TMP/out"; then
	ok "a token file its group or others may read is refused"
else
	not_ok "a token file its group or others may read is refused (rc $probe_rc)"
fi
chmod 600 "$TMP/token"
probe "$(j "$U/headers" "pointer = \"/authorization\"; bearer_token_file = \"$TMP/token\";")"
if probe_status_is 1 && grep -q "invalid EINVAL .*'Bearer tok-from-file' is not a number" "$TMP/out"; then
	ok "bearer token from a file is sent as Authorization"
else
	not_ok "bearer token from a file is sent as Authorization"
fi
# A FIFO as the token file is refused at once (reading it would wait for
# a writer); `timeout` turns a hang into a failure.
mkfifo "$TMP/token.fifo"
timeout 5 "$PROBE" "$(j "$U/headers" "pointer = \"/authorization\"; bearer_token_file = \"$TMP/token.fifo\";")" \
	>"$TMP/out" 2>&1
probe_rc=$?
sed 's/^/# /' "$TMP/out"
if [ "$probe_rc" = 2 ] && grep -q "cannot read '$TMP/token.fifo': not a regular file" "$TMP/out"; then
	ok "a FIFO as the token file is refused at once"
else
	not_ok "a FIFO as the token file is refused at once (status $probe_rc)"
fi
probe "$(j "$U/headers" 'pointer = "/authorization"; username = "ops"; password = "pw";')"
# "ops:pw" in base64 is b3BzOnB3.
if probe_status_is 1 && grep -q "Basic b3BzOnB3" "$TMP/out"; then ok "basic auth"; else not_ok "basic auth"; fi

# TLS: a self-signed certificate for 127.0.0.1, trusted through ca_file.
if command -v openssl >/dev/null 2>&1 &&
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
		-keyout "$TMP/key.pem" -out "$TMP/cert.pem" >/dev/null 2>&1; then
	fixture TLS https "$DOC" "$TMP/cert.pem" "$TMP/key.pem"
	T="https://127.0.0.1:$TLS/v.json"
	expect_ok "HTTPS with the server's CA in ca_file" 23 "$(j "$T" "pointer = \"/queue/depth\"; ca_file = \"$TMP/cert.pem\";")"
	expect_invalid "HTTPS with an unknown CA is refused" EPROTO "certificate" "$(j "$T" 'pointer = "/queue/depth";')"
	expect_ok "HTTPS with insecure = true" 23 "$(j "$T" 'pointer = "/queue/depth"; insecure = true;')"
else
	ok "# SKIP openssl cannot make a test certificate"
fi

expect_invalid "server down: connection refused" ECONNREFUSED "Failed to connect\|Connection refused\|connect" \
	"$(j "http://127.0.0.1:$DOWN/v.json" 'pointer = "/queue/depth";')"
expect_invalid "HTTP 404 is invalid" EREMOTEIO "HTTP status 404" "$(j "$U/missing.json" '')"
expect_invalid "garbage is invalid" EBADMSG "invalid JSON" "$(j "$U/garbage.json" '')"
expect_invalid "oversized reply is refused" EFBIG "larger than 1048576 bytes" "$(j "$U/big/2000000" '')"
printf '{"queue": {"depth": 23}, "nan": "NaN", "text": "many"}' >"$DOC/v.json"
expect_invalid "NaN is invalid" ERANGE "NaN" "$(j "$U/v.json" 'pointer = "/nan";')"
expect_invalid "a non-numeric string is invalid" EINVAL "'many' is not a number" "$(j "$U/v.json" 'pointer = "/text";')"
expect_invalid "an absent member is invalid" ENOENT "no 'nope'" "$(j "$U/v.json" 'pointer = "/queue/nope";')"
printf '{}' >"$DOC/empty.json"
expect_invalid "an empty object is invalid" ENOENT "depth" "$(j "$U/empty.json" 'pointer = "/depth";')"

# A server that accepts and never answers: the timeout is honoured.
probe "$(j "$U/hang" 'timeout = 700;')"
e=$(field 4)
if probe_status_is 1 && [ "$(field 3)" = ETIMEDOUT ] && [ "$e" -ge 650 ] && [ "$e" -le 2000 ]; then
	ok "a hung HTTP server times out after the signal's timeout ($e ms)"
else
	not_ok "a hung HTTP server times out after the signal's timeout"
fi
probe "$(j "http://127.0.0.1:$HANG/" 'timeout = 500;')"
if probe_status_is 1 && [ "$(field 3)" = ETIMEDOUT ]; then ok "a TCP server that never answers times out"; else not_ok "a TCP server that never answers times out"; fi

# Concurrency: two hung sources and a healthy one in the same loop; the
# healthy one answers at once, three times, while the others hang.
probe -n 3 -i 200 "$(j "$U/hang" 'name = "hung1"; timeout = 800;')" "$(j "http://127.0.0.1:$HANG/" 'name = "hung2"; timeout = 800;')" \
	"$(j "$U/v.json" 'name = "good"; pointer = "/queue/depth";')"
good_max=$(awk '$1 == "good" && $2 == "ok" { if ($4 > m) m = $4; n++ } END { print (n == 3) ? m + 0 : 99999 }' "$TMP/out")
if probe_status_is 1 && [ "$good_max" -lt 600 ]; then
	ok "a hung endpoint delays no other source (slowest healthy reading $good_max ms)"
else
	not_ok "a hung endpoint delays no other source ($good_max)"
fi
if grep -q "^hung1 invalid ETIMEDOUT" "$TMP/out" && grep -q "^hung2 invalid ETIMEDOUT" "$TMP/out"; then
	ok "the hung sources report their own timeouts"
else
	not_ok "the hung sources report their own timeouts"
fi

expect_cancel "freeing a source mid-request cancels it" "$(j "$U/hang" 'timeout = 5000;')"

# Configuration errors name the option's file and line.
cat >"$TMP/sig.conf" <<CONF
source = "http_json";
url = "$U/v.json";
pointer = "queue";
CONF
probe -f "$TMP/sig.conf"
if [ "$probe_rc" = 2 ] && grep -q "sig.conf:3: .*must start with '/'" "$TMP/out"; then
	ok "a malformed pointer is a config error at its FILE:LINE"
else
	not_ok "a malformed pointer is a config error at its FILE:LINE"
fi
probe "source = \"http_json\"; url = \"ftp://x/\";"
if [ "$probe_rc" = 2 ] && grep -q "not an http:// or https:// URL" "$TMP/out"; then ok "a non-HTTP URL is refused"; else not_ok "a non-HTTP URL is refused"; fi
probe "source = \"http_json\"; url = \"$U/v.json\"; pointr = \"/x\";"
if [ "$probe_rc" = 2 ] && grep -q "unknown option 'pointr'" "$TMP/out"; then ok "an unknown option is refused"; else not_ok "an unknown option is refused"; fi
probe "source = \"libvirt_cpu\";"
if [ "$probe_rc" = 2 ] && grep -q "a source a driver feeds is read only by a group of that driver" "$TMP/out"; then ok "a driver's source is not read without its driver"; else not_ok "a driver's source without its driver: $(cat "$TMP/out")"; fi
tap_done
