#!/usr/bin/env bash
# scripts/gpu-bench.sh's tables from hand-made raw files, and its runs with stand-ins for the
# programs (no GPU): the summary over five runs (a row passing in all, one failing in one, the
# rounds of every run pooled), a mismatch failing the correctness row, the doctor's copy rows'
# spread rule, the machine lines, a missing key, bad options (exit 2) and --runs writing a raw
# file a run with the GPU's nvidia-smi line in each.
#
# usage: tests/e2e/gpu_bench_table.sh SOURCE_DIR SCRATCH_DIR
set -u -o pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 SOURCE_DIR SCRATCH_DIR" >&2
    exit 2
fi
bench="$1/scripts/gpu-bench.sh"
scratch=$2
if [ ! -x /usr/bin/python3 ]; then
    echo "gpu_bench_table: skipped: no /usr/bin/python3"
    exit 77
fi
export PYTHON=/usr/bin/python3 TMPDIR="$scratch"
rm -rf "$scratch"
mkdir -p "$scratch"
failures=0
STEP=start

fail() {
    echo "FAIL ($STEP): $*" >&2
    failures=$((failures + 1))
}

# The baseline: every goal met, the dense path's keys not yet printed.
base_keys() {
    cat << 'EOF'
rs_device=NVIDIA H100 80GB HBM3
rs_arch=sm_90
rs_vpoc_close_mismatched_sessions=0
rs_vpoc_range_mismatched_sessions=0
rs_vpoc_loop_chunk500_mismatched_sessions=0
rs_vpoc_close_ms=0.0131
rs_vpoc_close_ms_runs=0.0131,0.0130,0.0132,0.0131,0.0133
rs_vpoc_close_bytes=27900000
rs_vpoc_loop_chunk500_ms=0.0224
rs_vpoc_loop_chunk500_ms_runs=0.0224,0.0222,0.0226,0.0224,0.0225
rs_vpoc_loop_chunk500_wall_ms=0.0500
rs_vpoc_loop_chunk500_wall_ms_runs=0.0500,0.0490,0.0510,0.0500,0.0520
rs_vpoc_range_ms=0.0350
rs_vpoc_range_bytes=27900000
rs_d2d_copy_TBps=3.010
rs_mlp_steps_per_s_h32_16_b256=32389
rs_mlp_timed_steps_per_s_h32_16_b256=30000
rs_mlp_steps_per_s_h32_16_b4096=21174
rs_mlp_steps_per_s_h128_64_b256=17382
rs_mlp_steps_per_s_h128_64_b4096=16000
rs_empty_sync_us=1.50
rs_copy_h2d_pinned_GBps=55.10
rs_copy_d2h_pinned_GBps=55.10
rs_copy_h2d_pageable_GBps=8.90
rs_copy_d2h_pageable_GBps=15.80
rs_tele_nvml_per_gpu_us=7.6
torch_device=NVIDIA H100 80GB HBM3
torch_version=2.11.0
torch_d2d_copy_TBps=2.99
torch_vpoc_vectorised_ms=0.225
torch_vpoc_vectorised_ms_runs=0.2250,0.2240,0.2260,0.2250,0.2270
torch_vpoc_indexadd_ms=0.3
torch_vpoc_seed_loop_bars_per_s=50000
torch_vpoc_compiled_ms=0.161
torch_vpoc_compiled_ms_runs=0.1610,0.1600,0.1620,0.1630,0.1610
torch_mlp_eager_steps_per_s_h32_16_b256=710
torch_mlp_graph_steps_per_s_h32_16_b256=7774
torch_mlp_compiled_steps_per_s_h32_16_b256=3000
torch_mlp_eager_steps_per_s_h32_16_b4096=600
torch_mlp_graph_steps_per_s_h32_16_b4096=7817
torch_mlp_eager_steps_per_s_h128_64_b256=650
torch_mlp_graph_steps_per_s_h128_64_b256=7474
torch_mlp_eager_steps_per_s_h128_64_b4096=500
torch_mlp_graph_steps_per_s_h128_64_b4096=6864
torch_empty_sync_us=4.3
torch_copy_h2d_pinned_GBps=54.9
torch_copy_d2h_pinned_GBps=55.1
torch_copy_h2d_pageable_GBps=8.7
torch_copy_d2h_pageable_GBps=14.9
torch_pynvml_per_gpu_us=219
EOF
}

