# shellcheck shell=bash
# Shared by the benchmark scripts (gpu-bench.sh, gpu-bench-multi.sh): running one side of a
# comparison and appending its output to the raw file the table is printed from. The including
# script sets BENCH_NAME (for messages).

# run NAME OUTFILE CMD...: run CMD with stdout to OUTFILE and stderr both shown and kept in
# OUTFILE.err; RC is its exit status.
run() {
    local name=$1 out=$2
    shift 2
    echo "$BENCH_NAME: running $name: $*" >&2
    { "$@" 2>&1 1>&3 3>&- | tee "$out.err" >&2; } 3> "$out"
    RC=${PIPESTATUS[0]}
}

# append_output RAW NAME OUTFILE: the program's stdout, then its status line (with the last
# stderr line as the reason when it failed).
append_output() {
    local raw=$1 name=$2 out=$3 reason=""
    {
        echo "# ---- $name ----"
        cat "$out"
        if [ "$RC" -ne 0 ]; then
            reason=$(grep -v '^[[:space:]]*$' "$out.err" | tail -n 1 | tr -d '\r')
            sed 's/^/# stderr: /' "$out.err" | tail -n 20
        fi
        echo "# status: $name rc=$RC${reason:+ reason=$reason}"
    } >> "$raw"
}
