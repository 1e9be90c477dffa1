#!/usr/bin/env bash
# The dashboard under a kernel-log flood: 200 frames at 10 per second (-d 1) with --kmsg-file
# on a FIFO, once quiet and once while a writer pushes RATE lines a second (default 100,000:
# sq_intr errors, the worst case: every line is an event). Reports the wall time of the frames
# (on time: about 20 s both ways), the dashboard's CPU time and its peak memory (VmHWM).
#   bench_kmsg_flood.sh RINGSIDE [RATE]
set -u
ringside=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
rate=${2:-100000}
frames=200
dir=$(mktemp -d)
sock="rs-flood-$$"
tm() { tmux -L "$sock" -f /dev/null "$@"; }
trap 'tm kill-server >/dev/null 2>&1; rm -rf "$dir"' EXIT

# writes rate lines a second, in tenths, until killed
flood() {
    local line="amdgpu 0000:03:00.0: amdgpu: sq_intr: error, se 0, data 0x1, sa 0, priv 1, wave_id 0, simd_id 0, wgp_id 0"
    local batch=$((rate / 10)) next
    next=$(date +%s%N)
    while :; do
        yes "$line" | head -n "$batch"
        next=$((next + 100000000))
        local now
        now=$(date +%s%N)
        [ "$now" -lt "$next" ] && sleep "0.$(printf '%09d' $((next - now)))"
    done > "$dir/fifo"
}

run() { # label, flood 0|1
    rm -f "$dir/fifo" && mkfifo "$dir/fifo"
    local t0 pid hwm=0 cpu=0 writer=
    t0=$(date +%s%N)
    tm new-session -d -s b -x 160 -y 48 "$ringside" --backend cpu --synthetic-days 5 \
        --epochs 100000 --telemetry none --output "$dir/out" -d 1 --frames "$frames" \
        --kmsg-file "$dir/fifo"
    pid=$(tm list-panes -t b -F '#{pane_pid}')
    [ "$2" = 1 ] && { flood & writer=$!; }
    local tck
    tck=$(getconf CLK_TCK)
    while kill -0 "$pid" 2>/dev/null; do
        local h s
        h=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
        s=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)
        [ "${h:-0}" -gt "$hwm" ] && hwm=$h
        [ "${s:-0}" -gt "$cpu" ] && cpu=$s
        sleep 0.2
    done
    local wall=$((($(date +%s%N) - t0) / 1000000))
    [ -n "$writer" ] && { kill "$writer" 2>/dev/null; wait "$writer" 2>/dev/null; }
    tm kill-server >/dev/null 2>&1
    awk -v l="$1" -v f="$frames" -v w="$wall" -v c="$cpu" -v t="$tck" -v h="$hwm" 'BEGIN {
        printf "bench_kmsg_flood: %-22s %d frames in %5.2f s (on time: %.1f s), cpu %.2f s, " \
               "peak memory %.1f MiB\n", l, f, w / 1000, f / 10, c / t, h / 1024 }'
}

run "quiet" 0
run "flood $rate lines/s" 1
