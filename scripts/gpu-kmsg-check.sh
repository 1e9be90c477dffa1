#!/usr/bin/env bash
# The kernel-log watcher live on a GPU machine (root, /dev/kmsg readable): classify the
# machine's own kernel log, run headless with the whole backlog and a marked test record
# written while it runs, and run the dashboard in tmux to capture what it shows.
#   scripts/gpu-kmsg-check.sh BUILD_DIR OUT_DIR
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
rs=$(cd "$1" && pwd)/ringside
out=$2
mkdir -p "$out"
work=$(mktemp -d)
trap 'tmux -L rs-kmsg kill-server >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
mark="NVRM: ringside live check (a test record, not an error)"

dmesg > "$out/dmesg.txt"
echo "kernel log: $(wc -l < "$out/dmesg.txt") lines, $(grep -c 'NVRM' "$out/dmesg.txt") NVRM"
"$rs" kmsg classify "$out/dmesg.txt" > "$out/classify.jsonl"
"$rs" kmsg classify --all "$out/dmesg.txt" > "$out/classify-all.jsonl"
echo "classify: $(wc -l < "$out/classify.jsonl") failures flagged"
cat "$out/classify.jsonl"

# headless: the backlog, then a record written while it runs
"$rs" train --headless --epochs 40 --synthetic-days 10 --kmsg-backlog 100000 \
    --output "$work/h" --jsonl "$out/headless.jsonl" 2> "$out/headless.err" &
pid=$!
for _ in $(seq 1 100); do grep -q '"type":"kmsg"' "$out/headless.jsonl" 2>/dev/null && break; sleep 0.1; done
echo "<6>$mark" > /dev/kmsg
wait "$pid"
grep '"type":"kmsg"' "$out/headless.jsonl" > "$out/headless-kmsg.jsonl" || true
echo "headless: $(wc -l < "$out/headless-kmsg.jsonl") kernel-log events," \
    "$(grep -c '"category":"none"' "$out/headless-kmsg.jsonl") of them unflagged driver lines," \
    "live test record seen: $(grep -c 'ringside live check' "$out/headless-kmsg.jsonl")"
grep -v '"category":"none"' "$out/headless-kmsg.jsonl" || echo "headless: no failure flagged"

# the dashboard
tmux -L rs-kmsg -f /dev/null new -d -s k -x 200 -y 60 "$rs" --kmsg-backlog 100000 \
    --epochs 100000 --output "$work/d"
for _ in $(seq 1 100); do
    tmux -L rs-kmsg capture-pane -p -t k | grep -q 'kmsg /dev/kmsg' && break
    sleep 0.2
done
echo "<6>$mark" > /dev/kmsg
for _ in $(seq 1 50); do
    tmux -L rs-kmsg capture-pane -p -t k | grep -q 'ringside live check' && break
    sleep 0.2
done
tmux -L rs-kmsg capture-pane -p -t k > "$out/dashboard.txt"
tmux -L rs-kmsg send-keys -t k q q
cat "$out/dashboard.txt"
