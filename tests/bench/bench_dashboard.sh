#!/usr/bin/env bash
# Benchmark (not a test): training throughput with the dashboard at its default refresh vs
# headless, in one run, and the resident memory of both; prints a small table.
#
# usage: bench_dashboard.sh RINGSIDE [SCRATCH_DIR] [REPEATS]
# Each configuration runs REPEATS times (default 3), alternating headless and dashboard; the
# ratio is of the medians of the summary lines' samples_per_s (goal >= 0.99). The dashboard runs
# in a detached 200x60 tmux pane and records its JSON lines with --record; VmRSS and VmHWM of
# each ringside process are sampled from /proc every 0.1 s (goal: dashboard peak < 32 MiB).
set -u

if [ $# -lt 1 ]; then
    echo "usage: $0 RINGSIDE [SCRATCH_DIR] [REPEATS]" >&2
    exit 2
fi
RINGSIDE=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SCRATCH=${2:-${TMPDIR:-/tmp}/rs-bench-dashboard-$$}
REPEATS=${3:-3}
LIMIT_S=300 # per run
SOCK="rs-bench-$$"
SESSION=bench
ARGS=(--backend cpu --synthetic-days 60 --epochs 30)
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

# sample_mem PID [DONE_CMD...]: every 0.1 s until PID exits (or DONE_CMD, tried every 0.5 s, succeeds), track the
# peak VmRSS and VmHWM (PEAK_RSS, HWM, kB). Gives up after LIMIT_S seconds (status 1).
sample_mem() {
    local pid=$1 rss hwm n=0 end=$((SECONDS + LIMIT_S))
    shift
    PEAK_RSS=0
    HWM=0
    while [ -d "/proc/$pid" ]; do
        rss=$(proc_kb "$pid" VmRSS)
        hwm=$(proc_kb "$pid" VmHWM)
        [ -n "$rss" ] && [ "$rss" -gt "$PEAK_RSS" ] && PEAK_RSS=$rss
        [ -n "$hwm" ] && [ "$hwm" -gt "$HWM" ] && HWM=$hwm
        n=$((n + 1))
        [ $# -gt 0 ] && [ $((n % 5)) -eq 0 ] && "$@" && return 0
        [ "$SECONDS" -lt "$end" ] || return 1
        sleep 0.1
    done
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

run_dashboard() {
    local dir="$SCRATCH/dashboard-$1" pid="" k
    mkdir -p "$dir"
    # shellcheck disable=SC2016 # expanded by the pane's shell
    tm new-session -d -s "$SESSION" -x 200 -y 60 sh -c '"$@"; echo "exit=$?" > "$0/status"' \
        "$dir" "$RINGSIDE" train "${ARGS[@]}" --output "$dir" --record "$dir/run.jsonl" ||
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
    D_RATE+=("$(summary_rate "$dir/run.jsonl")")
    D_RSS+=("$PEAK_RSS")
    D_HWM+=("$HWM")
}

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
maxof() { printf '%s\n' "$@" | sort -g | tail -n 1; }
ints() { printf '%.0f ' "$@"; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

rm -rf "$SCRATCH"
mkdir -p "$SCRATCH" || exit 1
H_RATE=() H_RSS=() H_HWM=() D_RATE=() D_RSS=() D_HWM=()
echo "ringside ${ARGS[*]}, $REPEATS runs each, alternating (scratch: $SCRATCH)"
for r in $(seq 1 "$REPEATS"); do
    run_headless "$r"
    run_dashboard "$r"
    echo "  run $r: headless ${H_RATE[$((r - 1))]} samples/s, dashboard ${D_RATE[$((r - 1))]} samples/s"
done

hm=$(median "${H_RATE[@]}")
dm=$(median "${D_RATE[@]}")
ratio=$(awk -v d="$dm" -v h="$hm" 'BEGIN { printf "%.3f", d / h }')
d_peak=$(maxof "${D_HWM[@]}" "${D_RSS[@]}")
h_peak=$(maxof "${H_HWM[@]}" "${H_RSS[@]}")
printf '\n%-34s %14s %14s %8s\n' "" "headless" "dashboard" "goal"
printf '%-34s %14.0f %14.0f %8s\n' "samples/s (median of $REPEATS)" "$hm" "$dm" ""
printf '%-34s %14s %14s %8s\n' "ratio dashboard / headless" "" "$ratio" ">= 0.99"
printf '%-34s %14s %14s %8s\n' "peak VmRSS/VmHWM (MiB)" "$(mib "$h_peak")" "$(mib "$d_peak")" \
    "< 32"
printf 'samples/s per run: headless %s; dashboard %s\n' "$(ints "${H_RATE[@]}")" \
    "$(ints "${D_RATE[@]}")"
