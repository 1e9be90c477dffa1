#!/usr/bin/env bash
# End-to-end test of the dashboard's layout and its ends, on the default run (training until
# stopped): at 120x40, 200x60 and 250x70 no band of more than 3 blank rows inside the frame and
# an events panel of at least 8 rows; at 80x24 the header keeps loss, val, chunk and samples/s;
# the val loss's best epoch in the header; + + from the default chunk makes the VPOC pass's
# matrix 4x, and c after - - - releases more than 1 MiB; a run given --epochs ends with its summary and a
# clock that has stopped; a replay of a recording cut short says ENDED and, whole, why.
#
# usage: layout.sh RINGSIDE SCRATCH_DIR
E2E_NAME="layout e2e"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
export LC_ALL=C.UTF-8

t0=$SECONDS
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH" || exit 1

start() { # name, columns, rows, ringside arguments...
    local d=$SCRATCH/$1 w=$2 h=$3
    shift 3
    mkdir -p "$d"
    local args="" a
    for a in "$@"; do args="$args '$a'"; done
    tm new-session -d -s "$SESSION" -x "$w" -y "$h" \
        sh -c "cd '$d' && '$RINGSIDE' $args; echo \$? > '$d/rc'; sleep 30" ||
        fail "tmux new-session failed"
}
size_is() { [ "$(tm display -p -t "$SESSION" '#{pane_width}x#{pane_height}')" = "$1" ]; }
resize() { # WxH
    STEP="resize to $1"
    tm resize-window -t "$SESSION" -x "${1%x*}" -y "${1#*x}" || fail "resize-window failed"
}
# The longest run of blank rows between the header and the footer.
blank_band() {
    printf '%s\n' "$SCREEN" | awk 'NR > 3 { if ($0 ~ /^[ ]*$/) { run++; if (run > m) m = run }
        else run = 0 } END { print m + 0 }'
}
# Rows of the events panel: its title row down to the footer, or to the next panel's title.
events_rows() {
    printf '%s\n' "$SCREEN" | awk '/^─ events / { on = 1; n = 0 }
        on && ((/^─ / && !/^─ events /) || /^ q quit/) { on = 0 } on { n++ } END { print n + 0 }'
}
footer_ok() { printf '%s\n' "$SCREEN" | tail -n 1 | grep -q '^ *q quit'; }
clock() { printf '%s\n' "$SCREEN" | head -n 1 | grep -oE '[0-9]{2}:[0-9]{2}:[0-9]{2}' | tail -n 1; }
header_row() { printf '%s\n' "$SCREEN" | sed -n "$1p"; }
tidy_at() { # WxH: the frame at that size, training, evaluated, without blank bands
    size_is "$1" && footer_ok && header_has "best val" && [ "$(blank_band)" -le 3 ] &&
        [ "$(events_rows)" -ge 9 ]
}

# ---- the default run at four sizes ----
start live 120 40 --backend cpu --telemetry none --no-kmsg --output out
wait_for "120x40: training, the best val in the header, no blank band, events >= 8 rows" 90 \
    tidy_at 120x40
for size in 200x60 250x70; do
    resize $size
    wait_for "$size: no band of more than 3 blank rows, events >= 8 rows" 30 tidy_at $size
done
# ---- the chunk keys act on what the pool holds ----
resize 120x40
# the dense matrix of the last VPOC pass, in bytes, at chunk $1
matrix_at() {
    printf '%s\n' "$SCREEN" | grep -oE "VPOC peak \(chunk $1, dense\): \+[0-9.]+ [KMG]iB matrix" |
        awk '{ v = $(NF - 2); sub(/^\+/, "", v); u = $(NF - 1)
               print v * (u == "KiB" ? 1024 : u == "MiB" ? 1048576 : 1073741824) }'
}
wait_for "the first pass's matrix at chunk 250" 30 eval '[ -n "$(matrix_at 250)" ]'
m250=$(matrix_at 250)
tm send-keys -t "$SESSION" +
wait_for "'+': a pass at chunk 500" 60 eval '[ -n "$(matrix_at 500)" ]'
tm send-keys -t "$SESSION" +
wait_for "'+' '+': a pass at chunk 1000" 60 eval '[ -n "$(matrix_at 1000)" ]'
m1000=$(matrix_at 1000)
STEP="two steps up make the pass's working set 4x"
awk -v a="$m250" -v b="$m1000" 'BEGIN { exit !(b >= 3.99 * a) }' ||
    fail "matrix $m250 bytes at chunk 250, $m1000 at 1000: not 4x"
