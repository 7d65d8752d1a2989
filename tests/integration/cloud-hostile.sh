#!/bin/sh
# Hostile replies to the cloud drivers and sources (tests/emulators); TAP on stdout.
command -v python3 >/dev/null || { echo "1..0 # SKIP python3 missing"; exit 0; }
PYTHONDONTWRITEBYTECODE=1 exec python3 "$top_srcdir/tests/integration/cloud_hostile.py"
