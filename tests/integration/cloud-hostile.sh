#!/bin/sh
# Hostile replies to the cloud drivers and sources (tests/emulators); TAP on stdout.
. "$top_srcdir/tests/integration/tap.sh"
command -v python3 >/dev/null || skip_all "python3 missing"
PYTHONDONTWRITEBYTECODE=1 exec python3 "$top_srcdir/tests/integration/cloud_hostile.py"
