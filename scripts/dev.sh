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
*)
    echo "usage: scripts/dev.sh run|test|sanitize|build|amd [args]" >&2
    exit 2
    ;;
esac
