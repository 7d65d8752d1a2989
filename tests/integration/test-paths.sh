#!/bin/sh
# The daemon and autoscalectl agree on the admin socket, and the manual
# pages and README name the paths the programs really use. Both programs
# take the paths from the one definition in configure.ac; this checks what
# they print, so nothing is built for it.
. "$top_srcdir/tests/integration/tap.sh"
CTL="$top_builddir/autoscalectl"
[ -x "$CTL" ] || skip_all "autoscalectl is not built"

help=$("$AUTOSCALED" --help)
path_of() { printf '%s\n' "$help" | sed -n "s/^  $1  *\(\/.*\)$/\1/p"; }
config=$(path_of configuration)
state=$(path_of "state directory")
socket=$(path_of "admin socket")
ctl_socket=$("$CTL" --help | sed -n 's/.*the admin socket (default \(.*\))$/\1/p')

check "autoscaled --help names its default configuration ($config)" test -n "$config"
check "autoscaled --help names its default state directory ($state)" test -n "$state"
check "autoscaled --help names its default admin socket ($socket)" test -n "$socket"
check "autoscalectl looks for the socket the daemon listens on ('$ctl_socket' = '$socket')" \
	test -n "$socket" -a "$ctl_socket" = "$socket"

# The documentation describes a build with configure's own paths; a build
# configured with other ones installs documents that do not match it.
if grep -q -- "--sysconfdir\|--localstatedir\|--runstatedir" "$top_builddir/config.status" 2>/dev/null; then
	ok "# SKIP the documents name configure's default paths, and this build was given others"
	tap_done
	exit
fi
in_doc() { grep -qF -- "$2" "$top_srcdir/$1"; }
for doc in man/autoscaled.8 man/autoscaled.conf.5 README.md; do
	check "$doc names the admin socket $socket" in_doc "$doc" "$socket"
	check "$doc names the state directory $state" in_doc "$doc" "$state"
	check "$doc names the configuration $config" in_doc "$doc" "$config"
done
check "man/autoscalectl.1 names the admin socket $socket" in_doc man/autoscalectl.1 "$socket"
# The unit runs the daemon on the configuration it reads by default.
check "the unit reads $config" grep -qF -- "-c $config" "$top_builddir/systemd/autoscaled.service"
tap_done
