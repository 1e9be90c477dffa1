#!/usr/bin/env bash
# End-to-end test of the telemetry in the dashboard: ringside runs in a private tmux server on
# the fixture machine (an RX 7900 XTX and a 780M APU: sysfs, debugfs and /proc trees), the GPU
# panel lists both cards with their values, and the GPU overlay's three pages (details with
# sources, VRAM reconciliation, providers) open with g and cycle with Tab. The loop trains until
# stopped (--epochs 0): a run that ended would show its summary, which takes the first key.
#
# usage: telemetry.sh RINGSIDE SCRATCH_DIR
E2E_NAME="telemetry e2e"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

FIX=$(cd "$(dirname "$0")/../fixtures/telemetry/rdna3-apu" && pwd)
t0=$SECONDS
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH" || exit 1
OUT=$SCRATCH/out
FIFO=$SCRATCH/kmsg.fifo
mkfifo "$FIFO" || exit 1

STEP="start"
tm new-session -d -s "$SESSION" -x 160 -y 48 "$RINGSIDE" --backend cpu --synthetic-days 5 \
    --epochs 0 --output "$OUT" --telemetry sysfs,debugfs,fdinfo --telemetry-interval 100 \
    --sysfs-root "$FIX/sys" --debugfs-root "$FIX/debugfs" --proc-root "$FIX/proc" \
    --kmsg-file "$FIFO" ||
    fail "tmux new-session failed"

both_gpus() { has "0 Radeon RX 7900 XTX" && has "19.8 GiB/24.0 GiB" && has "97%" && has "68C"; }
wait_for "the GPU panel lists both cards with their values" 30 both_gpus
has "1 AMD GPU 0x15bf" || fail "the APU is missing"
wait_for "the stalled ring reaches the events panel" 30 has "comp_1.0.0 stalled"
echo "amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=5, emitted seq=7" > "$FIFO"
wait_for "a kernel-log failure naming the card marks its row" 20 has "T 0 Radeon RX 7900 XTX"
has "  1 AMD GPU 0x15bf" || fail "the APU's row should carry no mark"

tm send-keys -t "$SESSION" g
details() { has "[ details ]" && has "VRAM used" && has "sysfs" && has "n/a"; }
wait_for "g opens the details page: values with sources, n/a for unread ones" 10 details
tm send-keys -t "$SESSION" Tab
recon() { has "[ VRAM reconciliation ]" && has "drm_buddy (debugfs)" && has "device used - processes"; }
wait_for "Tab: the VRAM reconciliation" 10 recon
tm send-keys -t "$SESSION" Tab
providers() { has "[ providers ]" && has "debugfs" && has "fdinfo" && has "last us"; }
wait_for "Tab: the providers page" 10 providers
tm send-keys -t "$SESSION" Right
wait_for "Right: the next GPU" 10 has "GPU 1 (2 in all)"
tm send-keys -t "$SESSION" Escape
wait_for "Esc closes the overlay" 10 eval '! has "[ providers ]"'

tm send-keys -t "$SESSION" q
wait_for "q ends the run" 60 session_gone
echo "telemetry e2e: ok ($((SECONDS - t0)) s)"
