#!/bin/bash
# The Debian package: builds with dpkg-buildpackage from a copy of the tree,
# passes lintian, splits the drivers so that a cloud-only host does not pull
# libvirt, and the unpacked files (dpkg -x into a throwaway root) check the
# shipped configuration, list their drivers and start.
#
#   tests/package/test-deb.sh [SRCDIR]
#
# Needs dpkg-dev, debhelper, lintian and the build dependencies
# (scripts/install-deps --test). Runs from .ci/run after the main suite: it
# is one more full compile, so it is not part of make check. TAP output.
set -u
src=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
. "$src/tests/integration/tap.sh"

for t in dpkg-buildpackage dh lintian dpkg-deb curl; do
	command -v "$t" >/dev/null || { not_ok "$t is installed (scripts/install-deps --test)"; tap_done; exit 1; }
done

T=$(mktemp -d /tmp/autoscaled-deb.XXXXXX)
DAEMON_PID=
cleanup() {
	[ -n "$DAEMON_PID" ] && kill "$DAEMON_PID" 2>/dev/null && wait "$DAEMON_PID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
arch=$(dpkg-architecture -q DEB_HOST_ARCH)
multiarch=$(dpkg-architecture -q DEB_HOST_MULTIARCH)
deb() { echo "$T/${1}_${version}_$2.deb"; }

# A copy without the build directories (_build, _build-asan, build-*, but
# build-aux) and VCS data: the package build runs autoreconf and cleans up
# after itself in its own tree.
mkdir "$T/src"
tar -C "$src" --exclude='./_*' --exclude=./.git --exclude=./debian/build --exclude=./autom4te.cache \
	--exclude=./build --exclude='./build-[!a]*' -cf - . | tar -C "$T/src" -xf -
(cd "$T/src" && DEB_BUILD_OPTIONS="parallel=2 nocheck" dpkg-buildpackage -us -uc -b) > "$T/build.log" 2>&1
rc=$?
check "dpkg-buildpackage -us -uc -b builds the packages" test $rc -eq 0
if [ $rc -ne 0 ]; then
	tail -40 "$T/build.log" | sed 's/^/# /'
	tap_done
	exit 1
fi
for p in autoscaled:$arch autoscaled-driver-libvirt:$arch autoscaled-driver-cloud:$arch autoscaled-dev:all; do
	check "${p%:*} is built" test -f "$(deb "${p%:*}" "${p#*:}")"
done

# Errors and warnings fail; informational tags are printed only.
lintian -I --fail-on error,warning "$T/autoscaled_${version}_${arch}.changes" > "$T/lintian.log" 2>&1
rc=$?
sed 's/^/# lintian: /' "$T/lintian.log"
check "lintian: no error and no warning" test $rc -eq 0

contents() { dpkg-deb -c "$(deb "$1" "$2")" | awk '{ print $6 }' | sed 's|^\./|/|'; }
contents autoscaled "$arch" > "$T/autoscaled.list"
has() { grep -qx "$1" "$T/autoscaled.list"; }
check "autoscaled ships the daemon, the client and the unit" eval '
	has /usr/sbin/autoscaled && has /usr/bin/autoscalectl && has /lib/systemd/system/autoscaled.service'
check "autoscaled ships the manual pages and the completion" eval '
	has /usr/share/man/man8/autoscaled.8.gz && has /usr/share/man/man5/autoscaled.conf.5.gz &&
	has /usr/share/man/man1/autoscalectl.1.gz && has /usr/share/bash-completion/completions/autoscalectl'
check "autoscaled ships the examples, alert rules and dashboard under /usr/share/doc" eval '
	has /usr/share/doc/autoscaled/examples/autoscaled.conf &&
	has /usr/share/doc/autoscaled/examples/schedule-only.conf &&
	has /usr/share/doc/autoscaled/examples/libvirt-two-hosts.conf &&
	has /usr/share/doc/autoscaled/examples/prometheus/alerts.yml &&
	has /usr/share/doc/autoscaled/examples/grafana/autoscaled.json'
check "autoscaled ships /etc/autoscaled/conf.d/" has /etc/autoscaled/conf.d/
check "autoscaled creates its user and admin group (sysusers.d, run from postinst)" eval '
	has /usr/lib/sysusers.d/autoscaled.conf &&
	dpkg-deb -I "$(deb autoscaled "$arch")" postinst | grep -q "systemd-sysusers.*autoscaled.conf"'
check "the unit runs as the user autoscaled, not root" eval '
	dpkg-deb --fsys-tarfile "$(deb autoscaled "$arch")" | tar -xOf - ./lib/systemd/system/autoscaled.service |
		grep -qx User=autoscaled'
check "the daemon package does not need the libvirt group (a cloud-only host has none)" eval '
	! grep -q "^/lib/systemd/system/autoscaled.service.d/" "$T/autoscaled.list" &&
	! dpkg-deb --fsys-tarfile "$(deb autoscaled "$arch")" | tar -xOf - ./lib/systemd/system/autoscaled.service |
		grep -q "^SupplementaryGroups=.*libvirt"'
contents autoscaled-driver-libvirt "$arch" > "$T/libvirt.list"
check "autoscaled-driver-libvirt adds SupplementaryGroups=libvirt (a drop-in) and creates the group" eval '
	grep -qx /lib/systemd/system/autoscaled.service.d/libvirt.conf "$T/libvirt.list" &&
	dpkg-deb --fsys-tarfile "$(deb autoscaled-driver-libvirt "$arch")" |
		tar -xOf - ./lib/systemd/system/autoscaled.service.d/libvirt.conf | grep -qx SupplementaryGroups=libvirt &&
	dpkg-deb -I "$(deb autoscaled-driver-libvirt "$arch")" postinst | grep -q "systemd-sysusers.*autoscaled-driver-libvirt.conf"'

check "/etc/autoscaled/autoscaled.conf is a conffile" eval \
	'dpkg-deb -I "$(deb autoscaled "$arch")" conffiles | grep -qx /etc/autoscaled/autoscaled.conf'
check "no driver in the daemon's package" eval '! grep -q "/drivers/.*\.so$" "$T/autoscaled.list"'
check "the libvirt driver is in autoscaled-driver-libvirt" eval \
	'contents autoscaled-driver-libvirt "$arch" | grep -qx "/usr/lib/$multiarch/autoscaled/drivers/libvirt.so"'
check "the cloud drivers are in autoscaled-driver-cloud" eval '
	contents autoscaled-driver-cloud "$arch" | grep -qx "/usr/lib/$multiarch/autoscaled/drivers/gce-mig.so" &&
	contents autoscaled-driver-cloud "$arch" | grep -qx "/usr/lib/$multiarch/autoscaled/drivers/azure-vmss.so"'
deps() { dpkg-deb -f "$(deb "$1" "$arch")" Depends; }
check "a cloud-only host does not pull libvirt: $(deps autoscaled); $(deps autoscaled-driver-cloud)" eval '
	! deps autoscaled | grep -q libvirt && ! deps autoscaled-driver-cloud | grep -q libvirt'
check "the libvirt driver depends on libvirt and on the same daemon version" eval '
	deps autoscaled-driver-libvirt | grep -q "libvirt0" &&
	deps autoscaled-driver-libvirt | grep -q "autoscaled (= $version)"'

# A cloud-only root first, then the libvirt driver added to it.
R="$T/root"
dpkg -x "$(deb autoscaled "$arch")" "$R"
dpkg -x "$(deb autoscaled-driver-cloud "$arch")" "$R"
AUTOSCALED_DRIVER_DIR="$R/usr/lib/$multiarch/autoscaled/drivers"
export AUTOSCALED_DRIVER_DIR
out=$("$R/usr/sbin/autoscaled" -n -c "$R/etc/autoscaled/autoscaled.conf" 2>&1)
check "autoscaled -n accepts the shipped /etc/autoscaled/autoscaled.conf${out:+: $out}" test "$out" = "configuration OK"
# The annotated example drives a libvirt pool: a cloud-only host refuses it,
# naming the driver that is not installed, as the daemon would at start.
out=$("$R/usr/sbin/autoscaled" -n -c "$R/usr/share/doc/autoscaled/examples/autoscaled.conf" 2>&1)
check "a cloud-only root refuses the libvirt example, naming the missing driver${out:+: $out}" eval \
	'echo "$out" | grep -q "unknown driver '"'"'libvirt'"'"'"'
# One line per driver, its options indented under it.
drivers() { "$R/usr/sbin/autoscaled" --list-drivers | awk 'NR > 1 && /^  [^ ]/ { print $1 }' | sort | tr '\n' ' '; }
check "--list-drivers on a cloud-only root: $(drivers)" test "$(drivers)" = "azure-vmss gce-mig "
dpkg -x "$(deb autoscaled-driver-libvirt "$arch")" "$R"
check "--list-drivers with the libvirt driver: $(drivers)" test "$(drivers)" = "azure-vmss gce-mig libvirt "
out=$("$R/usr/sbin/autoscaled" -n -c "$R/usr/share/doc/autoscaled/examples/autoscaled.conf" 2>&1)
check "with the libvirt driver, autoscaled -n accepts the shipped example${out:+: $out}" test "$out" = "configuration OK"
for f in "$R"/usr/share/doc/autoscaled/examples/*.conf; do
	out=$("$R/usr/sbin/autoscaled" -n -c "$f" 2>&1)
	check "autoscaled -n accepts the recipe ${f##*/}${out:+: $out}" test "$out" = "configuration OK"
done
check "autoscaled --version says the package's version" \
	test "$("$R/usr/sbin/autoscaled" --version)" = "autoscaled ${version%%-*}"
check "the unit runs the packaged daemon on the packaged configuration" eval '
	grep -qx "ExecStart=/usr/sbin/autoscaled -c /etc/autoscaled/autoscaled.conf" \
		"$R/lib/systemd/system/autoscaled.service"'

# The shipped default configuration starts a daemon (with the paths moved
# into the test's directory and a free port): ready, serving its metrics.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$T/etc/conf.d" "$T/state"
sed -e "s|\"/var/lib/autoscaled\"|\"$T/state\"|" -e "s|\"/run/autoscaled/admin.sock\"|\"$T/admin.sock\"|" \
	-e "s|\"127.0.0.1:9851\"|\"127.0.0.1:$port\"|" "$R/etc/autoscaled/autoscaled.conf" > "$T/etc/autoscaled.conf"
"$R/usr/sbin/autoscaled" -f -c "$T/etc/autoscaled.conf" > "$T/daemon.log" 2>&1 &
DAEMON_PID=$!
scraped() {
	kill -0 "$DAEMON_PID" 2>/dev/null || return 2
	curl -sf "http://127.0.0.1:$port/metrics" 2>/dev/null | grep -q "^autoscaled_build_info{version=\"${version%%-*}\"} 1$"
}
n=50
until scraped; do
	[ $? -eq 2 ] || [ $n -eq 0 ] && break
	sleep 0.2
	n=$((n - 1))
done
check "the unpacked daemon starts on the default configuration and serves its metrics" scraped
"$R/usr/bin/autoscalectl" -s "$T/admin.sock" status > "$T/status" 2>&1
check "the unpacked autoscalectl talks to it" test $? -eq 0
[ "${tap_failed:-0}" -gt 0 ] && sed 's/^/# daemon: /' "$T/daemon.log"
tap_done
