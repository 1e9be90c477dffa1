#!/usr/bin/env bash
# End-to-end test of record and replay: records a short run with the dashboard (--record) in a
# private tmux server, replays it in the dashboard at 50x speed until FINISHED, and replays a
# few frames outside tmux with stdout to a file.
#
# usage: replay.sh RINGSIDE SCRATCH_DIR
# Every wait polls capture-pane against a deadline; on a failure the step and the last screen
# are printed and the script exits 1. The tmux server is killed on every exit path.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 RINGSIDE SCRATCH_DIR" >&2
    exit 2
fi
RINGSIDE=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SCRATCH=$2
SOCK="rs-e2e-replay-$$"
SESSION=rs
STEP="start"
SCREEN=""

if ! command -v tmux > /dev/null 2>&1; then
    echo "replay e2e: tmux is not installed" >&2
    exit 1
fi
[ -x "$RINGSIDE" ] || { echo "replay e2e: $RINGSIDE is not executable" >&2; exit 1; }

unset TMUX
tm() { tmux -L "$SOCK" -f /dev/null "$@"; }
cleanup() { tm kill-server > /dev/null 2>&1; }
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

capture() { SCREEN=$(tm capture-pane -p -t "$SESSION" 2> /dev/null) || SCREEN=""; }

fail() {
    echo "replay e2e: FAILED at step: $STEP" >&2
    [ $# -gt 0 ] && echo "  $*" >&2
    echo "---- last screen ----" >&2
    printf '%s\n' "$SCREEN" >&2
    echo "---------------------" >&2
    exit 1
}

# wait_for STEP SECONDS PREDICATE [ARGS...]: poll the screen every 0.2 s until PREDICATE (run
# with $SCREEN set) succeeds, or fail after SECONDS.
wait_for() {
    STEP=$1
    local limit=$2 start
    shift 2
    start=$(date +%s%N)
    while :; do
        capture
        "$@" && return 0
        if [ $((($(date +%s%N) - start) / 1000000)) -ge $((limit * 1000)) ]; then
            fail "no match within ${limit}s"
        fi
        sleep 0.2
    done
}

has() { printf '%s\n' "$SCREEN" | grep -qF -- "$1"; }
header_has() { printf '%s\n' "$SCREEN" | head -n 3 | grep -qF -- "$1"; }
file_exists() { [ -e "$1" ]; }
session_gone() { ! tm has-session -t "$SESSION" > /dev/null 2>&1; }
# The synchronize panel's stream row with a non-zero count.
stream_row() { printf '%s\n' "$SCREEN" | grep -Eq '^ stream +[1-9][0-9]* '; }
finished_with_data() {
    header_has "FINISHED" && header_has "epoch 2/2" && has "memory pool" && stream_row &&
        has "checkpoint written"
}

# start_in_tmux DIR COMMAND...: run COMMAND in a 120x40 pane; DIR/status gets "exit=N" and
# DIR/done appears when it ends.
start_in_tmux() {
    local dir=$1
    shift
    cat > "$dir/run.sh" << 'EOF'
dir=$1
shift
"$@"
echo "exit=$?" > "$dir/status"
: > "$dir/done"
EOF
    tm new-session -d -s "$SESSION" -x 120 -y 40 sh "$dir/run.sh" "$dir" "$@" ||
        fail "tmux new-session failed"
}

quit_and_check() {
    local dir=$1
    tm send-keys -t "$SESSION" q
    wait_for "$2: 'q' ends the command" 30 file_exists "$dir/done"
    wait_for "$2: the tmux session ends" 10 session_gone
    STEP="$2: exit status"
    grep -qx 'exit=0' "$dir/status" || fail "$(cat "$dir/status")"
}

t0=$SECONDS
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH/record" "$SCRATCH/replay" || exit 1
REC="$SCRATCH/run.jsonl"

# 1. Record a short run with the dashboard.
STEP="record: start"
start_in_tmux "$SCRATCH/record" "$RINGSIDE" --backend cpu --synthetic-days 5 --epochs 2 \
    --output "$SCRATCH/record" --record "$REC"
wait_for "record: the run finishes (FINISHED)" 60 header_has "FINISHED"
quit_and_check "$SCRATCH/record" "record"
STEP="record: the recording ends with a summary"
[ -s "$REC" ] || fail "no recording at $REC"
tail -n 1 "$REC" | grep -q '"type":"summary".*"state":"completed"' ||
    fail "last line: $(tail -n 1 "$REC")"

# 2. Replay it in the dashboard at 50x until it finishes, with every panel showing data.
STEP="replay: start"
start_in_tmux "$SCRATCH/replay" "$RINGSIDE" replay "$REC" --speed 50
wait_for "replay: FINISHED with the panels showing data" 60 finished_with_data
quit_and_check "$SCRATCH/replay" "replay"

# 3. A few frames outside tmux, the screen going to a file.
STEP="replay --frames 3 -d 1 outside tmux"
SCREEN=""
TERM=xterm-256color "$RINGSIDE" replay "$REC" --frames 3 -d 1 < /dev/null \
    > "$SCRATCH/frames.out" 2> "$SCRATCH/frames.err"
rc=$?
[ "$rc" -eq 0 ] || fail "exit status $rc: $(cat "$SCRATCH/frames.err")"
[ -s "$SCRATCH/frames.out" ] || fail "nothing written to stdout"

echo "replay e2e: ok ($((SECONDS - t0)) s)"
