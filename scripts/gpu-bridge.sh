#!/usr/bin/env bash
# The Python bridge on a GPU machine, under `ringside watch` in tmux (200x60):
#   1. tests/bench/bench_bridge.py: PyTorch training with and without the bridge in one run
#      (its cost), and the allocator as memory_stats() gives it beside the dashboard's pool
#      panel (the screen is printed);
#   2. with two or more GPUs: tests/bench/bridge_ddp_hang.py under torchrun (two ranks; rank 1
#      hangs in destroy_process_group): the dashboard must say HUNG and name rank 1 and the
#      call within 60 s (its screen is printed).
# usage: scripts/gpu-bridge.sh BUILD_DIR     (after scripts/gpu-check.sh build BUILD_DIR)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=$1
R=$dir/ringside
export RINGSIDE_SOCKET=$dir/bridge.sock
T="tmux -L rs-bridge -f /dev/null"
$T kill-server 2>/dev/null || true
trap '$T kill-server 2>/dev/null || true' EXIT
$T new-session -d -s w -x 200 -y 60 \
    "TERM=xterm-256color $R watch --socket $RINGSIDE_SOCKET --sync-timeout 5 -d 5"
for _ in $(seq 50); do [ -S "$RINGSIDE_SOCKET" ] && break; sleep 0.2; done
screen() { $T capture-pane -p -t w; }
# ringside watch opens no GPU context: the driver lists no compute process of its own
watch_pid=$(pgrep -f "ringside watch --socket $RINGSIDE_SOCKET" | head -n 1)
apps=$(nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader || true)
echo "compute processes with ringside watch (pid $watch_pid) running: ${apps:-none}"
if printf '%s\n' "$apps" | grep -q "^$watch_pid,"; then
    echo "gpu-bridge: ringside watch has a GPU context" >&2
    exit 1
fi

echo "== bench_bridge (one GPU)"
BENCH_BRIDGE_HOLD=4 python3 "$top/tests/bench/bench_bridge.py" > "$dir/bench_bridge.out" &
bench=$!
until grep -q "^bridge_sent" "$dir/bench_bridge.out" 2>/dev/null; do
    kill -0 $bench 2>/dev/null || break
    sleep 0.5
done
echo "compute processes while the job trains: $(nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader | tr '\n' ';')"
sleep 2 # two frames after the last allocator line
screen > "$dir/bridge-bench.screen"
[ -n "${OUT:-}" ] && cp "$dir/bridge-bench.screen" "$OUT/"
wait $bench
cat "$dir/bench_bridge.out"
grep -E "alloc .* reserved|memory pool|ringside|job" "$dir/bridge-bench.screen" | head -8

gpus=$(nvidia-smi -L 2>/dev/null | wc -l || echo 1)
if [ "$gpus" -ge 2 ]; then
    echo "== two ranks, rank 1 hangs in destroy_process_group"
    torchrun --nproc_per_node=2 "$top/tests/bench/bridge_ddp_hang.py" --hang-s 25 \
        > "$dir/ddp_hang.out" 2>&1 &
    run=$!
    start=$(date +%s)
    seen=no
    while [ $(($(date +%s) - start)) -lt 60 ]; do
        if screen | head -n 3 | grep -q HUNG && screen | grep -q "rank 1"; then
            seen=yes
            break
        fi
        sleep 0.5
    done
    echo "hang seen after $(($(date +%s) - start)) s: $seen"
    screen > "$dir/bridge-hang.screen"
    [ -n "${OUT:-}" ] && cp "$dir/bridge-hang.screen" "$OUT/"
    head -n 4 "$dir/bridge-hang.screen"
    grep -E "rank|HUNG|destroy|in flight|went away" "$dir/bridge-hang.screen" | head -12
    wait $run || true
    tail -3 "$dir/ddp_hang.out"
    [ $seen = yes ]
fi
