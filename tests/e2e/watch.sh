#!/usr/bin/env bash
# End-to-end test of `ringside watch` with the Python bridge: a small PyTorch training script
# (bridge_job.py, Debian's python3-torch) attaches to a watch dashboard in tmux; its phases
# (one of its own name, shown as "other"), loss, timed synchronizes and a command round trip
# (+ to the script's callback, c for the bridge's safe cleanup, p to pause and resume) must
# appear; killing the dashboard must not stop the script, which ends by itself; its saved
# stream plays back with `ringside replay`; with no dashboard the bridge is a no-op.
#
# usage: watch.sh RINGSIDE SCRATCH_DIR    (Python: $RS_PYTHON, default /usr/bin/python3)
# Exit 77 (skipped) when that Python lacks torch.
E2E_NAME="watch e2e"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
PY=${RS_PYTHON:-/usr/bin/python3}
JOB=$(cd "$(dirname "$0")" && pwd)/bridge_job.py
if ! "$PY" -c 'import torch' 2> /dev/null; then
    echo "$E2E_NAME: $PY cannot import torch (python3-torch): skipped"
    exit 77
fi
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH/none" "$SCRATCH/job"
SOCK_PATH=$SCRATCH/b.sock

STEP="no dashboard: the bridge does nothing, once said"
RINGSIDE_SOCKET=$SCRATCH/none/b.sock "$PY" "$JOB" "$SCRATCH/none" --steps 30 --step-ms 0 \
    > "$SCRATCH/none/out" 2>&1 || fail "the job failed without a dashboard: $(cat "$SCRATCH/none/out")"
[ "$(grep -c 'the bridge does nothing' "$SCRATCH/none/out")" -eq 1 ] || fail "$(cat "$SCRATCH/none/out")"
[ "$(cat "$SCRATCH/none/steps")" = 30 ] || fail "steps: $(cat "$SCRATCH/none/steps")"

tm new-session -d -s "$SESSION" -x 160 -y 50 \
    "TERM=xterm-256color '$RINGSIDE' watch --socket '$SOCK_PATH' -d 2 --no-kmsg; echo exit=\$? > '$SCRATCH/status'" ||
    fail "tmux new-session failed"
wait_for "the dashboard waits for a job" 20 header_has "WATCHING"
has "no job attached" || fail "no word of how to attach"
sock_private() { [ "$(stat -c %a "$SOCK_PATH")" = 600 ]; }
STEP="the socket is the user's alone"
sock_private || fail "socket mode $(stat -c %a "$SOCK_PATH")"

RINGSIDE_SOCKET=$SOCK_PATH "$PY" "$JOB" "$SCRATCH/job" --step-ms 20 \
    --record "$SCRATCH/job/stream.jsonl" > "$SCRATCH/job/out" 2>&1 &
JOB_PID=$!
trap 'kill $JOB_PID 2> /dev/null; cleanup' EXIT
attached() { has "job bridge_job (pid $JOB_PID) attached" && header_has "RUNNING"; }
wait_for "the job attaches" 30 attached
phases() { has "forward" && has "backward" && has "optimizer" && has "other"; }
wait_for "its phases on the timeline" 20 phases
synced() { printf '%s\n' "$SCREEN" | grep -Eq '^ +device +[1-9][0-9]* +[0-9.]+us'; }
wait_for "its timed synchronizes" 20 synced
wait_for "its loss" 20 has "loss 0."

tm send-keys -t "$SESSION" +
got_cmd() { grep -qx "chunk_step 1" "$SCRATCH/job/commands" 2> /dev/null; }
wait_for "+ reaches the script's callback" 20 got_cmd
wait_for "... and its answer the dashboard" 20 has "chunk_step: chunk now +1"
tm send-keys -t "$SESSION" c
wait_for "c: the bridge's safe cleanup" 20 has "synchronize, empty_cache, synchronize"
tm send-keys -t "$SESSION" p
wait_for "p pauses the job" 20 header_has "PAUSED"
a=$(cat "$SCRATCH/job/steps")
sleep 0.5 # the job is held: its step count must not move (a fixed wait, then a comparison)
[ "$(cat "$SCRATCH/job/steps")" = "$a" ] || fail "the paused job went on"
tm send-keys -t "$SESSION" p
wait_for "p again resumes it" 20 header_has "RUNNING"

tm send-keys -t "$SESSION" p
wait_for "p pauses it once more" 20 header_has "PAUSED"

STEP="a killed dashboard does not stop the job, nor leave it paused"
a=$(cat "$SCRATCH/job/steps")
pkill -KILL -f "watch --socket $SOCK_PATH" || fail "no dashboard to kill"
moved() { [ "$(cat "$SCRATCH/job/steps")" -gt $((a + 20)) ]; }
wait_for "the job lets go of the pause and trains on" 5 moved
kill -0 "$JOB_PID" || fail "the job died with the dashboard"
: > "$SCRATCH/job/stop"
STEP="the job ends by itself"
wait "$JOB_PID" || fail "the job exited non-zero: $(cat "$SCRATCH/job/out")"