H100="NVIDIA H100 80GB HBM3, 580.65.06, 81559 MiB, 1980 MHz, 2619 MHz"
MACHINE="nvidia-smi: $H100"

# raw FILE [KEY=VALUE | -KEY]...: a raw file of the baseline with KEY set to VALUE or left
# out, '# machine: $MACHINE' before the keys (none when MACHINE is empty).
raw() {
    local file=$1 a k v
    local -A kv=()
    shift
    while IFS='=' read -r k v; do kv[$k]=$v; done < <(base_keys)
    for a in "$@"; do
        case "$a" in
        -*) unset "kv[${a#-}]" ;;
        *) kv[${a%%=*}]=${a#*=} ;;
        esac
    done
    {
        echo "# gpu-bench raw output, by hand"
        [ -z "$MACHINE" ] || echo "# machine: $MACHINE"
        for k in "${!kv[@]}"; do echo "$k=${kv[$k]}"; done | sort
        for k in bench_gpu bench_tele torch_ref; do echo "# status: $k rc=0"; done
    } > "$file"
}

# table RAW...: the script's output from the raw files in OUT, its status in RC
table() {
    OUT=$(bash "$bench" --from-raw "$@" 2> "$scratch/stderr")
    RC=$?
}

# row LABEL: the line of OUT's table whose first cell is LABEL
row() { grep -F -- "| $1 |" <<< "$OUT" | head -n 1; }

# has TEXT STRING...: each fixed STRING in TEXT
has() {
    local text=$1 s
    shift
    [ -n "$text" ] || { fail "no such line (looking for: $*)"; return; }
    for s in "$@"; do
        grep -qF -- "$s" <<< "$text" || fail "no '$s' in: $text"
    done
}

# lacks TEXT STRING: STRING not in TEXT
lacks() { ! grep -qF -- "$2" <<< "$1" || fail "'$2' in: $1"; }

status_is() { [ "$RC" -eq "$1" ] || fail "exit status $RC, not $1; stderr: $(cat "$scratch/stderr")"; }

LOOP="VPOC loop path, chunk 500, vs torch.compile (fixed bins)"
SMALL="MLP 32,16 b256 vs CUDA graph"
LARGE="MLP 128,64 b4096 vs CUDA graph"
CLEAN="correctness: every rs_*_mismatched_sessions is 0"
PAGEABLE="doctor's copy figure, device to host, pageable"
PINNED="doctor's copy figure, device to host, pinned"
DENSE="VPOC dense path, chunk 125, vs torch scatter per chunk"
INDEXADD="VPOC batched kernel vs torch index_add, fixed bins"

STEP="five runs"
d="$scratch/five"
mkdir -p "$d"
for k in 1 2 4; do raw "$d/$k.txt"; done
# 2.04x the CUDA graph: the old 2x goal, not 2.2x
raw "$d/3.txt" rs_mlp_steps_per_s_h128_64_b4096=14000
# one round of torch.compile faster: 0.1 / 0.0222 ms is the lowest ratio of the 25 rounds
raw "$d/5.txt" torch_vpoc_compiled_ms_runs=0.1610,0.1000,0.1620,0.1630,0.1610
table "$d"/{1,2,3,4,5}.txt
status_is 0
has "$OUT" "## ringside GPU kernels vs PyTorch, 5 runs" "goals met in every run: 15 of 16"
has "$(row "$SMALL")" "| >= 2.2x |" "| 5 of 5 runs | pass |"
has "$(row "$LARGE")" "| >= 2.2x |" "| 4 of 5 runs | **FAIL** |" "2.04x / 2.33x / 2.33x"
has "$(row "$LOOP")" "| >= 4x |" "| 4.5x / 7.19x / 7.28x |" "| 5 of 5 runs | pass |"
has "$(row "$CLEAN")" "rs_vpoc_loop_chunk500_mismatched_sessions=0" "| 5 of 5 runs | pass |"
has "$(row "$DENSE")" "n/a (missing rs_vpoc_dense_chunk125_ms; missing torch_vpoc_scatter_chunk125_ms)"
has "$OUT" "- GPU: NVIDIA H100 80GB HBM3 (sm_90)" "- driver: 580.65.06" "- memory: 81559 MiB"
has "$OUT" "ringside 3.01 TB/s (3.01 to 3.01 over 5 runs), PyTorch 2.99 TB/s"

