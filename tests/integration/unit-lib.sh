# The installed unit's identity and restrictions, for tests that run the
# daemon as systemd would (with setpriv, as systemd is not PID 1 where the
# suite runs). Sourced after tap.sh; sets UNIT_FILES (the generated unit
# and, with the libvirt driver built, its drop-in, in systemd's order) and
# NS_PASSWD / NS_GROUP: copies of the host's files with the unit's user and
# groups added as the sysusers.d files would create them, for a mount
# namespace (the host's are left alone). Needs $T.

UNIT="$top_builddir/systemd/autoscaled.service"
[ -f "$UNIT" ] || skip_all "the unit is not generated"
command -v setpriv >/dev/null || skip_all "setpriv is missing (util-linux)"
command -v unshare >/dev/null || skip_all "unshare is missing (util-linux)"
[ "$(id -u)" = 0 ] || skip_all "needs root, to apply the unit's restrictions"
unshare -m true 2>/dev/null || skip_all "cannot make a mount namespace here"

UNIT_FILES=$UNIT
[ -f "$top_builddir/drivers/.libs/libvirt.so" ] &&
	UNIT_FILES="$UNIT_FILES $top_srcdir/systemd/autoscaled.service.d/libvirt.conf"

# unit_key KEY: the value of the last assignment of KEY in UNIT_FILES.
unit_key() { cat $UNIT_FILES | sed -n "s/^$1=//p" | tail -1; }

# unit_list KEY: a list-valued KEY (SupplementaryGroups=) over UNIT_FILES:
# each assignment adds to it, an empty one resets it.
unit_list() {
	cat $UNIT_FILES | sed -n "s/^$1=//p" | awk '$0 == "" { l = ""; next } { l = l " " $0 } END { print l }' |
		xargs
}

# The user and the groups the sysusers.d files create, added to the copies
# with ids no other entry uses.
NS_PASSWD="$T/ns-passwd"
NS_GROUP="$T/ns-group"
cp /etc/passwd "$NS_PASSWD"
cp /etc/group "$NS_GROUP"
free_id() {
	local id
	for id in $(shuf -i 20000-29999 -n 50); do
		cut -d: -f3 "$NS_PASSWD" "$NS_GROUP" | grep -qx "$id" || { echo "$id"; return; }
	done
}
for f in "$top_srcdir"/systemd/sysusers.d/*.conf; do
	while read -r type name _; do
		case $type in
		g) grep -q "^$name:" "$NS_GROUP" || echo "$name:x:$(free_id):" >> "$NS_GROUP" ;;
		u) grep -q "^$name:" "$NS_GROUP" || echo "$name:x:$(free_id):" >> "$NS_GROUP"
		   grep -q "^$name:" "$NS_PASSWD" ||
			echo "$name:x:$(free_id):$(awk -F: -v g="$name" '$1 == g { print $3 }' "$NS_GROUP")::/nonexistent:/usr/sbin/nologin" >> "$NS_PASSWD" ;;
		esac
	done < <(grep -Ev '^[[:space:]]*(#|$)' "$f")
done
ns_uid() { awk -F: -v u="$1" '$1 == u { print $3 }' "$NS_PASSWD"; }
ns_gid() { awk -F: -v g="$1" '$1 == g { print $3 }' "$NS_GROUP"; }

# in_ns COMMAND...: runs COMMAND with the namespace's /etc/passwd and
# /etc/group. exec_in_ns does so in place of the shell (in a subshell put
# in the background, $! is then COMMAND's pid).
exec_in_ns() {
	exec unshare -m sh -c 'mount --bind "$0" /etc/passwd && mount --bind "$1" /etc/group && shift && exec "$@"' \
		"$NS_PASSWD" "$NS_GROUP" "$@"
}
in_ns() { (exec_in_ns "$@"); }

# The unit's identity and restrictions as setpriv options, in UNIT_SETPRIV
# (an array); UNIT_UID, UNIT_GID and UNIT_GROUPS (names) for the checks.
UNIT_USER=$(unit_key User)
UNIT_GROUP=$(unit_key Group)
UNIT_GROUPS=$(unit_list SupplementaryGroups)
UNIT_UID=$(ns_uid "${UNIT_USER:-root}")
UNIT_GID=$(ns_gid "${UNIT_GROUP:-root}")
UNIT_SETPRIV=(--reuid="$UNIT_UID" --regid="$UNIT_GID")
if [ -n "$UNIT_GROUPS" ]; then
	gids=
	for g in $UNIT_GROUPS; do gids="$gids,$(ns_gid "$g")"; done
	UNIT_SETPRIV+=(--groups="${gids#,}")
else
	UNIT_SETPRIV+=(--clear-groups)
fi
caps=$(unit_key CapabilityBoundingSet)
if [ -z "$caps" ]; then
	UNIT_SETPRIV+=(--bounding-set=-all)
else
	UNIT_SETPRIV+=(--bounding-set="-all,$(echo "$caps" | tr 'A-Z' 'a-z' | sed 's/cap_/+/g; s/ \+/,/g; s/^,//')")
fi
[ "$(unit_key NoNewPrivileges)" = yes ] && UNIT_SETPRIV+=(--no-new-privs)
UNIT_UMASK=$(unit_key UMask)

# as_unit COMMAND...: runs COMMAND as the unit runs the daemon, in the
# namespace, in place of the shell: call it in a subshell, (as_unit ...) &.
as_unit() { umask "${UNIT_UMASK:-0022}"; exec_in_ns setpriv "${UNIT_SETPRIV[@]}" -- "$@"; }
