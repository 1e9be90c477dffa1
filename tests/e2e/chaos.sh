#!/usr/bin/env bash
# The fault matrix's representative slice (every fault once at 1 and 2 devices, headless, with
# the stops in turn; every stop once under the dashboard and in the agent): each cell leaves
# within its deadline plus 2 s with its documented status (tests/chaos/chaos.py; the whole
# matrix is `scripts/dev.sh chaos`). E2E_BACKEND picks the backend (default cpu), CHAOS_DEVICES
# the device counts (default 1,2 on the CPU's simulated devices, 1 on a GPU backend).
#
# usage: chaos.sh RINGSIDE SCRATCH_DIR
set -u
[ $# -eq 2 ] || { echo "usage: $0 RINGSIDE SCRATCH_DIR" >&2; exit 2; }
py=/usr/bin/python3
[ -x "$py" ] || py=python3
backend=${E2E_BACKEND:-cpu}
devices=${CHAOS_DEVICES:-$([ "$backend" = cpu ] && echo 1,2 || echo 1)}
exec "$py" "$(dirname "$0")/../chaos/chaos.py" "$1" "$2" --slice ci --devices "$devices" \
    --backend "$backend" --jobs "${CHAOS_JOBS:-8}"