STEP="a mismatch in one run of five"
raw "$d/4.txt" rs_vpoc_loop_chunk500_mismatched_sessions=3
table "$d"/{1,2,3,4,5}.txt
has "$(row "$CLEAN")" "rs_vpoc_loop_chunk500_mismatched_sessions=3" "| 4 of 5 runs | **FAIL** |"
has "$OUT" "goals met in every run: 14 of 16"

STEP="one run: a mismatch, no mismatch keys"
one="$scratch/one.txt"
raw "$one" rs_vpoc_close_mismatched_sessions=1
table "$one"
status_is 0
has "$(row "$CLEAN")" "rs_vpoc_close_mismatched_sessions=1" "| **FAIL** |"
has "$OUT" "goals met: 15 of 16"
raw "$one" -rs_vpoc_close_mismatched_sessions -rs_vpoc_range_mismatched_sessions \
    -rs_vpoc_loop_chunk500_mismatched_sessions
table "$one"
has "$(row "$CLEAN")" "n/a (no rs_*_mismatched_sessions keys)" "| n/a |"
has "$OUT" "goals met: 15 of 16 (1 not measured: $CLEAN)"

STEP="the doctor's spread"
copy=(rs_copy_d2h_pageable_GBps=12.0 torch_copy_d2h_pageable_GBps=15.0)
raw "$one" "${copy[@]}" rs_copy_d2h_pageable_worst_GBps=9.0 torch_copy_d2h_pageable_worst_GBps=13.5
table "$one"
has "$(row "$PAGEABLE")" "| 12 GB/s (spread 9-12) | 15 GB/s (spread 13.5-15) | 0.8x |" \
    "| pass (within the doctor's spread, 0.75) |"
has "$(row "$PINNED")" "| 55.1 GB/s | 55.1 GB/s | 1x | >= 0.9x | pass |"
has "$OUT" "goals met: 16 of 16"
raw "$one" "${copy[@]}" rs_copy_d2h_pageable_worst_GBps=11.4
table "$one"
has "$(row "$PAGEABLE")" "| 0.8x |" "**FAIL** (the doctor's spread 0.95)"
has "$OUT" "goals met: 15 of 16"
raw "$one" "${copy[@]}"
table "$one"
has "$(row "$PAGEABLE")" "| 12 GB/s | 15 GB/s | 0.8x | >= 0.9x | **FAIL** |"
raw "$one" rs_copy_d2h_pageable_GBps=13.8 torch_copy_d2h_pageable_GBps=15.0
table "$one"
has "$(row "$PAGEABLE")" "| 0.92x | >= 0.9x | pass |"
raw "$d/2.txt" "${copy[@]}" rs_copy_d2h_pageable_worst_GBps=9.0
raw "$d/4.txt" "${copy[@]}" rs_copy_d2h_pageable_worst_GBps=9.0
table "$d"/{1,2,3,4,5}.txt
has "$(row "$PAGEABLE")" "| 5 of 5 runs | pass (2 of 5 runs within the doctor's spread) |"

STEP="copy rounds pooled"
# the full runs' copies slower than a later round's, on both sides: each side's best of all
raw "$one" "${copy[@]}" rs_copy_d2h_pageable_worst_GBps=11.5 torch_copy_d2h_pageable_worst_GBps=14.0
cat >> "$one" << 'EOF'
# ---- bench_gpu-copies-2 ----
rs_copy_d2h_pageable_GBps=14.4
rs_copy_d2h_pageable_worst_GBps=13.9
# status: bench_gpu-copies-2 rc=0
# ---- torch_ref-copies-2 ----
torch_copy_d2h_pageable_GBps=14.8
torch_copy_d2h_pageable_worst_GBps=12.0
# status: torch_ref-copies-2 rc=0
EOF
table "$one"
status_is 0
has "$(row "$PAGEABLE")" "| 14.4 GB/s (spread 11.5-14.4, 2 rounds) |" \
    "| 15 GB/s (spread 12-15, 2 rounds) |" "| 0.96x | >= 0.9x | pass |"
# the doctor's best from its second round and its worst from its first: its spread is 11.5/14.4
sed -i 's/^torch_copy_d2h_pageable_GBps=14.8$/torch_copy_d2h_pageable_GBps=17.5/' "$one"
table "$one"
has "$(row "$PAGEABLE")" "| 0.823x |" "pass (within the doctor's spread, 0.80)"
echo "# status: torch_ref-copies-3 rc=1 reason=CUDA error" >> "$one"
table "$one"
status_is 1
has "$OUT" "torch_ref-copies-3 exited 1: CUDA error"

