#!/bin/bash
# The status page (agent.status_page) on the metrics listener: refused by
# -n on a listener that is not loopback, off unless configured, read-only,
# the table there without JavaScript, under 100 KB with nothing fetched
# from elsewhere, the same JSON as the admin socket; and in headless
# Chromium, what a person sees: the group's row, charts with data points,
# a scale-out marked after the load rises, the history's filter, a page
# that fits a phone, and a screenshot kept as tests/integration/status-page.png.
. "$top_srcdir/tests/integration/tap.sh"
. "$top_srcdir/tests/integration/ops-lib.sh"
command -v curl >/dev/null || skip_all "curl is not installed"
. "$top_srcdir/tests/integration/status-page-lib.sh"
SHOT="$top_builddir/tests/integration/status-page.png"
rm -f "$SHOT"

chromium_runs

# -n: the page needs the loopback metrics listener.
refused() {
	write_conf "" "$1"
	! "$AUTOSCALED" -n -c "$T/autoscaled.conf" >"$T/n.out" 2>&1 && grep -q "'status_page' needs 'metrics_listen' on a loopback address" "$T/n.out"
}
accepted() { write_conf "" "$1" && "$AUTOSCALED" -n -c "$T/autoscaled.conf" >"$T/n.out" 2>&1; }
check "-n refuses the page without a metrics listener" refused 'status_page = true;'
check "-n refuses the page on a listener that is not loopback" refused 'status_page = true; metrics_listen = "0.0.0.0:9851";'
check "-n refuses the page on a host name other than localhost" refused 'status_page = true; metrics_listen = "127.0.0.1.example.com:9851";'
check "-n accepts it on 127.0.0.1, [::1] and localhost" eval '
	accepted "status_page = true; metrics_listen = \"127.0.0.1:9851\";" &&
	accepted "status_page = true; metrics_listen = \"[::1]:9851\";" &&
	accepted "status_page = true; metrics_listen = \"localhost:9851\";"'

# Off unless configured.
set_load 20
start_daemon_with_metrics
http_code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
check "without status_page, /status is not served" test "$(http_code "http://127.0.0.1:$MPORT/status")" = 404
stop_daemon

start_daemon_with_metrics "" "status_page = true;"
check "the pool reaches 2" wait_for 30 pool_is 2
U="http://127.0.0.1:$MPORT/status"
# The text of each cell of the group's row, as a reader without scripts
# sees it.
row_cells() {
	curl -sf "$U" | python3 -c 'import html.parser, sys
class P(html.parser.HTMLParser):
    row = None; cells = []
    def handle_starttag(self, tag, attrs):
        if tag == "tr": self.row = dict(attrs).get("data-group")
        elif tag == "td" and self.row == "web": self.cells.append("")
    def handle_data(self, data):
        if self.row == "web" and self.cells: self.cells[-1] += data
p = P(); p.feed(sys.stdin.read()); print("|".join(c.strip() for c in p.cells))'
}
row_shows() { row_cells | grep -q "^web|2|2|1|8|default|[a-z_]*|queue 20 vs 10/instance"; }
check "without JavaScript, the table has the group's counts, bounds and profile" wait_for 20 row_shows
page=$(curl -sf "$U"); js=$(curl -sf "$U/status.js"); css=$(curl -sf "$U/status.css")
check "the page loads its script and style sheet from the daemon" eval '
	echo "$page" | grep -q "<script src=\"/status/status.js\">" &&
	echo "$page" | grep -q "<link rel=stylesheet href=\"/status/status.css\">" && [ -n "$js" ] && [ -n "$css" ]'
size=$(( $(printf %s "$page" | wc -c) + $(printf %s "$js" | wc -c) + $(printf %s "$css" | wc -c) ))
check "page, script and style sheet weigh $size bytes, under 100 KB" test "$size" -lt 102400
# The SVG namespace is a name, never fetched; nothing else may point away.
external=$(printf '%s\n%s\n%s\n' "$page" "$js" "$css" | sed 's|http://www.w3.org/2000/svg||g' |
	grep -Eio "(https?:)?//[a-z0-9.-]+|@import|url\(" | head -3)
check "nothing references another site${external:+: $external}" test -z "$external"
check "the API under the page answers as the admin socket does" eval '
	[ "$(curl -sf "$U/api/v1/groups/web" | python3 -c "import json, sys; print(sorted(json.load(sys.stdin)))")" = \
	  "$(curl -sf --unix-socket "$T/admin.sock" http://admin/v1/groups/web | python3 -c "import json, sys; print(sorted(json.load(sys.stdin)))")" ] &&
	curl -sf "$U/api/v1/groups/web/decisions" | python3 -c "import json, sys; assert json.load(sys.stdin)[\"decisions\"]"'
check "it is read-only: a POST is refused (405) and an action path is not there (404)" eval '
	[ "$(http_code -X POST "$U/api/v1/groups/web/pause")" = 405 ] &&
	[ "$(http_code "$U/api/v1/groups/web/pause")" = 404 ] &&
	[ "$(http_code -X POST "$U/api/v1/reload")" = 405 ] &&
	[ "$(http_code -X DELETE "$U")" = 405 ] &&
	ctl --json show web | python3 -c "import json, sys; assert not json.load(sys.stdin)[\"paused\"]"'
# Each right after a good request for the same path: the reply shared
# for a second (as scrapes are) must not be given to another Host.
check "a request for another host name is refused (403), as DNS rebinding would send" eval '
	http_code "$U" >/dev/null && [ "$(http_code -H "Host: attacker.example:$MPORT" "$U")" = 403 ] &&
	http_code "$U/status.js" >/dev/null &&
	[ "$(http_code -H "Host: attacker.example" "$U/api/v1/groups")" = 403 ] &&
	[ "$(http_code -H "Host: 127.0.0.1.attacker.example" "$U/status.js")" = 403 ] &&
	[ "$(http_code -H "Host: localhost:$MPORT" "$U")" = 200 ] &&
	[ "$(http_code -H "Host: [::1]:$MPORT" "$U")" = 200 ]'
check "an unknown group is 404 and a name beyond the limit is refused" eval '
	[ "$(http_code "$U/api/v1/groups/nosuch")" = 404 ] &&
	[ "$(http_code "$U/api/v1/groups/$(head -c 300 /dev/zero | tr "\0" a)")" = 404 ]'

# In the browser. The load rises from 20 to 60 while it watches.
browser_checks --url "$U" --group web --daemon-pid "$DAEMON_PID" --screenshot "$SHOT" --expect-desired 6 \
	--then "echo 60 > '$T/load.tmp' && mv '$T/load.tmp' '$T/load'"
check "the screenshot is a PNG" is_png "$SHOT"
check "the daemon stops cleanly" stop_daemon
tap_done
