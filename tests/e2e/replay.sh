#!/usr/bin/env bash
# End-to-end test of record and replay: records a short run with the dashboard (--record) in a
# private tmux server, replays it in the dashboard at 50x speed until FINISHED, and replays a
# few frames outside tmux with stdout to a file.
#
# usage: replay.sh RINGSIDE SCRATCH_DIR
# Every wait polls capture-pane against a deadline; on a failure the step and the last screen
# are printed and the script exits 1. The tmux server is killed on every exit path.
E2E_NAME="replay e2e"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
# The synchronize panel's stream row with a non-zero count.
stream_row() { printf '%s\n' "$SCREEN" | grep -Eq '^ stream +x?[1-9][0-9]* '; }
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
summary_shown() { header_has "FINISHED" && has "summary" && has "trained      2 epochs"; }
wait_for "replay: FINISHED with its summary over the panels" 60 summary_shown
tm send-keys -t "$SESSION" Escape
wait_for "replay: FINISHED with the panels showing data" 30 finished_with_data
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
