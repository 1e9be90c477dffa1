#!/usr/bin/env bash
# One entry point for people and CI:
#   scripts/dev.sh run [ringside flags]   install deps, build, start the dashboard
#   scripts/dev.sh test                   install deps, build with -Werror (the CPU build),
#                                         run every test
#   scripts/dev.sh sanitize               ASan+UBSan build running the unit tests, then TSan
#                                         on the threaded ones
#   scripts/dev.sh build                  install deps and build only
#   scripts/dev.sh amd                    install Debian's hipcc, build the AMD GPU backend and
#                                         run the tests of what links it there (on a machine
#                                         without an AMD GPU: the CPU fallback, and the GPU
#                                         suite skips); the modules that never touch a compute
#                                         backend are the same in every build and run in test
#   scripts/dev.sh fuzz                   install clang, build the libFuzzer targets (ASan+UBSan)
#                                         and fuzz each for RS_FUZZ_SECONDS (default 60; CI: 3)
#                                         from build-fuzz/corpus, as many at once as there are
#                                         cores; fails on a crash
#   scripts/dev.sh chaos [chaos.py flags]  build, then the whole fault matrix (every fault,
#                                         stop, device count and mode; tests/chaos/chaos.py)
#                                         with its summary table in build/chaos-table.md
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc 2>/dev/null || echo 2)
cmd=${1:-run}
[ $# -gt 0 ] && shift

configure_build() { # dir, extra cmake args... (BUILD_TARGET: that target alone, else all)
    local dir=$1
    shift
    cmake -S "$top" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >"$dir.configure.log" 2>&1 ||
        { cat "$dir.configure.log"; exit 1; }
    grep -E '^-- (ringside|  )' "$dir.configure.log" || true
    cmake --build "$dir" -j"$jobs" ${BUILD_TARGET:+--target "$BUILD_TARGET"}
}

# Every skipped test by name, with its reason: ctest's own (SKIP_RETURN_CODE) are in its
# summary; the skips inside a Criterion binary are in the TAP reports the tests write.
skipped() { # build dir
    local tap n
    n=$(cat "$1/tap/"*.tap 2>/dev/null | grep -c '# SKIP' || true)
    echo "criterion tests skipped: $n"
    for tap in "$1/tap/"*.tap; do
        [ -e "$tap" ] || continue
        grep '# SKIP' "$tap" | sed "s|^ok - |  skipped: $(basename "$tap" .tap): |" || true
    done
}

if [ "$cmd" = amd ]; then
    "$top/scripts/install-deps.sh" --hip
elif [ "$cmd" = fuzz ] || [ "$cmd" = sanitize ]; then
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
    # the CPU build (hipcc or not): `amd` builds and tests the GPU backend's build
    configure_build "$top/build" -DRS_WERROR=ON -DRINGSIDE_HIP=OFF
    rm -f "$top/build/tap/"*.tap
    ctest --test-dir "$top/build" --output-on-failure -V -j"$jobs"
    skipped "$top/build"
    ;;
sanitize)
    # clang, so the same build also makes the libFuzzer binaries (`RS_FUZZ_DIR=build-asan
    # RS_FUZZ_BUILT=1 dev.sh fuzz` runs them): libFuzzer's coverage only in the targets' own
    # files, so the tests run at ASan's speed (`dev.sh fuzz` alone builds the guided kind)
    CC=clang configure_build "$top/build-asan" -DRS_WERROR=ON -DRS_SANITIZE=address,undefined \
        -DRS_BENCH=OFF -DRINGSIDE_HIP=OFF -DRS_FUZZ=ON -DRS_FUZZ_COVERAGE=OFF
    rm -f "$top/build-asan/tap/"*.tap
    # not here: the Python-driven tests (their time is Python's; the C they drive, the bridge,
    # the watch source and its hang watch, and the model's prediction and export, is under ASan
    # in test_watch, test_watch_diag and test_model; the bridge's own tests are Python alone),
    # the fault matrix's slice (deadlines of a second or two; the stop deadline's code is under
    # ASan in test_stop_deadline and the signal handler's in test_core), and the timeline's and
    # the layout's runs at three sizes (their drawing is under ASan in test_timeline,
    # test_layout and test_panels, and e2e_dashboard draws every panel live)
    asan_skip='^(e2e_watch|e2e_ddp|e2e_ranks|e2e_bridge_peer|test_bridge_[a-z]+|e2e_model'
    asan_skip+='|e2e_chaos|e2e_timeline|e2e_layout)$'
    ctest --test-dir "$top/build-asan" --output-on-failure -V -j"$jobs" -E "$asan_skip"
    skipped "$top/build-asan"
    # the threaded scenarios are the one test this build runs: only they are built
    BUILD_TARGET=tsan_threads configure_build "$top/build-tsan" -DRS_WERROR=ON \
        -DRS_SANITIZE=thread -DRS_BENCH=OFF \
        -DRINGSIDE_HIP=OFF
    ctest --test-dir "$top/build-tsan" --output-on-failure -V -R '^tsan_threads$'
    ;;
