#!/usr/bin/env bash
# Benchmark (not a test): training throughput with the dashboard at its refresh vs headless, in
# one run, the resident memory of both, and the dashboard's UI thread CPU a frame; prints a
# small table, each goal met or NOT met.
#
# usage: bench_dashboard.sh RINGSIDE [SCRATCH_DIR] [REPEATS] [DELAY]
# Each configuration runs REPEATS times (default 3), alternating headless, the dashboard
# recording its JSON lines (--record) and the dashboard as it is mostly run (no recording); the
# ratio is of the medians of the summary lines' samples_per_s, headless and recorded (goal
# >= 0.99). The dashboards run in a detached 200x60 tmux pane at -d DELAY (tenths of a second,
# default 5). VmRSS and VmHWM of each ringside process are sampled from /proc every 0.1 s
# (goal: the dashboard's peak < 32 MiB), and so is the UI thread's CPU time (the main thread's
# /proc/PID/task/PID/schedstat) while the loop runs, from 2 s after the start: its median per
# frame (CPU time over the frames the refresh draws in that time), without recording, has a
# goal of < 2 ms; recording's, which writes a JSON line per event on that thread, is shown
# beside it. BENCH_DASHBOARD_ARGS adds training options to every run, e.g. "--batch 16
# --hidden 8" for a loop whose event rate is a GPU's (some 130,000 events a second).
set -u

if [ $# -lt 1 ] || [ $# -gt 4 ]; then
    echo "usage: $0 RINGSIDE [SCRATCH_DIR] [REPEATS] [DELAY]" >&2
    exit 2
fi
RINGSIDE=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SCRATCH=${2:-${TMPDIR:-/tmp}/rs-bench-dashboard-$$}
REPEATS=${3:-3}
DELAY=${4:-5}
case "$REPEATS$DELAY" in *[!0-9]*)
    echo "bench_dashboard: REPEATS and DELAY are whole numbers" >&2
    exit 2
    ;;
esac
LIMIT_S=300 # per run
SOCK="rs-bench-$$"
SESSION=bench
ARGS=(--backend cpu --synthetic-days 60 --epochs 30)
# shellcheck disable=SC2206 # words on purpose
[ -n "${BENCH_DASHBOARD_ARGS:-}" ] && ARGS+=(${BENCH_DASHBOARD_ARGS})
if "$RINGSIDE" train --help 2>&1 | grep -q -- '--vpoc-refresh'; then
    ARGS+=(--vpoc-refresh 0)
fi

command -v tmux > /dev/null 2>&1 || { echo "bench_dashboard: tmux is not installed" >&2; exit 1; }
unset TMUX
tm() { tmux -L "$SOCK" -f /dev/null "$@"; }
trap 'tm kill-server > /dev/null 2>&1' EXIT
trap 'exit 1' INT TERM HUP

die() {
    echo "bench_dashboard: $*" >&2
    exit 1
}

# The summary line's samples_per_s in a JSON-lines file.
summary_rate() {
    grep '"type":"summary"' "$1" | tail -n 1 |
        sed -n 's/.*"samples_per_s":\([-+0-9.eE]*\).*/\1/p'
}

# kB of FIELD (VmRSS, VmHWM) in /proc/PID/status, or nothing once it is gone.
proc_kb() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status" 2> /dev/null; }

# ns the thread TID of PID has run (schedstat; from utime + stime where the kernel has none).
thread_cpu_ns() {
    local f="/proc/$1/task/$2" v
    v=$(awk '{ print $1 }' "$f/schedstat" 2> /dev/null)
    [ -n "$v" ] || v=$(awk -v hz="$(getconf CLK_TCK)" '{ printf "%.0f", ($14 + $15) * 1e9 / hz }' \
        "$f/stat" 2> /dev/null)
    echo "$v"
}

