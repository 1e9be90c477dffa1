#!/usr/bin/env bash
# End-to-end test of the kernel-log watcher in the dashboard: driver failures written to a
# FIFO (--kmsg-file) reach the events panel as one event per group, a marker row on the
# timeline, and a detail view with what helps; a flood of 300,000 lines leaves the screen
# refreshing, memory bounded and a drop count in the title; an unreadable kernel log is said
# in the events panel with the ways out, and everything else keeps working; --inject kmsg:FILE
# replays a capture with the real kernel log off, and a bad one stops the start with status 2.
#
# usage: kmsg.sh RINGSIDE SCRATCH_DIR
E2E_NAME="kmsg e2e"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

t0=$SECONDS
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH" || exit 1
OUT=$SCRATCH/out
FIFO=$SCRATCH/kmsg.fifo
mkfifo "$FIFO" || exit 1

start() { # extra ringside flags...
    tm new-session -d -s "$SESSION" -x 160 -y 48 "$RINGSIDE" --backend cpu --synthetic-days 5 \
        --epochs 100000 --output "$OUT" --telemetry none "$@" || fail "tmux new-session failed"
    PID=$(tm list-panes -t "$SESSION" -F '#{pane_pid}')
}
hwm_kib() { awk '/^VmHWM:/ {print $2}' "/proc/$PID/status"; }
elapsed() { printf '%s\n' "$SCREEN" | head -n 1 | grep -oE '[0-9]{2}:[0-9]{2}:[0-9]{2}' | tail -n 1; }

STEP="start on a FIFO"
start --kmsg-file "$FIFO"
wait_for "the dashboard is up, following the FIFO" 30 has "kmsg file"

STEP="write driver failures"
{
    echo "amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=1234, emitted seq=1236"
    echo "amdgpu 0000:03:00.0: amdgpu:  Process information: process python3 pid 4242 thread python3 pid 4243"
    echo "amdgpu 0000:03:00.0: amdgpu: MES failed to respond to msg=REMOVE_QUEUE"
    echo "[drm] Initialized amdgpu 3.57.0 20150101 for 0000:03:00.0 on minor 1"
} > "$FIFO"
events() { has "ring timeout: ring gfx_0.0.0 timeout" && has "MES: MES failed to respond"; }
wait_for "the ring timeout (with its process line) and the MES failure are events" 20 events
has "kernel 2" || fail "the title should count 2 kernel events (the process line is folded in)"
has "driver: Initialized amdgpu" || fail "driver chatter should be listed, unflagged"
marker() { printf '%s\n' "$SCREEN" | grep -E 'kernel {2,}.*[TM]' > /dev/null; }
wait_for "the timeline has a kernel row with the failures' letters" 10 marker

STEP="open the ring timeout's details"
for _ in 1 2 3 4; do tm send-keys -t "$SESSION" Tab; done
wait_for "the events panel has the focus" 10 has "> events"
selection() { printf '%s\n' "$SCREEN" | grep -E '^ > [0-9-]' || true; }
moved() { [ "$(selection)" != "$BEFORE" ]; }
BEFORE=$(selection)
tm send-keys -t "$SESSION" End
wait_for "End selects the oldest entry" 5 moved
for _ in $(seq 1 20); do # select the ring timeout: the oldest entries are at the end
    capture
    BEFORE=$(selection)
    printf '%s\n' "$BEFORE" | grep -qF "ring timeout:" && break
    tm send-keys -t "$SESSION" Up
    wait_for "the selection moves up" 5 moved # one key at a time: never past the entry
