#!/bin/sh
# gce-mig against the GCE emulator (tests/emulators/gce.py); TAP on stdout.
. "$top_srcdir/tests/integration/tap.sh"
command -v python3 >/dev/null && command -v openssl >/dev/null || skip_all "python3 or openssl missing"
PYTHONDONTWRITEBYTECODE=1 exec python3 "$top_srcdir/tests/integration/cloud_gce.py"