STEP="the saved stream replays"
TERM=xterm-256color "$RINGSIDE" replay "$SCRATCH/job/stream.jsonl" --speed 100 --frames 3 \
    > "$SCRATCH/replay.screen" 2> "$SCRATCH/replay.err" || fail "$(cat "$SCRATCH/replay.err")"
grep -q "pytorch-cpu" "$SCRATCH/replay.screen" || fail "the replay does not show the job"

STEP="a new dashboard takes over the socket the killed one left"
tm kill-server > /dev/null 2>&1
next_server
tm new-session -d -s "$SESSION" -x 160 -y 50 \
    "TERM=xterm-256color '$RINGSIDE' watch --socket '$SOCK_PATH' --no-kmsg" || fail "tmux"
wait_for "the new dashboard listens" 20 header_has "WATCHING"
STEP="a second one on the same socket is refused"
rc=0
"$RINGSIDE" watch --socket "$SOCK_PATH" > /dev/null 2> "$SCRATCH/second.err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "another ringside is listening" "$SCRATCH/second.err" ||
    fail "exit $rc: $(cat "$SCRATCH/second.err")"
tm send-keys -t "$SESSION" q
gone() { [ ! -e "$SOCK_PATH" ]; }
wait_for "q removes the socket" 20 gone

# The agent serves a job's stream (--watch) to `ringside attach`, and POST /control reaches it.
STEP="agent --watch"
tm send-keys -t "$SESSION" q 2> /dev/null
tm kill-server > /dev/null 2>&1
next_server
mkdir -p "$SCRATCH/ajob"
printf 'e2e-%s-secret-of-this-run\n' "$$" > "$SCRATCH/token"
chmod 600 "$SCRATCH/token"
"$RINGSIDE" agent --watch --socket "$SCRATCH/a.sock" --listen 127.0.0.1:0 --no-kmsg \
    --telemetry none --token-file "$SCRATCH/token" --allow-control --sync-slow 1 \
    --sync-timeout 2 --output "$SCRATCH/aout" 2> "$SCRATCH/agent.log" &
AGENT_PID=$!
trap 'kill $JOB_PID $AGENT_PID 2> /dev/null; cleanup' EXIT
wait_for "the agent listens" 20 grep -q "serving http://127.0.0.1:" "$SCRATCH/agent.log"
URL=http://127.0.0.1:$(sed -n 's|.*serving http://127.0.0.1:\([0-9]*\).*|\1|p' "$SCRATCH/agent.log")
RINGSIDE_SOCKET=unix://$SCRATCH/a.sock "$PY" "$JOB" "$SCRATCH/ajob" --step-ms 20 \
    --slow-sync-at 40 --slow-sync-s 3 > "$SCRATCH/ajob/out" 2>&1 &
JOB_PID=$!
wait_for "the agent serves the job" 30 grep -q "attached: its stream is served" "$SCRATCH/agent.log"
tm new-session -d -s "$SESSION" -x 160 -y 50 \
    "TERM=xterm-256color '$RINGSIDE' attach '$URL' --token-file '$SCRATCH/token'" || fail "tmux"
attached_remote() { has "pytorch-cpu" && has "forward" && has "loss 0."; }
wait_for "attach shows the job" 30 attached_remote
reply=$(curl -s -X POST -H "Authorization: Bearer $(cat "$SCRATCH/token")" \
    "$URL/control?cmd=chunk_step&arg=-1")
case $reply in *'"ok":true'*) ;; *) fail "POST /control: $reply" ;; esac
got_remote() { grep -qx "chunk_step -1" "$SCRATCH/ajob/commands" 2> /dev/null; }
wait_for "POST /control reaches the job" 20 got_remote
wait_for "... and its answer the attached dashboard" 20 has "chunk_step: chunk now -1"
STEP="the served job's 3 s synchronize in /events: slow, HANG, recovered, the diagnosis"
events() { curl -sf -H "Authorization: Bearer $(cat "$SCRATCH/token")" "$URL/events?since=0&follow=0"; }
hang_events() {
    events > "$SCRATCH/aevents.jsonl" &&
        grep -q 'stream.synchronize for [0-9.]* s: slow' "$SCRATCH/aevents.jsonl" &&
        grep -q 'stream.synchronize for [0-9.]* s: HANG' "$SCRATCH/aevents.jsonl" &&
        grep -q 'stream.synchronize returned after' "$SCRATCH/aevents.jsonl"
}
wait_for "the hang watch's alerts are events" 30 hang_events
grep -q '"diagnosis":true' "$SCRATCH/aevents.jsonl" || fail "no diagnosis line in /events"
grep '"diagnosis":true' "$SCRATCH/aevents.jsonl" | grep -q 'Verdict: ' || fail "the diagnosis has no verdict"
grep -q 'hang diagnostics written to' "$SCRATCH/aevents.jsonl" || fail "no hang bundle said"
ls "$SCRATCH"/aout/hang-*.json > /dev/null 2>&1 || fail "no hang bundle in $SCRATCH/aout"
: > "$SCRATCH/ajob/stop"
STEP="the served job ends"
wait "$JOB_PID" || fail "$(cat "$SCRATCH/ajob/out")"
kill "$AGENT_PID"
wait "$AGENT_PID" 2> /dev/null || true
echo "$E2E_NAME: ok"