for _ in 1 2 3; do tm send-keys -t "$SESSION" -; done
wait_for "'-' x3: a pass at chunk 125" 90 eval '[ -n "$(matrix_at 125)" ]'
tm send-keys -t "$SESSION" c
released() {
    local n
    n=$(printf '%s\n' "$SCREEN" | grep -oE 'released [0-9]+ bytes' | head -n 1 | grep -oE '[0-9]+')
    [ -n "$n" ] && [ "$n" -gt 1048576 ]
}
wait_for "'c' after stepping down releases more than 1 MiB" 30 released

resize 80x24
header_80() {
    size_is 80x24 && footer_ok && header_row 3 | grep -q 'loss [0-9]' &&
        header_row 3 | grep -q 'val [0-9]' && header_row 3 | grep -q 'chunk [0-9]' &&
        header_row 3 | grep -q 'samples/s [0-9]'
}
wait_for "80x24: the header keeps loss, val, chunk and samples/s" 30 header_80
STEP="the default run trains until stopped"
header_row 2 | grep -q 'until stopped' || fail "no 'until stopped' in the progress row"
tm send-keys -t "$SESSION" q
wait_for "q ends it, status 0" 60 eval '[ -s "$SCRATCH/live/rc" ] && [ "$(cat "$SCRATCH/live/rc")" = 0 ]'
[ -s "$SCRATCH/live/out/vpoc_mlp_best.rsmodel" ] || fail "no best model written"
next_server

# ---- a run with an end: its summary, and the clock stopped ----
start ends 120 40 --backend cpu --synthetic-days 5 --epochs 2 --telemetry none --no-kmsg \
    --output out
summary() {
    header_has "FINISHED" && has "─ summary " && has "trained      2 epochs" &&
        has "best model" && has "vpoc_mlp_best.rsmodel"
}
wait_for "the finished run's summary" 90 summary
c1=$(clock)
until_later() { [ "$SECONDS" -ge "$1" ]; }
wait_for "two seconds pass" 10 until_later $((SECONDS + 2))
capture
STEP="the clock stopped at the end"
[ "$(clock)" = "$c1" ] || fail "the clock moved on after the end: $c1 then $(clock)"
tm send-keys -t "$SESSION" Escape
wait_for "a key closes the summary" 10 eval '! has "─ summary " && has "memory pool"'
tm send-keys -t "$SESSION" q
wait_for "q leaves" 30 eval '[ -s "$SCRATCH/ends/rc" ]'
next_server

# ---- a recording cut short ----
STEP="record a run"
"$RINGSIDE" train --headless --backend cpu --synthetic-days 5 --epochs 2 --telemetry none \
    --no-kmsg --output "$SCRATCH/rec" --jsonl "$SCRATCH/run.jsonl" > /dev/null 2>&1 ||
    fail "headless run failed"
n=$(wc -l < "$SCRATCH/run.jsonl")
head -n $((n / 2)) "$SCRATCH/run.jsonl" > "$SCRATCH/cut.jsonl"
echo '{"type":"metric", this line is cut' >> "$SCRATCH/cut.jsonl"
start replay 120 40 replay "$SCRATCH/cut.jsonl" --speed 50
ended() {
    header_has "ENDED" && ! header_has "RUNNING" &&
        header_row 2 | grep -q "stopped at line $((n / 2 + 1)): .*[a-z]$"
}
wait_for "the replay says ENDED and why, whole" 60 ended
tm send-keys -t "$SESSION" q

echo "layout e2e: ok ($((SECONDS - t0)) s)"
