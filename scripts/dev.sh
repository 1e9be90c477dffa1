#!/usr/bin/env bash
# One entry point for people and CI:
#   scripts/dev.sh run [ringside flags]   install deps, build, start the dashboard
#   scripts/dev.sh test                   install deps, build with -Werror, run every test
#   scripts/dev.sh sanitize               ASan+UBSan build running the unit tests, then TSan
#                                         on the threaded ones
#   scripts/dev.sh build                  install deps and build only
#   scripts/dev.sh amd                    install Debian's hipcc, build the AMD GPU backend and
#                                         run every test there (on a machine without an AMD
#                                         GPU: the CPU fallback, and the GPU suite skips)
#   scripts/dev.sh fuzz                   install clang, build the libFuzzer targets (ASan+UBSan)
#                                         and fuzz the kernel-log parser for RS_FUZZ_SECONDS
#                                         (default 60) from build-fuzz/corpus; fails on a crash
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc 2>/dev/null || echo 2)
cmd=${1:-run}
[ $# -gt 0 ] && shift

configure_build() { # dir, extra cmake args...
    local dir=$1
    shift
    cmake -S "$top" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >"$dir.configure.log" 2>&1 ||
        { cat "$dir.configure.log"; exit 1; }
    grep -E '^-- (ringside|  )' "$dir.configure.log" || true
    cmake --build "$dir" -j"$jobs"
}

if [ "$cmd" = amd ]; then
    "$top/scripts/install-deps.sh" --hip
elif [ "$cmd" = fuzz ]; then
    "$top/scripts/install-deps.sh" --fuzz
else
    "$top/scripts/install-deps.sh"
fi
case "$cmd" in
run)
    configure_build "$top/build"
    exec "$top/build/ringside" "$@"
    ;;
build)
    configure_build "$top/build" "$@"
    ;;
test)
    configure_build "$top/build" -DRS_WERROR=ON
    ctest --test-dir "$top/build" --output-on-failure -V
    ;;
sanitize)
    configure_build "$top/build-asan" -DRS_WERROR=ON -DRS_SANITIZE=address,undefined -DRS_BENCH=OFF \
        -DRINGSIDE_HIP=OFF
    ctest --test-dir "$top/build-asan" --output-on-failure -V
    configure_build "$top/build-tsan" -DRS_WERROR=ON -DRS_SANITIZE=thread -DRS_BENCH=OFF \
        -DRINGSIDE_HIP=OFF
    ctest --test-dir "$top/build-tsan" --output-on-failure -V -R '^tsan_threads$'
    ;;
amd)
    configure_build "$top/build-amd" -DRS_WERROR=ON -DRINGSIDE_HIP=AMD
    ctest --test-dir "$top/build-amd" --output-on-failure -V
    ;;
fuzz)
    dir=$top/build-fuzz
    CC=clang cmake -S "$top" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRS_FUZZ=ON \
        -DRS_SANITIZE=address,undefined -DRS_BENCH=OFF -DRINGSIDE_HIP=OFF -DRS_WERROR=ON \
        >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; exit 1; }
    cmake --build "$dir" -j"$jobs" --target fuzz_kmsg
    mkdir -p "$dir/corpus" "$dir/artifacts" # the corpus grows from run to run
    cp "$top"/tests/fixtures/kmsg/*/*.log "$dir/corpus/"
    secs=${RS_FUZZ_SECONDS:-60}
    echo "dev.sh fuzz: fuzz_kmsg for ${secs}s (log: $dir/fuzz.log)"
    if ! "$dir/tests/fuzz/fuzz_kmsg" -max_total_time="$secs" -max_len=65536 -timeout=10 \
        -print_final_stats=1 -artifact_prefix="$dir/artifacts/" "$dir/corpus" \
        >"$dir/fuzz.log" 2>&1; then
        tail -n 150 "$dir/fuzz.log"
        echo "dev.sh fuzz: fuzz_kmsg failed; the crashing input is in $dir/artifacts/" >&2
        exit 1
    fi
    tail -n 15 "$dir/fuzz.log"
    ;;
*)
    echo "usage: scripts/dev.sh run|test|sanitize|build|amd|fuzz [args]" >&2
    exit 2
    ;;
esac
