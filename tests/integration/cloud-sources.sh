#!/bin/sh
# gce_monitoring and azure_monitor against the emulators; TAP on stdout.
. "$top_srcdir/tests/integration/tap.sh"
command -v python3 >/dev/null && command -v openssl >/dev/null || skip_all "python3 or openssl missing"
PYTHONDONTWRITEBYTECODE=1 exec python3 "$top_srcdir/tests/integration/cloud_sources.py"
