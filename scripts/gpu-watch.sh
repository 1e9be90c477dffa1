#!/usr/bin/env bash
# `ringside watch` over DDP jobs on the GPUs of this machine (tmux, 160x50), screens and hang
# bundles into OUT_DIR:
#   1. one rank of DDP over NCCL, a kernel that runs 9 s then a timed synchronize: the GPU busy
#      hang and its verdict;
#   2. two ranks of DDP (NCCL on two GPUs, else gloo with CUDA tensors on one), rank 1 sleeping
#      9 s before its all_reduce: the host-side hang, rank 1 named, its stack.
# usage: scripts/gpu-watch.sh RINGSIDE OUT_DIR   (PyTorch with CUDA: $RS_PYTHON, default python3)
set -uo pipefail
rs=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
out=$2
top=$(cd "$(dirname "$0")/.." && pwd)
py=${RS_PYTHON:-python3}
job=$top/tests/e2e/ddp_job.py
mkdir -p "$out"
T="tmux -L gpuwatch -f /dev/null"
gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU' || echo 0)

screen_until() { # TEXT SECONDS: poll the screen until TEXT shows
    local i
    for i in $(seq 1 $((${2} * 5))); do
        $T capture-pane -p -t w | grep -qF -- "$1" && return 0
        sleep 0.2
    done
    return 1
}

details() { # open the details of the newest alert matching TEXT, save them as NAME
    local i
    for i in 1 2 3 4 5 6 7; do
        $T capture-pane -p -t w | grep -q "> events" && break
        $T send-keys -t w Tab
        sleep 0.3
    done
    for i in $(seq 1 14); do
        $T capture-pane -p -t w | grep -E '^ > [0-9-]' | grep -qF -- "$1" && break
        $T send-keys -t w Down
        sleep 0.2
    done
    $T send-keys -t w Enter
    sleep 0.8
    $T capture-pane -p -t w > "$out/$2-detail1.txt"
    $T send-keys -t w NPage
    sleep 0.5
    $T capture-pane -p -t w > "$out/$2-detail2.txt"
    $T send-keys -t w NPage
    sleep 0.5
    $T capture-pane -p -t w > "$out/$2-detail3.txt"
    $T send-keys -t w Escape Home
    for i in 1 2 3 4 5 6; do $T send-keys -t w Tab; sleep 0.2; done
}

run() { # NAME ALERT_TEXT JOB_ARGS...
    local name=$1 alert=$2
    shift 2
    $T kill-server 2> /dev/null
    rm -rf "$out/$name.sock.d"
    mkdir -m 700 "$out/$name.sock.d" "$out/$name.job"
    $T new-session -d -s w -x 160 -y 50 \
        "TERM=xterm-256color '$rs' watch --socket '$out/$name.sock.d/b.sock' --sync-slow 2 --sync-timeout 6 --output '$out/$name.bundles' 2> '$out/$name.err'; sleep 600"
    screen_until "WATCHING" 20 || echo "$name: the dashboard did not start: $(cat "$out/$name.err")"
    RINGSIDE_SOCKET=$out/$name.sock.d/b.sock "$py" "$job" "$out/$name.job" "$@" \
        > "$out/$name.job.out" 2>&1 &
    local pid=$!
    sleep 8
    $T capture-pane -p -t w > "$out/$name-1-running.txt"
    if screen_until "$alert" 60; then
        sleep 1
        $T capture-pane -p -t w > "$out/$name-2-slow.txt"
        details "$alert" "$name-3"
        screen_until "HANG (over" 20 && $T capture-pane -p -t w > "$out/$name-4-hang.txt"
        screen_until "recovered" 30 && $T capture-pane -p -t w > "$out/$name-5-recovered.txt"
    else
        echo "$name: no alert '$alert' on the screen"
        $T capture-pane -p -t w > "$out/$name-2-noalert.txt"
    fi
    wait "$pid"
    echo "$name: job exit $?"
    $T capture-pane -p -t w > "$out/$name-6-end.txt"
    $T send-keys -t w q
    sleep 1
    $T kill-server 2> /dev/null
}

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/gpus.txt" 2>&1
run busy "slow (over 2.0 s)" --ranks 1 --backend nccl --device cuda --epochs 2 --steps 100 \
    --kernel-step 60 --kernel-s 9
if [ "$gpus" -ge 2 ]; then
    run held "rank 1 has not entered it" --ranks 2 --backend nccl --device cuda --epochs 2 \
        --steps 100 --hold-rank 1 --hold-step 60 --hold-s 9
else
    run held "rank 1 has not entered it" --ranks 2 --backend gloo --device cuda --epochs 2 \
        --steps 100 --hold-rank 1 --hold-step 60 --hold-s 9
fi
ls -la "$out"
