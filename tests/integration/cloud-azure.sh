#!/bin/sh
# azure-vmss against the Azure emulator (tests/emulators/azure.py); TAP on stdout.
command -v python3 >/dev/null || { echo "1..0 # SKIP python3 missing"; exit 0; }
PYTHONDONTWRITEBYTECODE=1 exec python3 "$top_srcdir/tests/integration/cloud_azure.py"
