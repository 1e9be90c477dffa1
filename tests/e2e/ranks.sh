#!/usr/bin/env bash
# End-to-end test of two ranks of a PyTorch job in `ringside watch`: two stand-ins for gloo
# ranks on the CPU (fake_rank_job.py, the standard library alone) attach as rank 0 and rank 1
# of 2. At 80x24, 120x40 and 200x60: each has a row of its own, named rank 0/2 and rank 1/2,
# in the sync panel and on the timeline (no devN); the header counts them (2 ranks (gloo)),
# shows their progress from the epochs and steps per epoch they told (a fraction and an ETA),
# their steps/s and samples/s, and no chunk or VPOC of a loop they do not run; the pool they
# have not got is n/a, never 0 B, and no value reads n/a/n/a; the device selector says who a
# rank is. A job that tells no length shows its epoch and step alone: no % and no ETA, and
# samples/s n/a when it gave none.
#
# usage: ranks.sh RINGSIDE SCRATCH_DIR    (Python: $RS_PYTHON, default /usr/bin/python3)
E2E_NAME="ranks e2e"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
PY=${RS_PYTHON:-/usr/bin/python3}
JOB=$(cd "$(dirname "$0")" && pwd)/fake_rank_job.py
[ -x "$PY" ] || PY=python3
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH" || exit 1
P0="" P1=""
trap 'kill $P0 $P1 2> /dev/null; cleanup' EXIT

row() { printf '%s\n' "$SCREEN" | sed -n "${1}p"; }
screen_re() { printf '%s\n' "$SCREEN" | grep -Eq -- "$1"; }
not_on_screen() { ! printf '%s\n' "$SCREEN" | grep -Eq -- "$1"; }

# watch W H: a dashboard on a socket of its own in a new tmux server, waiting for jobs
watch() {
    next_server
    SOCK_PATH=$SCRATCH/$1x$2.sock
    tm new-session -d -s "$SESSION" -x "$1" -y "$2" \
        "TERM=xterm-256color '$RINGSIDE' watch --socket '$SOCK_PATH' --no-kmsg" ||
        fail "tmux new-session failed"
    wait_for "$1x$2: the dashboard waits for a job" 20 header_has "WATCHING"
}

# job NAME ARGS...: a stand-in job on the dashboard's socket, until $SCRATCH/NAME.stop
job() {
    local name=$1
    shift
    "$PY" "$JOB" "$SOCK_PATH" --stop "$SCRATCH/$name.stop" "$@" > "$SCRATCH/$name.out" 2>&1 &
}

both_rows() {
    screen_re ' rank 0/2\* step [0-9.]+ms  sync x[0-9]+' &&
        screen_re ' rank 1/2  step [0-9.]+ms  sync x[0-9]+' &&
        header_has "steps/s"
}

ranks_at() {
    local W=$1 H=$2
    watch "$W" "$H"
    job "r0-$W" --rank 0
    P0=$!
    wait_for "$W x$H: rank 0 attaches" 20 header_has "1 of 2 ranks (gloo): CPU"
    job "r1-$W" --rank 1
    P1=$!
    wait_for "$W x$H: rank 1 attaches" 20 header_has "2 ranks (gloo): CPU x2"
    wait_for "$W x$H: a sync line a rank" 30 both_rows
    STEP="$W x$H: the timeline's rows are the ranks"
    screen_re ' rank 0/2\*  ' && screen_re ' rank 1/2   ' || fail "no rank rows on the timeline"
    screen_re 'rank 0/2  last 10 s' || fail "the timeline's title names no rank"
    not_on_screen 'dev[0-9]' || fail "a device named devN"
    STEP="$W x$H: the progress is the steps told"
    row 2 | grep -Eq '^epoch 1/3  step [0-9]+/1200 .* [0-9]+%  ETA [0-9]{2}:[0-9]{2}:[0-9]{2}' ||
        fail "row 2: $(row 2)"
    STEP="$W x$H: the rates, no chunk nor VPOC"
    row 3 | grep -Eq 'samples/s [1-9][0-9]*  steps/s [1-9][0-9.]*' || fail "row 3: $(row 3)"
    row 3 | grep -Eq 'chunk|VPOC' && fail "row 3: $(row 3)"
    STEP="$W x$H: no pool: n/a, never 0 B"
    has "allocated n/a  reserved n/a" || fail "no n/a for the pool"
    has "no allocator lines" || fail "no word of why"
    has "pools n/a" || fail "the GPU panel's training line"
    not_on_screen '(^| )0 B' || fail "a 0 B"
    not_on_screen 'n/a/n/a' || fail "a doubled n/a"
    if [ "$W" -ge 200 ]; then
        STEP="$W x$H: who each rank is, where there is room"
        screen_re " rank 1/2  step .*  pid $P1  gloo" || fail "rank 1's pid and backend"
    fi
    tm send-keys -t "$SESSION" 2
    selected() { screen_re "device 2 selected: rank 1/2"; }
    wait_for "$W x$H: the selector says who" 10 selected
    : > "$SCRATCH/r0-$W.stop"
    : > "$SCRATCH/r1-$W.stop"
    STEP="$W x$H: the jobs end by themselves"
    wait "$P0" || fail "rank 0: $(cat "$SCRATCH/r0-$W.out")"
    wait "$P1" || fail "rank 1: $(cat "$SCRATCH/r1-$W.out")"
    P0="" P1=""
    wait_for "$W x$H: FINISHED" 20 header_has "FINISHED"
}

ranks_at 80 24
ranks_at 120 40
ranks_at 200 60

# one job that tells no length and no batch size
watch 120 40
job open --rank 0 --world-size 1 --epochs 0 --steps-per-epoch 0 --batch-size 0
P0=$!
open_running() { row 2 | grep -Eq '^epoch 1  step [1-9][0-9]*  +no ETA' && header_has "steps/s"; }
wait_for "no length: its epoch and step" 30 open_running
STEP="no length: no % and no ETA made up"
row 2 | grep -q '%' && fail "row 2: $(row 2)"
row 3 | grep -Eq 'samples/s n/a  steps/s [1-9]' || fail "row 3: $(row 3)"
has "1 rank (gloo): CPU" || fail "the header's count"
has "runtime n/a on CPU" || fail "the GPU panel's training line"
not_on_screen '(^| )0 B|n/a/n/a' || fail "a 0 B or a doubled n/a"
: > "$SCRATCH/open.stop"
STEP="no length: the job ends"
wait "$P0" || fail "$(cat "$SCRATCH/open.out")"
P0=""
echo "$E2E_NAME: ok"