done
tm send-keys -t "$SESSION" Enter
detail() { has "event detail" && has "fences: signaled 1234, emitted 1236" && has "What helps:"; }
wait_for "Enter shows fields, the process and what helps" 10 detail
has "process: python3 pid 4242" || fail "the process line's fields are missing"
tm send-keys -t "$SESSION" Escape
wait_for "Esc goes back to the list" 10 eval '! has "event detail"'
tm send-keys -t "$SESSION" k
latest() { has "event detail" && has "MES failed to respond to msg=REMOVE_QUEUE" && has "What helps:"; }
wait_for "k opens the latest kernel failure (the MES one) with what helps" 10 latest
tm send-keys -t "$SESSION" Escape
wait_for "Esc goes back to the list" 10 eval '! has "event detail"'
wait_for "the list holds still under the selection, and says so" 10 has "newer above: Home"
tm send-keys -t "$SESSION" Home
wait_for "Home goes back to the newest" 10 eval '! has "newer above"'

STEP="flood"
before=$(hwm_kib)
capture
clock1=$(elapsed)
line="amdgpu 0000:03:00.0: amdgpu: sq_intr: error, se 0, data 0x1, sa 0, priv 1, wave_id 0, simd_id 0, wgp_id 0"
yes "$line" | head -n 300000 > "$FIFO" &
writer=$!
clock_moves() { [ "$(elapsed)" != "$clock1" ]; }
wait_for "the screen keeps refreshing during the flood" 20 clock_moves
wait "$writer" || fail "the flood writer failed"
wait_for "the drop count shows in the events title" 30 has "dropped"
wait_for "the repeats collapse into one entry" 30 has "sq_intr: sq_intr: error"
after=$(hwm_kib)
[ $((after - before)) -lt 65536 ] || fail "peak memory grew by $((after - before)) KiB in the flood"

tm send-keys -t "$SESSION" q q
wait_for "q ends the run" 60 session_gone
next_server

STEP="an unreadable kernel log"
RINGSIDE_KMSG_DEVICE=$SCRATCH/no-such-kmsg start
unreadable() { has "kmsg UNREADABLE" && has "kernel log off"; }
wait_for "the events panel says the kernel log cannot be read" 30 unreadable
wait_for "training goes on" 30 has "RUNNING"
tm send-keys -t "$SESSION" q q
wait_for "q ends the run" 60 session_gone
next_server

STEP="an injected kernel log (--inject kmsg:FILE), with the real one off"
INJECT=$(cd "$(dirname "$0")/../fixtures/kmsg/inject" && pwd)/ring-timeout-reset.log
start --no-kmsg --inject "kmsg:$INJECT"
wait_for "a notice says what is armed" 30 has "fault injection armed: kmsg:"
wait_for "the injected ring timeout is an event" 20 has "ring timeout: ring gfx_0.0.0 timeout"
wait_for "the reset lines follow at their pace (1 and 2.5 s later)" 20 has "GPU reset(1) succeeded!"
has "kmsg off" || fail "the title should say the real kernel log is off"
tm send-keys -t "$SESSION" q q
wait_for "q ends the run" 60 session_gone

STEP="a bad --inject kmsg: spec"
bad_spec() { # expected-message spec: status 2 before the dashboard starts, the message first
    "$RINGSIDE" --backend cpu --synthetic-days 5 --epochs 1 --telemetry none --output "$OUT" \
        --no-kmsg --inject "$2" < /dev/null > "$SCRATCH/bad.out" 2> "$SCRATCH/bad.err"
    local rc=$?
    SCREEN=$(cat "$SCRATCH/bad.err")
    [ "$rc" -eq 2 ] || fail "--inject $2: exit status $rc, expected 2"
    head -n 1 "$SCRATCH/bad.err" | grep -qF -- "$1" || fail "--inject $2: the first line lacks '$1'"
}
bad_spec "--inject kmsg: needs a file" "kmsg:"
bad_spec "ringside: --inject kmsg:/nonexistent: No such file or directory" "kmsg:/nonexistent"
[ "$(wc -l < "$SCRATCH/bad.err")" -eq 1 ] || fail "an unreadable file should be one line on stderr"
echo "kmsg e2e: ok ($((SECONDS - t0)) s)"
