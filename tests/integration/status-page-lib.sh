# Helpers for the status page's browser tests. Sourced after tap.sh; $T
# is the test's temporary directory.

# chromium_runs: skips the whole test when Chromium cannot run at all (not
# installed, missing libraries); anything after it starts is a failure.
chromium_runs() {
	local probe nosandbox=
	command -v chromium >/dev/null || skip_all "chromium is not installed (Debian: apt-get install chromium)"
	probe=$(mktemp -d "$T/chromium.XXXXXX")
	# Chromium's sandbox refuses to run as root.
	[ "$(id -u)" = 0 ] && nosandbox=--no-sandbox
	timeout 120 chromium --headless $nosandbox --disable-gpu --user-data-dir="$probe" --dump-dom \
		'data:text/html,<p id=x>ran</p>' 2>"$T/chromium.err" | grep -q '<p id="x">ran</p>' ||
		skip_all "chromium cannot run here: $(tail -1 "$T/chromium.err")"
}

# browser_checks ARGS...: runs status-page-browser.py with ARGS and reports
# each of its checks as a TAP result, then one more: that it ran every
# check it planned and ended well.
browser_checks() {
	local rc n=0 planned=0 status desc
	python3 "$top_srcdir/tests/integration/status-page-browser.py" "$@" >"$T/browser.out" 2>&1
	rc=$?
	while IFS='|' read -r status desc; do
		case $status in
		planned) planned=$desc ;;
		ok) ok "browser: $desc"; n=$((n + 1)) ;;
		"not ok") not_ok "browser: $desc"; n=$((n + 1)) ;;
		*) echo "# $status${desc:+|$desc}" ;;
		esac
	done <"$T/browser.out"
	check "the browser session ran its $planned checks and ended well (ran $n, status $rc)" \
		test "$planned" -ge 8 -a "$n" -eq "$planned" -a "$rc" -eq 0
}

# is_png FILE
is_png() { head -c 8 "$1" | od -An -c | grep -q "P   N   G"; }
