#!/usr/bin/env bash
# Build the HIP backend on a GPU machine and run the GPU tests, the dashboard, hang and fault
# end-to-end tests on the GPU backend (tmux) and the benchmark against PyTorch there, in one
# command:
#   scripts/gpu-check.sh [build|test|dashboard|faults|agent|bench|bench-multi|all] [BUILD_DIR]
#   (default: all build-gpu); agent: the agent's end-to-end test training on the GPU (NVML
#   telemetry in /metrics), then its load benchmark there; bench-multi: the data-parallel
#   benchmark on every GPU of the host against PyTorch DDP (scripts/gpu-bench-multi.sh; two or
#   more GPUs, not part of all); bridge: the Python bridge under `ringside watch`: its cost to a
#   PyTorch script and, on two GPUs, a rank hung in destroy_process_group (scripts/gpu-bridge.sh)
# NVIDIA (nvcc found) builds RINGSIDE_HIP=NVIDIA, otherwise AMD (hipcc). When ./sysroot exists
# (made by scripts/sysroot.sh on a machine that reaches Debian's packages, then copied here) the
# headers and libraries the machine lacks come from it; nothing is installed.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
what=${1:-all}
dir=${2:-$top/build-gpu}
jobs=$(nproc 2>/dev/null || echo 4)
platform=AMD
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
    platform=NVIDIA
    export PATH=$PATH:/usr/local/cuda/bin
fi

args=(-DCMAKE_BUILD_TYPE=Release -DRS_WERROR=ON -DRINGSIDE_HIP=$platform)
sys=$top/sysroot
if [ -d "$sys/usr" ]; then
    lib=$sys/usr/lib/x86_64-linux-gnu
    export PKG_CONFIG_SYSROOT_DIR=$sys
    export PKG_CONFIG_LIBDIR=$lib/pkgconfig:$sys/usr/share/pkgconfig
    export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    args+=(-DCMAKE_PREFIX_PATH="$sys/usr" -DPKG_CONFIG_EXECUTABLE="$sys/usr/bin/pkgconf"
           -DCMAKE_C_FLAGS="-I$sys/usr/include"
           -DCMAKE_EXE_LINKER_FLAGS="-L$lib -Wl,-rpath-link,$lib")
fi

build() {
    cmake -S "$top" -B "$dir" "${args[@]}" >"$dir.configure.log" 2>&1 ||
        { cat "$dir.configure.log"; exit 1; }
    grep -E '^-- (ringside|  )' "$dir.configure.log" || true
    cmake --build "$dir" -j"$jobs"
}

# the rehearsed faults on the GPU: the hang kernel under the watchdog (tmux), oom and errors
faults() {
    E2E_BACKEND=hip bash "$top/tests/e2e/hang.sh" "$dir/ringside" "$dir/e2e-hang"
    E2E_BACKEND=hip bash "$top/tests/e2e/inject.sh" "$dir/ringside" "$dir/e2e-inject"
    # the fault matrix's slice with the hang kernel: on one GPU, and on two where there are
    local gpus
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
    CHAOS_DEVICES=$([ "${gpus:-0}" -ge 2 ] && echo 1,2 || echo 1) E2E_BACKEND=hip \
        bash "$top/tests/e2e/chaos.sh" "$dir/ringside" "$dir/e2e-chaos"
}

# the agent training on the GPU: its end-to-end test, then 200 scrapers against it
agent() {
    E2E_BACKEND=hip bash "$top/tests/e2e/agent.sh" "$dir/ringside" "$dir/e2e-agent"
    "$dir/tests/bench/bench_agent" "$dir/ringside" --seconds 30 -- --backend hip
}

export RINGSIDE_GPU_TESTS_REQUIRE_DEVICE=1 # here a missing device is a failure, not a skip
case "$what" in
build) build ;;
test) build && ctest --test-dir "$dir" --output-on-failure -L gpu ;;
dashboard) build && E2E_BACKEND=hip bash "$top/tests/e2e/dashboard.sh" "$dir/ringside" "$dir/e2e-gpu" ;;
faults) build && faults ;;
agent) build && agent ;;
bench) build && "$top/scripts/gpu-bench.sh" "$dir" ;;
bench-multi) build && "$top/scripts/gpu-bench-multi.sh" "$dir" ;;
bridge) build && "$top/scripts/gpu-bridge.sh" "$dir" ;;
all)
    build
    ctest --test-dir "$dir" --output-on-failure -L gpu
    E2E_BACKEND=hip bash "$top/tests/e2e/dashboard.sh" "$dir/ringside" "$dir/e2e-gpu"
    faults
    agent
    "$top/scripts/gpu-bench.sh" "$dir"
    ;;
*)
    echo "usage: scripts/gpu-check.sh [build|test|dashboard|faults|agent|bench|bench-multi|bridge|all]" \
        "[BUILD_DIR]" >&2
    exit 2
    ;;
esac