# sample_mem PID [DONE_CMD...]: every 0.1 s until PID exits (or DONE_CMD, tried every 0.5 s, succeeds), track the
# peak VmRSS and VmHWM (PEAK_RSS, HWM, kB) and, from 2 s in, the main thread's CPU time
# (UI_T0/UI_NS0 at the first sample, UI_T1/UI_NS1 at the last one before DONE_CMD: seconds,
# ns). Gives up after LIMIT_S seconds (status 1).
sample_mem() {
    local pid=$1 rss hwm cpu now n=0 end=$((SECONDS + LIMIT_S)) start=$EPOCHREALTIME
    shift
    PEAK_RSS=0
    HWM=0
    UI_T0="" UI_NS0="" UI_T1="" UI_NS1=""
    while [ -d "/proc/$pid" ]; do
        rss=$(proc_kb "$pid" VmRSS)
        hwm=$(proc_kb "$pid" VmHWM)
        [ -n "$rss" ] && [ "$rss" -gt "$PEAK_RSS" ] && PEAK_RSS=$rss
        [ -n "$hwm" ] && [ "$hwm" -gt "$HWM" ] && HWM=$hwm
        now=$EPOCHREALTIME
        cpu=$(thread_cpu_ns "$pid" "$pid")
        if [ -n "$cpu" ] && awk -v a="$start" -v b="$now" 'BEGIN { exit !(b - a >= 2) }'; then
            [ -n "$UI_T0" ] || { UI_T0=$now; UI_NS0=$cpu; }
            UI_T1=$now UI_NS1=$cpu
        fi
        n=$((n + 1))
        [ $# -gt 0 ] && [ $((n % 5)) -eq 0 ] && "$@" && return 0
        [ "$SECONDS" -lt "$end" ] || return 1
        sleep 0.1
    done
}

# ms of UI thread CPU a frame between the samples of sample_mem ("" when too few).
ui_ms_per_frame() {
    [ -n "$UI_T0" ] && [ -n "$UI_T1" ] || return 0
    awk -v t0="$UI_T0" -v t1="$UI_T1" -v c0="$UI_NS0" -v c1="$UI_NS1" -v d="$DELAY" \
        'BEGIN { f = (t1 - t0) * 10 / d; if (f >= 1) printf "%.2f", (c1 - c0) / 1e6 / f }'
}

# The dashboard's header says the run is over.
finished() {
    tm capture-pane -p -t "$SESSION" 2> /dev/null | head -n 3 | grep -Eq 'FINISHED|FAILED'
}

run_headless() {
    local dir="$SCRATCH/headless-$1"
    mkdir -p "$dir"
    "$RINGSIDE" train --headless "${ARGS[@]}" --output "$dir" --jsonl "$dir/run.jsonl" \
        2> "$dir/stderr" &
    local pid=$!
    sample_mem "$pid" || die "headless run $1 took over ${LIMIT_S}s"
    wait "$pid" || die "headless run $1 failed: $(tail -n 3 "$dir/stderr")"
    H_RATE+=("$(summary_rate "$dir/run.jsonl")")
    H_RSS+=("$PEAK_RSS")
    H_HWM+=("$HWM")
}

# The ringside process under the pane's shell (the pane's own pid when it execs directly).
pane_ringside_pid() {
    local pane child
    pane=$(tm display -p -t "$SESSION" '#{pane_pid}' 2> /dev/null) || return 1
    child=$(ps -o pid= --ppid "$pane" 2> /dev/null | head -n 1 | tr -d ' ')
    echo "${child:-$pane}"
}

# run_dashboard N [view]: the dashboard in the pane until the run is over, recording its JSON
# lines for the ratio; "view" runs it as it is mostly run, without --record, for the UI
# thread's CPU (a recording writes a JSON line per event on that thread).
run_dashboard() {
    local dir="$SCRATCH/dashboard-$1${2:+-$2}" pid="" k rec=()
    mkdir -p "$dir"
    [ "${2:-}" = view ] || rec=(--record "$dir/run.jsonl")
    # shellcheck disable=SC2016 # expanded by the pane's shell
    tm new-session -d -s "$SESSION" -x 200 -y 60 sh -c '"$@"; echo "exit=$?" > "$0/status"' \
        "$dir" "$RINGSIDE" train "${ARGS[@]}" -d "$DELAY" --output "$dir" "${rec[@]}" ||
        die "tmux new-session failed"
    for k in $(seq 1 100); do # up to 10 s for the process to appear
        pid=$(pane_ringside_pid) && [ -d "/proc/$pid" ] &&
            grep -q ringside "/proc/$pid/cmdline" 2> /dev/null && break
        pid=""
        sleep 0.1
    done
    [ -n "$pid" ] || die "dashboard run $1: no ringside process found (try $k)"
    sample_mem "$pid" finished || die "dashboard run $1 did not finish within ${LIMIT_S}s"
    tm send-keys -t "$SESSION" q
    for k in $(seq 1 300); do # up to 30 s for it to leave
        [ -f "$dir/status" ] && break
        sleep 0.1
    done
    grep -qx 'exit=0' "$dir/status" 2> /dev/null || die "dashboard run $1 did not exit 0"
    if [ "${2:-}" = view ]; then
        V_RSS+=("$PEAK_RSS")
        V_HWM+=("$HWM")
        V_UI+=("$(ui_ms_per_frame)")
        return
    fi
    D_RATE+=("$(summary_rate "$dir/run.jsonl")")
    D_RSS+=("$PEAK_RSS")
    D_HWM+=("$HWM")
    D_UI+=("$(ui_ms_per_frame)")
}

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
maxof() { printf '%s\n' "$@" | sort -g | tail -n 1; }
ints() { printf '%.0f ' "$@"; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

rm -rf "$SCRATCH"
mkdir -p "$SCRATCH" || exit 1
H_RATE=() H_RSS=() H_HWM=() D_RATE=() D_RSS=() D_HWM=() D_UI=() V_RSS=() V_HWM=() V_UI=()
echo "ringside ${ARGS[*]}, dashboard -d $DELAY, $REPEATS runs each, alternating (scratch: $SCRATCH)"
for r in $(seq 1 "$REPEATS"); do
    run_headless "$r"
    run_dashboard "$r"
    run_dashboard "$r" view
    echo "  run $r: headless ${H_RATE[$((r - 1))]} samples/s, dashboard ${D_RATE[$((r - 1))]}" \
        "samples/s; UI thread ${V_UI[$((r - 1))]:-?} ms/frame (${D_UI[$((r - 1))]:-?} recording)"
done

hm=$(median "${H_RATE[@]}")
dm=$(median "${D_RATE[@]}")
ratio=$(awk -v d="$dm" -v h="$hm" 'BEGIN { printf "%.3f", d / h }')
d_peak=$(maxof "${D_HWM[@]}" "${D_RSS[@]}" "${V_HWM[@]}" "${V_RSS[@]}")
h_peak=$(maxof "${H_HWM[@]}" "${H_RSS[@]}")
# the median of the non-empty arguments ("" when none)
median_of() {
    local v=()
    mapfile -t v < <(printf '%s\n' "$@" | grep .)
    [ "${#v[@]}" -eq 0 ] || median "${v[@]}"
}
ui=$(median_of "${V_UI[@]}")
ui_rec=$(median_of "${D_UI[@]}")
# goal VALUE OP LIMIT: "met" or "NOT met" ("n/a" without a value)
goal() {
    [ -n "$1" ] || {
        echo "n/a"
        return
    }
    awk -v v="$1" -v l="$3" -v op="$2" \
        'BEGIN { ok = op == ">=" ? v >= l : v < l; print ok ? "met" : "NOT met" }'
}
row() { printf '%-40s %10s %10s %8s %8s\n' "$@"; }
echo
row "" "headless" "dashboard" "goal" ""
row "samples/s (median of $REPEATS)" "$(printf '%.0f' "$hm")" "$(printf '%.0f' "$dm")" "" ""
row "ratio dashboard / headless" "" "$ratio" ">= 0.99" "$(goal "$ratio" ">=" 0.99)"
row "peak VmRSS/VmHWM (MiB)" "$(mib "$h_peak")" "$(mib "$d_peak")" "< 32" \
    "$(goal "$(mib "$d_peak")" "<" 32)"
row "UI thread CPU per frame (ms, -d $DELAY)" "" "${ui:-n/a}" "< 2" "$(goal "$ui" "<" 2)"
row "  ... recording (--record)" "" "${ui_rec:-n/a}" "" ""
printf 'samples/s per run: headless %s; dashboard %s\n' "$(ints "${H_RATE[@]}")" \
    "$(ints "${D_RATE[@]}")"