STEP="no machine lines, a missing key"
MACHINE=""
raw "$one" -rs_d2d_copy_TBps -torch_vpoc_indexadd_ms
table "$one"
has "$OUT" "- GPU: NVIDIA H100 80GB HBM3 (sm_90)" "- driver: (not recorded)" \
    "- memory: (not recorded)" "ringside (not recorded), PyTorch 2.99 TB/s"
has "$(row "$INDEXADD")" "| 0.0131 ms |  | n/a (missing torch_vpoc_indexadd_ms) |"
has "$(row "$DENSE")" "n/a (missing rs_vpoc_dense_chunk125_ms"
lacks "$(row "$DENSE")" "pass"
MACHINE="nvidia-smi: $H100"

STEP="bad usage"
for args in "$scratch --runs 0" "$scratch --runs" "$scratch --runs -3" "$scratch --bogus" \
    "--from-raw" "--quick"; do
    # shellcheck disable=SC2086 # one word an argument
    bash "$bench" $args > "$scratch/stdout" 2> "$scratch/stderr"
    RC=$?
    status_is 2
    [ "$(wc -l < "$scratch/stderr")" -eq 1 ] || fail "'$args': not one line: $(cat "$scratch/stderr")"
    [ ! -s "$scratch/stdout" ] || fail "'$args' printed: $(cat "$scratch/stdout")"
done
bash "$bench" "$scratch" --runs 0 2> "$scratch/stderr"
grep -q "^gpu-bench: --runs takes a whole number from 1 .*, not '0' (usage: " "$scratch/stderr" ||
    fail "--runs 0: $(cat "$scratch/stderr")"

STEP="three runs of stand-in programs"
fake="$scratch/fake"
build="$fake/build"
mkdir -p "$fake/bin" "$build/tests/bench"
base_keys | grep '^rs_' | grep -v '^rs_tele' > "$fake/rs.txt"
base_keys | grep '^torch_' > "$fake/torch.txt"
printf '#!/bin/sh\ncat "%s"\n' "$fake/rs.txt" > "$build/tests/bench/bench_gpu"
printf '#!/bin/sh\necho "provider=nvml status=ok gpus=1 per_gpu_us=7.6"\n' \
    > "$build/tests/bench/bench_tele"
printf '#!/bin/sh\necho "%s"\n' "$H100" > "$fake/bin/nvidia-smi"
cat > "$fake/bin/python" << EOF
#!/bin/sh
case "\$1" in */torch_ref.py) exec cat "$fake/torch.txt" ;; esac
exec /usr/bin/python3 "\$@"
EOF
chmod +x "$fake/bin/"* "$build/tests/bench/"*
OUT=$(PATH="$fake/bin:$PATH" PYTHON="$fake/bin/python" bash "$bench" "$build" --runs 3 \
    2> "$scratch/stderr")
RC=$?
status_is 0
has "$OUT" "## ringside GPU kernels vs PyTorch, 3 runs" "goals met in every run: 16 of 16" \
    "- driver: 580.65.06"
has "$(row "$SMALL")" "| 3 of 3 runs | pass |"
for k in 1 2 3; do
    grep -qxF "# machine: nvidia-smi: $H100" "$build/gpu-bench-raw-$k.txt" ||
        fail "no machine line in gpu-bench-raw-$k.txt"
    grep -qx "rs_tele_nvml_per_gpu_us=7.6" "$build/gpu-bench-raw-$k.txt" ||
        fail "no telemetry figure in gpu-bench-raw-$k.txt"
done
cmp -s "$build/gpu-bench-raw-3.txt" "$build/gpu-bench-raw.txt" ||
    fail "gpu-bench-raw.txt is not the last run's"
rm "$build/tests/bench/bench_gpu"
OUT=$(PATH="$fake/bin:$PATH" PYTHON="$fake/bin/python" bash "$bench" "$build" --runs 2 \
    2> "$scratch/stderr")
RC=$?
status_is 1
has "$OUT" "incomplete: run 2: bench_gpu exited 127"
[ ! -e "$build/gpu-bench-raw-3.txt" ] || fail "the three-run set's third file outlived a two-run set"

if [ "$failures" -ne 0 ]; then
    echo "gpu_bench_table: $failures failed checks" >&2
    exit 1
fi
echo "gpu_bench_table: all checks passed"
