#!/usr/bin/env bash
# What watching the GPUs costs: ringside beside nvtop on this machine, each in a detached
# 200x60 tmux pane for SECONDS at -d 5 and -d 1 (both count tenths of a second), as a Markdown
# table of CPU ms per refresh, CPU % and peak resident memory.
#
# usage: scripts/nvtop-compare.sh RINGSIDE NVTOP_SRC [SECONDS]
#   RINGSIDE   a ringside binary
#   NVTOP_SRC  nvtop's source tree (https://github.com/Syllo/nvtop), built here with its NVIDIA
#              support alone (NVML, loaded at run time) in $NVTOP_BUILD (default
#              $TMPDIR/nvtop-build); NVTOP_BIN=PATH takes a built nvtop instead
#   SECONDS    measured per run, after 2 s of warm-up (default 20)
#
# ringside runs three times over: "watch" is the dashboard with no loop of ours and no job
# attached, as nvtop is; then as the two ways it watches: "agent + attach" is its telemetry-only
# pair (`ringside agent` samples, `ringside attach` draws; their CPU and peak RSS are summed),
# and "dashboard, paused" is the dashboard on its own CPU-backend loop paused with p once it
# runs (telemetry and drawing go on; its memory includes the loop's data). CPU is utime +
# stime of /proc/PID/stat over the measured seconds; a refresh is DELAY tenths of a second.
#
# Headers: nvtop's configure takes $CFLAGS and $CMAKE_PREFIX_PATH; where the machine has no
# ncurses headers, SYSROOT (default ./sysroot when scripts/sysroot.sh made one) adds its
# include and library folders, and its libraries to LD_LIBRARY_PATH for both tools.
# Exit status: 0 when every run measured, 1 when a build or a run failed, 2 on usage errors.
set -u

usage() {
    echo "usage: $0 RINGSIDE NVTOP_SRC [SECONDS]" >&2
    exit 2
}
die() {
    echo "nvtop-compare: $*" >&2
    exit 1
}

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    usage
fi
case "${3:-20}" in '' | *[!0-9]*) usage ;; esac
SECONDS_RUN=${3:-20}
[ "$SECONDS_RUN" -ge 1 ] || usage
if [ ! -f "$1" ] || [ ! -x "$1" ]; then
    echo "nvtop-compare: $1 is not an executable" >&2
    exit 2
fi
if [ ! -f "$2/CMakeLists.txt" ] && [ -z "${NVTOP_BIN:-}" ]; then
    echo "nvtop-compare: $2 is not nvtop's source tree (no CMakeLists.txt)" >&2
    exit 2
fi
RINGSIDE=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
NVTOP_SRC=$(cd "$2" 2> /dev/null && pwd) || NVTOP_SRC=$2
REPO=$(cd "$(dirname "$0")/.." && pwd)
WARMUP_S=2
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/nvtop-compare.XXXXXX") || die "cannot make a scratch folder"
SOCK="nvtop-compare-$$"

for tool in tmux cmake; do
    command -v "$tool" > /dev/null 2>&1 || die "$tool is not installed"