amd)
    # the binary first; the test programs after, only those of the tests this stage runs
    BUILD_TARGET=ringside configure_build "$top/build-amd" -DRS_WERROR=ON -DRINGSIDE_HIP=AMD \
        -DRS_BENCH=OFF
    # not here: tests of modules that link no compute backend (pure formatters, parsers,
    # the view model, the kernel-log rules, the recording) and the Python-driven ones (watch
    # opens no backend; the model test asks for the CPU one), which test runs already
    nobackend='^(test_core|test_data|test_memory|test_vpoc|test_mlp|test_theme|test_layout'
    nobackend+='|test_ui_model|test_ui_devices|test_panels|test_keymap|test_gpu_view|test_prom'
    nobackend+='|test_agent_status|test_agent_metrics|test_kmsg|test_kmsg_fixtures'
    nobackend+='|test_kmsg_inject|test_probe|test_bundle|lint_deps|lint_deps_catches|lint_no_shell|lint_docs'
    nobackend+='|e2e_kmsg|e2e_replay|e2e_telemetry|e2e_rsmi_ns|e2e_enospc|e2e_watch|e2e_model'
    nobackend+='|e2e_ddp|e2e_ranks|e2e_bridge_peer|test_bridge_[a-z]+|test_watch_diag'
    # nor the end-to-end runs that train with --backend cpu (crash and signals always, the
    # others while E2E_BACKEND is unset): here they would run the CPU backend's code again,
    # which test runs. On a GPU, scripts/gpu-check.sh runs dashboard, hang, inject and agent
    # with E2E_BACKEND=hip, and multi.sh takes E2E_BACKEND=hip on a machine with two GPUs.
    # hip_fallback is this build's own: auto falling back to the CPU.
    nobackend+='|e2e_dashboard|e2e_hang|e2e_multi|e2e_crash|e2e_signals|e2e_inject|e2e_agent'
    nobackend+='|e2e_timeline|e2e_layout|e2e_overlays|e2e_themes'
    nobackend+='|e2e_chaos'
    # nor the parsers, views and agent pieces that link no backend either (test runs them)
    nobackend+='|[a-z_]+_replay|test_chart|test_wrap|test_textview|test_timeline|test_cli_args'
    nobackend+='|test_cli_flags|test_tele_[a-z]+|test_trace|test_errtee|test_data_layout|test_optab|e2e_docs'
    nobackend+='|test_data_stream|test_agent_log|test_agent_refusals|test_agent_http'
    nobackend+='|test_remote|test_remote_tls|test_app_overlay|test_textview|test_stop_deadline)$'
    # a test's program is the target of its name, where there is one (the others run the binary)
    local_targets=$(cmake --build "$top/build-amd" --target help | sed -n 's/^\.\.\. \([^ ]*\).*/\1/p')
    build_list=""
    for t in $(ctest --test-dir "$top/build-amd" -N -E "$nobackend" | sed -n 's/^ *Test *#[0-9]*: //p'); do
        if printf '%s\n' "$local_targets" | grep -qx "$t"; then build_list+=" $t"; fi
    done
    # shellcheck disable=SC2086 # one word a target
    [ -z "$build_list" ] || cmake --build "$top/build-amd" -j"$jobs" --target $build_list
    rm -f "$top/build-amd/tap/"*.tap
    ctest --test-dir "$top/build-amd" --output-on-failure -V -j"$jobs" -E "$nobackend"
    skipped "$top/build-amd"
    ;;
