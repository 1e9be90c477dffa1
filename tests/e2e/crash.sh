#!/usr/bin/env bash
# End-to-end test of a crash (SIGKILL) in the middle of a run: the event stream (--jsonl) and
# the recording (--record) are flushed per line, so every line written before the kill is whole
# and the recording still replays; the last checkpoint is complete and training resumes from it.
#
# usage: crash.sh RINGSIDE SCRATCH_DIR
E2E_NAME="crash e2e"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
S=$SCRATCH
rm -rf "$S"
mkdir -p "$S" || exit 1
count() { # FILE PATTERN: matching lines, 0 while FILE does not exist
    local n
    n=$(grep -c -- "$2" "$1" 2> /dev/null)
    echo "${n:-0}"
}
# lines and checkpoints enough: a run well under way
under_way() { [ "$(count "$1" '')" -ge 2000 ] && [ "$(count "$2" 'checkpoint written')" -ge 3 ]; }

STEP="a headless run, killed"
"$RINGSIDE" train --headless --backend cpu --synthetic-days 5 --epochs 100000 --telemetry none \
    --no-kmsg --output "$S/out" --jsonl "$S/events.jsonl" > /dev/null 2> "$S/run.err" &
pid=$!
wait_for "events and checkpoints pile up" 60 under_way "$S/events.jsonl" "$S/events.jsonl"
kill -KILL "$pid"
wait "$pid" 2> /dev/null

STEP="the dashboard recording, killed"
tm new-session -d -s "$SESSION" -x 160 -y 48 "$RINGSIDE" --backend cpu --synthetic-days 5 \
    --epochs 100000 --telemetry none --no-kmsg --output "$S/out2" --record "$S/rec.jsonl" ||
    fail "tmux new-session failed"
PID=$(tm list-panes -t "$SESSION" -F '#{pane_pid}')
wait_for "the recording grows" 60 under_way "$S/rec.jsonl" "$S/rec.jsonl"
kill -KILL "$PID"
wait_for "the dashboard is gone" 10 session_gone

STEP="what was written before the kills"
for f in events.jsonl rec.jsonl; do
    # what the kernel got before the kill: whole lines only (a line is written with its newline)
    [ -z "$(tail -c 1 "$S/$f")" ] || fail "$f ends in a cut line"
    [ "$(wc -l < "$S/$f")" -ge 2000 ] || fail "$f is short: $(wc -l < "$S/$f") lines"
    bad=$(grep -cvE '^\{.*\}$' "$S/$f")
    [ "$bad" = 0 ] || fail "$f has $bad lines that are not whole JSON objects"
done
grep -q '"type":"summary"' "$S/rec.jsonl" && fail "a killed run cannot have written its summary"

"$RINGSIDE" replay "$S/rec.jsonl" --frames 3 --speed 100 > /dev/null 2> "$S/replay.err" ||
    fail "the cut recording does not replay: $(head -n 1 "$S/replay.err")"

ls "$S"/out/*.tmp.* > /dev/null 2>&1 && echo "crash e2e: note: a write was cut short"
"$RINGSIDE" train --headless --backend cpu --synthetic-days 5 --epochs 1 --telemetry none \
    --no-kmsg --output "$S/out" --resume "$S/out/vpoc_mlp.rsmodel" --jsonl "$S/resume.jsonl" \
    > /dev/null 2> "$S/run.err" || fail "the last checkpoint does not resume"
grep -q '"type":"summary","state":"completed"' "$S/resume.jsonl" || fail "the resumed run did not complete"
ls "$S"/out/*.tmp.* > /dev/null 2>&1 && fail "a temp file of the killed run is left after the next start"
echo "crash e2e: ok (killed after $(wc -l < "$S/rec.jsonl") recorded lines, all whole; replayed; resumed)"
