#!/usr/bin/env bash
# End-to-end test of `ringside watch` with a real DistributedDataParallel job (ddp_job.py:
# torch.multiprocessing.spawn, gloo, Debian's python3-torch on the CPU):
#  - two ranks attach as two named rank rows, their gradient all-reduces counted;
#  - rank 1 held before a collective: within --sync-slow and a refresh an alert names rank 1 as
#    the one not entered and rank 0 as waiting, its details give the verdict and rank 1's
#    Python stack, a HANG follows with a hang bundle, then rank 0 recovers;
#  - a 6 s synchronize leaves SLOW, HANG and recovered events;
#  - the last rank held in destroy_process_group after the other left is a HANG whose verdict
#    is the peer that exited;
#  - four ranks of a plain loop: rank 3 goes away in the middle of an all_reduce.
#
# usage: ddp.sh RINGSIDE SCRATCH_DIR    (Python: $RS_PYTHON, default /usr/bin/python3)
# Exit 77 (skipped) when that Python lacks torch.
E2E_NAME="ddp e2e"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
PY=${RS_PYTHON:-/usr/bin/python3}
JOB=$(cd "$(dirname "$0")" && pwd)/ddp_job.py
if ! "$PY" -c 'import torch.distributed as d; assert d.is_available()' 2> /dev/null; then
    echo "$E2E_NAME: $PY cannot import torch.distributed (python3-torch): skipped"
    exit 77
fi
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH/j2" "$SCRATCH/j4" "$SCRATCH/out"
SOCK_PATH=$SCRATCH/b.sock
JOB_PID=
trap '[ -n "$JOB_PID" ] && kill $JOB_PID 2> /dev/null; cleanup' EXIT

start() {
    tm new-session -d -s "$SESSION" -x "$1" -y "$2" \
        "TERM=xterm-256color '$RINGSIDE' watch --socket '$SOCK_PATH' --no-kmsg -d 5 --sync-slow 2 --sync-timeout 5 --output '$SCRATCH/out'; echo exit=\$? > '$SCRATCH/status'" ||
        fail "tmux new-session failed"
    wait_for "the dashboard waits for a job" 20 header_has "WATCHING"
}
steps() { cat "$SCRATCH/$1/rank$2.steps" 2> /dev/null || echo 0; }

start 160 50
RINGSIDE_SOCKET=$SOCK_PATH "$PY" "$JOB" "$SCRATCH/j2" --ranks 2 --epochs 2 --steps 100 \
    --hold-rank 1 --hold-step 25 --hold-s 7 --sync-step 50 --sync-s 6 --destroy-hold-s 6 \
    > "$SCRATCH/j2/out" 2>&1 &
JOB_PID=$!

STEP="two ranks attach, each its own row"
ranks() { has "rank 0 of 2" && has "rank 1 of 2"; }
wait_for "both ranks attach, named" 60 ranks
rows() { printf '%s\n' "$SCREEN" | grep -Eq '^ *rank 0\b' && printf '%s\n' "$SCREEN" | grep -Eq '^ *rank 1\b' ||
    { has "rank 0" && has "rank 1"; }; }
wait_for "two rank rows" 20 rows
counted() { printf '%s\n' "$SCREEN" | grep -Eq 'allreduce x[1-9][0-9]'; }
wait_for "their gradient all-reduces counted" 30 counted

STEP="rank 1 held before its all_reduce"
held() { [ "$(steps j2 0)" -ge 25 ]; }
wait_for "rank 0 reaches the held step" 60 held
SECONDS=0
slow_named() { has "slow: rank 1 has not entered it; rank 0 (pid"; }
wait_for "a slow alert naming rank 1 as not entered" 10 slow_named
[ "$SECONDS" -le 5 ] || fail "the slow alert came ${SECONDS}s after the hold began (slow 2 s + a refresh)"
printf '%s\n' "$SCREEN" | grep -F "slow: rank 1 has not entered it" | grep -Eq "allreduce #[0-9]+ slow" ||
    fail "the alert does not name the all_reduce"