done
unset TMUX
tm() { tmux -L "$SOCK" -f /dev/null "$@"; }
AGENT_PID=""
# shellcheck disable=SC2317 # run by the trap
cleanup() {
    tm kill-server > /dev/null 2>&1
    [ -n "$AGENT_PID" ] && kill "$AGENT_PID" 2> /dev/null
    rm -rf "$SCRATCH"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# ---- where the headers and libraries are -----------------------------------------------------
if [ -z "${SYSROOT:-}" ] && [ -d "$REPO/sysroot/usr/include" ]; then
    SYSROOT=$REPO/sysroot
fi
RUN_ENV=(XDG_CONFIG_HOME="$SCRATCH/config") # neither tool reads or writes the user's settings
if [ -n "${SYSROOT:-}" ]; then
    [ -d "$SYSROOT/usr/include" ] || die "SYSROOT=$SYSROOT has no usr/include"
    CFLAGS="${CFLAGS:+$CFLAGS }-I$SYSROOT/usr/include"
    CMAKE_PREFIX_PATH="$SYSROOT/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
    lib="$SYSROOT/usr/lib/x86_64-linux-gnu"
    RUN_ENV+=(LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
fi
export CFLAGS CMAKE_PREFIX_PATH

# ---- nvtop, NVIDIA only ----------------------------------------------------------------------
build_nvtop() {
    local build=${NVTOP_BUILD:-${TMPDIR:-/tmp}/nvtop-build} opts=() name
    # shellcheck disable=SC2086 # CFLAGS holds several flags
    echo '#include <curses.h>' | ${CC:-cc} ${CFLAGS:-} -E -x c - > /dev/null 2>&1 ||
        die "no ncurses headers: run scripts/sysroot.sh (or set SYSROOT, or CFLAGS=-I...)"
    # every backend option nvtop has, off, but NVIDIA's (the list changes between versions)
    while read -r name; do
        if [ "$name" = NVIDIA_SUPPORT ]; then
            opts+=("-D$name=ON")
        else
            opts+=("-D$name=OFF")
        fi
    done < <(grep -o 'option([A-Z0-9_]*_SUPPORT' "$NVTOP_SRC/CMakeLists.txt" | cut -c8-)
    # cmake 4 refuses projects that ask for a policy version under 3.5
    cmake --version | awk 'NR == 1 { split($3, v, "."); exit !(v[1] >= 4) }' &&
        opts+=(-DCMAKE_POLICY_VERSION_MINIMUM=3.5)
    mkdir -p "$build" || die "cannot make $build"
    echo "nvtop-compare: building nvtop (NVIDIA only) in $build" >&2
    cmake -S "$NVTOP_SRC" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
        "${opts[@]}" > "$build/configure.log" 2>&1 ||
        die "nvtop's configure failed: $(grep -m1 -i 'error' "$build/configure.log") (see $build/configure.log)"
    if ! cmake --build "$build" -j "$(nproc 2> /dev/null || echo 2)" > "$build/build.log" 2>&1; then
        # Some toolchains lose nvtop's max() macro in src/interface.c (an implicit declaration,
        # then an undefined symbol): give the link the function it then looks for.
        grep -q "undefined reference to \`max'" "$build/build.log" ||
            die "nvtop's build failed: $(grep -m1 'error' "$build/build.log") (see $build/build.log)"
        printf 'int max(int a, int b) { return a > b ? a : b; }\n' > "$build/max_shim.c"
        cc -O2 -c "$build/max_shim.c" -o "$build/max_shim.o" ||
            die "cannot compile $build/max_shim.c"
        cmake "$build" -DCMAKE_EXE_LINKER_FLAGS="$build/max_shim.o" >> "$build/configure.log" 2>&1 &&
            cmake --build "$build" -j "$(nproc 2> /dev/null || echo 2)" >> "$build/build.log" 2>&1 ||
            die "nvtop's build failed: $(grep -m1 'error' "$build/build.log") (see $build/build.log)"
    fi
    NVTOP_BIN=$build/src/nvtop
    [ -x "$NVTOP_BIN" ] || die "nvtop's build made no $NVTOP_BIN"
}
if [ -n "${NVTOP_BIN:-}" ]; then
    [ -x "$NVTOP_BIN" ] || die "NVTOP_BIN=$NVTOP_BIN is not an executable"
else
    build_nvtop
fi
NVTOP_VERSION=$("$NVTOP_BIN" --version 2> /dev/null | head -n 1 | awk '{ print $NF }')
# nvtop leaves at once, saying so, where NVML shows it no GPU
NVTOP_NONE=$(env "${RUN_ENV[@]}" "$NVTOP_BIN" -s 2>&1 | grep -m1 'No GPU')

# ---- measuring one process -------------------------------------------------------------------
# cpu_ticks PID: utime + stime (all its threads), "" once it is gone.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2> /dev/null; }
# hwm_kb PID: VmHWM.
hwm_kb() { awk '$1 == "VmHWM:" { print $2 }' "/proc/$1/status" 2> /dev/null; }

# start NAME CMD...: CMD in a detached 200x60 pane of its own (its pid in PANE_PID).
start() {
    local name=$1 cmd
    shift
    cmd=$(printf '%q ' env "${RUN_ENV[@]}" "$@")
    tm set-option -g remain-on-exit on \; new-session -d -s "$name" -x 200 -y 60 "exec $cmd" ||
        die "tmux new-session failed"
    PANE_PID=$(tm display -p -t "$name" '#{pane_pid}')
}

# alive NAME: the pane's process still runs; otherwise WHY is its last words.
alive() {
    [ "$(tm display -p -t "$1" '#{pane_dead}' 2> /dev/null)" = 0 ] && return 0
    WHY="exited ($(tm display -p -t "$1" '#{pane_dead_status}' 2> /dev/null)): $(
        tm capture-pane -p -t "$1" 2> /dev/null | grep -v '^[[:space:]]*$' | grep -v '^Pane is dead' |
            tail -n 1 | cut -c1-100)"
    return 1
}

# wait_for NAME TEXT SECONDS: TEXT in the pane's first 3 rows within SECONDS.
wait_for() {
    local _
    for _ in $(seq 1 $(($3 * 10))); do
        tm capture-pane -p -t "$1" 2> /dev/null | head -n 3 | grep -q "$2" && return 0
        alive "$1" || return 1
        sleep 0.1
    done
    WHY="no \"$2\" on screen after $3 s"
    return 1
}

# measure DELAY PID...: after the warm-up, the PIDs' CPU over SECONDS_RUN (summed) and their
# peak RSS (summed) into RESULT as "ms-per-refresh cpu-% MiB"; 1 when one of them is gone.
measure() {
    local delay=$1 p a=0 b=0 t hwm=0 h
    shift
    sleep "$WARMUP_S"
    for p in "$@"; do
        t=$(cpu_ticks "$p") && [ -n "$t" ] || return 1
        a=$((a + t))
    done
    sleep "$SECONDS_RUN"
    for p in "$@"; do
        t=$(cpu_ticks "$p") && [ -n "$t" ] || return 1
        h=$(hwm_kb "$p")
        b=$((b + t))
        hwm=$((hwm + ${h:-0}))
    done
    RESULT=$(awk -v t="$((b - a))" -v hz="$(getconf CLK_TCK)" -v s="$SECONDS_RUN" \
        -v d="$delay" -v k="$hwm" 'BEGIN {
            ms = t * 1000 / hz
            printf "%.2f %.2f %.1f", ms / (s * 10 / d), ms / (s * 1000) * 100, k / 1024 }')
}

ROWS=()
FAILED=0
row() { ROWS+=("| $1 | $2 s (-d $3) | $4 | $5 | $6 |"); }
failed_row() {
    ROWS+=("| $1 | $2 s (-d $3) | - | - | - |")
    echo "nvtop-compare: $1 at -d $3: $4" >&2
    FAILED=1
}
secs() { awk -v d="$1" 'BEGIN { printf "%.1f", d / 10 }'; }
# stop NAME: end the pane's process (tmux's hang-up: both tools leave on it) and its pane.
stop() {
    local pid _
    pid=$(tm display -p -t "$1" '#{pane_pid}' 2> /dev/null)
    tm kill-session -t "$1" > /dev/null 2>&1
    for _ in $(seq 1 100); do # up to 10 s: the dashboard finishes its step first
        if [ -z "$pid" ] || [ ! -d "/proc/$pid" ]; then
            break
        fi
        sleep 0.1
    done
}

run_nvtop() {
    local d=$1 name="nvtop-$1" label="nvtop ${NVTOP_VERSION:-}"
    if [ -n "$NVTOP_NONE" ]; then
        failed_row "$label" "$(secs "$d")" "$d" "$NVTOP_NONE"
        return
    fi
    start "$name" "$NVTOP_BIN" -d "$d"
    if alive "$name" && measure "$d" "$PANE_PID" && alive "$name"; then
        # shellcheck disable=SC2086 # three numbers
        row "$label" "$(secs "$d")" "$d" $RESULT
    else
        alive "$name"
        failed_row "$label" "$(secs "$d")" "$d" "${WHY:-it stopped while measured}"
    fi
    stop "$name"
}

run_attach() {
    local d=$1 name="attach-$1" label="ringside agent + attach" sock="$SCRATCH/agent-$1.sock" _
    env "${RUN_ENV[@]}" "$RINGSIDE" agent --listen none --unix "$sock" \
        > "$SCRATCH/agent-$d.log" 2>&1 &
    AGENT_PID=$!
    for _ in $(seq 1 100); do # up to 10 s for the socket
        [ -S "$sock" ] && break
        sleep 0.1
    done
    if [ ! -S "$sock" ]; then
        failed_row "$label" "$(secs "$d")" "$d" \
            "the agent did not listen: $(tail -n 1 "$SCRATCH/agent-$d.log")"
    else
        start "$name" "$RINGSIDE" attach "unix:$sock" -d "$d"
        if wait_for "$name" ringside 10 && measure "$d" "$PANE_PID" "$AGENT_PID" &&
            alive "$name"; then
            # shellcheck disable=SC2086 # three numbers
            row "$label" "$(secs "$d")" "$d" $RESULT
        else
            alive "$name"
            failed_row "$label" "$(secs "$d")" "$d" "${WHY:-it stopped while measured}"
        fi
        stop "$name"
    fi
    kill "$AGENT_PID" 2> /dev/null
    wait "$AGENT_PID" 2> /dev/null
    AGENT_PID=""
}

run_dashboard() {
    local d=$1 name="dashboard-$1" label="ringside dashboard, paused"
    start "$name" "$RINGSIDE" train --backend cpu --synthetic-days 20 --epochs 100000 \
        --output "$SCRATCH/train-$d" -d "$d"
    if wait_for "$name" RUNNING 120 && tm send-keys -t "$name" p && wait_for "$name" PAUSED 30 &&
        measure "$d" "$PANE_PID" && alive "$name"; then
        # shellcheck disable=SC2086 # three numbers
        row "$label" "$(secs "$d")" "$d" $RESULT
    else
        alive "$name"
        failed_row "$label" "$(secs "$d")" "$d" "${WHY:-it stopped while measured}"
    fi
    stop "$name"
}

# ringside watch: the dashboard with no loop of ours (what nvtop is), no job attached
run_watch() {
    local d=$1 name="watch-$1" label="ringside watch"
    start "$name" "$RINGSIDE" watch --socket "$SCRATCH/watch-$d.sock" -d "$d"
    if wait_for "$name" ringside 10 && measure "$d" "$PANE_PID" && alive "$name"; then
        # shellcheck disable=SC2086 # three numbers
        row "$label" "$(secs "$d")" "$d" $RESULT
    else
        alive "$name"
        failed_row "$label" "$(secs "$d")" "$d" "${WHY:-it stopped while measured}"
    fi
    stop "$name"
}

echo "nvtop-compare: $SECONDS_RUN s a run after ${WARMUP_S} s of warm-up, 200x60 panes" >&2
for d in 5 1; do
    run_nvtop "$d"
    run_watch "$d"
    run_attach "$d"
    run_dashboard "$d"
done

echo "| tool | refresh | CPU ms per refresh | CPU % | peak RSS MiB |"
echo "| --- | --- | ---: | ---: | ---: |"
printf '%s\n' "${ROWS[@]}"
echo
gpus=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2> /dev/null | sort |
    uniq -c | awk '{ n = $1; $1 = ""; sub(/^ /, ""); printf "%s%s x%d", sep, $0, n; sep = "; " }')
echo "$(uname -n), $(nproc) cores${gpus:+, $gpus (name, driver)}, $SECONDS_RUN s a run." \
    "watch: no loop, no job attached; agent + attach: both processes summed; dashboard," \
    "paused: its CPU-backend loop's data is in its memory."
exit "$FAILED"
