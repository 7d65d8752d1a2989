#!/bin/bash
# The manual pages: groff and man find nothing to warn about in any page, the
# pages name each other in SEE ALSO, and autoscaled(8) documents every option
# the daemon and its explain and simulate commands accept (as their --help
# lists them), so that the page cannot fall behind the code.
. "$top_srcdir/tests/integration/tap.sh"
command -v groff >/dev/null || skip_all "groff is not installed (Debian: apt-get install groff-base)"
: "${AUTOSCALED:=$top_builddir/autoscaled}"
[ -x "$AUTOSCALED" ] || skip_all "the daemon is not built"

pages=("$top_srcdir"/man/*.[1-8])
check "there are manual pages: ${#pages[@]}" test "${#pages[@]}" -ge 3

for p in "${pages[@]}"; do
	name=$(basename "$p")
	out=$(LC_ALL=C.UTF-8 groff -ww -z -man -Tutf8 "$p" 2>&1)
	check "groff -ww finds nothing in $name${out:+: $out}" test -z "$out"
	if command -v man >/dev/null; then
		out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$p" 2>&1 >/dev/null)
		check "man --warnings finds nothing in $name${out:+: $out}" test -z "$out"
	fi
done

# The text of a page as a reader sees it, in ASCII.
text() { LC_ALL=C.UTF-8 groff -man -Tascii -P-c -P-b -P-u "$top_srcdir/man/$1" 2>/dev/null; }
see_also() { text "$1" | sed -n '/^SEE ALSO/,/^[A-Z]/p' | tr -s ' \n' ' '; }
refs_all() {
	local page=$1; shift
	for r in "$@"; do
		see_also "$page" | grep -qF "$r" || { echo "# $page: SEE ALSO lacks $r"; return 1; }
	done
}
check "autoscaled(8) SEE ALSO names the other pages" refs_all autoscaled.8 "autoscalectl(1)" "autoscaled.conf(5)"
check "autoscaled.conf(5) SEE ALSO names the other pages" refs_all autoscaled.conf.5 "autoscaled(8)" "autoscalectl(1)"
check "autoscalectl(1) SEE ALSO names the other pages" refs_all autoscalectl.1 "autoscaled(8)" "autoscaled.conf(5)"

# Every long option in a --help is in autoscaled(8).
documented() {
	local help=$1 missing=""
	for o in $(echo "$help" | grep -o -- '--[a-z][a-z-]*' | sort -u); do
		text autoscaled.8 | grep -q -- "$o\b" || missing="$missing $o"
	done
	[ -z "$missing" ] || { echo "# not in autoscaled(8):$missing"; return 1; }
}
check "autoscaled(8) documents every option of autoscaled --help" documented "$("$AUTOSCALED" --help)"
check "autoscaled(8) documents every option of autoscaled explain --help" \
	documented "$("$AUTOSCALED" explain --help)"
check "autoscaled(8) documents every option of autoscaled simulate --help" \
	documented "$("$AUTOSCALED" simulate --help)"
tap_done