wait_for "the HANG" 10 has "HANG: rank 1 has not entered it; rank 0 (pid"
wait_for "the hang bundle" 10 has "hang diagnostics written to"
ls "$SCRATCH"/out/hang-*.json > /dev/null 2>&1 || fail "no hang bundle in $SCRATCH/out"
grep -q held_before_all_reduce "$SCRATCH"/out/hang-*.json || fail "the bundle lacks rank 1's stack"
grep -q '"diagnosis"' "$SCRATCH"/out/hang-*.json || fail "the bundle lacks the diagnosis"

STEP="the slow alert's details"
for _ in 1 2 3 4 5 6; do
    capture
    has "> events" && break
    tm send-keys -t "$SESSION" Tab
    sleep 0.2 # one key a look: the focus moves a panel a key
done
has "> events" || fail "the events panel never took the focus"
selected() { printf '%s\n' "$SCREEN" | grep -E '^ > [0-9-]' | grep -q "slow: rank 1 has not entered it"; }
for _ in $(seq 1 12); do
    capture
    selected && break
    tm send-keys -t "$SESSION" Down
    sleep 0.2
done
selected || fail "could not select the slow alert"
tm send-keys -t "$SESSION" Enter
detail() { has "event detail" && has "Verdict: a peer rank has not entered the collective"; }
wait_for "its details give the verdict" 10 detail
tm send-keys -t "$SESSION" NPage # the page keys mean the same in every terminal; End may not
stack() { has "Python stack of rank 1" && has "in held_before_all_reduce"; }
wait_for "... and rank 1's Python stack" 10 stack
tm capture-pane -p -t "$SESSION" > "$SCRATCH/detail.screen"
tm send-keys -t "$SESSION" Escape Home # back to the newest events
wait_for "rank 0 recovers" 20 has "recovered (back to ok)"

STEP="a 6 s synchronize"
sync_slow() { has "in stream.synchronize for" && has "slow (over 2.0 s)"; }
wait_for "SLOW" 60 sync_slow
wait_for "HANG" 20 eval 'has "in stream.synchronize for" && has "HANG (over the 5 s"'
wait_for "recovered" 20 has "stream.synchronize returned after"

STEP="the last rank held in destroy_process_group"
destroy_hang() { has "destroy" && has "a peer rank has exited" || has "rank 0 has exited"; }
wait_for "a HANG whose cause is the rank that left" 90 destroy_hang
wait "$JOB_PID" || fail "the DDP job failed: $(tail -5 "$SCRATCH/j2/out")"
JOB_PID=
tm capture-pane -p -t "$SESSION" > "$SCRATCH/j2.screen"

STEP="four ranks, one gone in the middle of an all_reduce"
RINGSIDE_SOCKET=$SOCK_PATH "$PY" "$JOB" "$SCRATCH/j4" --ranks 4 --epochs 1 --steps 20 --plain \
    --hold-rank 0 --hold-step 10 --hold-s 5 --exit-rank 3 --exit-step 10 \
    > "$SCRATCH/j4/out" 2>&1 &
JOB_PID=$!
four() { has "rank 0 of 4" && has "rank 1 of 4" && has "rank 2 of 4" && has "rank 3 of 4"; }
wait_for "four ranks attach" 90 four
gone_mid() { has "rank 3 (pid" && has "went away in allreduce #"; }
wait_for "rank 3 goes away in its all_reduce" 60 gone_mid
wait_for "... said as an error" 10 has "went away without ending while in torch.distributed.all_reduce"
wait "$JOB_PID" && fail "the job of a lost rank should fail"
JOB_PID=
tm send-keys -t "$SESSION" q
wait_for "q quits" 20 file_exists "$SCRATCH/status"
grep -qx "exit=0" "$SCRATCH/status" || fail "the dashboard exited $(cat "$SCRATCH/status")"
echo "$E2E_NAME: ok"
