#!/bin/sh
# gce_monitoring and azure_monitor against the emulators; TAP on stdout.
command -v python3 >/dev/null && command -v openssl >/dev/null || { echo "1..0 # SKIP python3 or openssl missing"; exit 0; }
PYTHONDONTWRITEBYTECODE=1 exec python3 "$top_srcdir/tests/integration/cloud_sources.py"
