#!/bin/sh
# azure-vmss against the Azure emulator (tests/emulators/azure.py); TAP on stdout.
. "$top_srcdir/tests/integration/tap.sh"
command -v python3 >/dev/null || skip_all "python3 missing"
PYTHONDONTWRITEBYTECODE=1 exec python3 "$top_srcdir/tests/integration/cloud_azure.py"