fuzz)
    # every libFuzzer target for RS_FUZZ_SECONDS each (default 60); RS_FUZZ_ONLY=NAME for one,
    # RS_FUZZ_DIR for another build directory (two runs at once); RS_FUZZ_BUILT=1: the
    # binaries in RS_FUZZ_DIR as they are (the sanitize stage's build)
    dir=${RS_FUZZ_DIR:-$top/build-fuzz}
    if [ -z "${RS_FUZZ_BUILT:-}" ]; then
        CC=clang cmake -S "$top" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRS_FUZZ=ON \
            -DRS_SANITIZE=address,undefined -DRS_BENCH=OFF -DRINGSIDE_HIP=OFF -DRS_WERROR=ON \
            >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; exit 1; }
        cmake --build "$dir" -j"$jobs" --target fuzz_all
    fi
    secs=${RS_FUZZ_SECONDS:-60}
    # one target a core at a time (each fuzzer is one process); a crash fails the whole stage
    # once the targets running beside it are done
    fuzz_one() { # binary
        local bin=$1 name
        name=$(basename "$bin")
        local corpus=$dir/corpus/$name # grows from run to run
        mkdir -p "$corpus" "$dir/artifacts/$name"
        cp -r "$top/tests/fuzz/corpus/$name/." "$corpus/" 2>/dev/null || true
        [ "$name" = fuzz_kmsg ] && cp "$top"/tests/fixtures/kmsg/*/*.log "$corpus/"
        echo "dev.sh fuzz: $name for ${secs}s (log: $dir/$name.log)"
        if ! "$bin" -max_total_time="$secs" -max_len=65536 -timeout=10 -print_final_stats=1 \
            -artifact_prefix="$dir/artifacts/$name/" "$corpus" >"$dir/$name.log" 2>&1; then
            tail -n 150 "$dir/$name.log"
            echo "dev.sh fuzz: $name failed; the crashing input is in $dir/artifacts/$name/" >&2
            return 1
        fi
        grep -E '^(Done|stat::(number_of_executed_units|new_units_added))' "$dir/$name.log" |
            sed "s/^/  $name: /"
    }
    failed=0 running=0
    for bin in "$dir"/tests/fuzz/fuzz_*; do
        name=$(basename "$bin")
        case "$name" in *_replay) continue ;; esac
        [ -x "$bin" ] && [ -f "$bin" ] || continue
        [ -n "${RS_FUZZ_ONLY:-}" ] && [ "$name" != "$RS_FUZZ_ONLY" ] && continue
        if [ "$running" -ge "$jobs" ]; then
            wait -n || failed=1
            running=$((running - 1))
        fi
        [ "$failed" = 0 ] || break
        fuzz_one "$bin" &
        running=$((running + 1))
    done
    while [ "$running" -gt 0 ]; do
        wait -n || failed=1
        running=$((running - 1))
    done
    exit "$failed"
    ;;
chaos)
    configure_build "$top/build" -DRS_WERROR=ON -DRINGSIDE_HIP=OFF
    py=/usr/bin/python3
    [ -x "$py" ] || py=python3
    "$py" "$top/tests/chaos/chaos.py" "$top/build/ringside" "$top/build/chaos" \
        --table "$top/build/chaos-table.md" "$@"
    ;;
*)
    echo "usage: scripts/dev.sh run|test|sanitize|build|amd|fuzz|chaos [args]" >&2
    exit 2
    ;;
esac
