#!/usr/bin/env bash
# deps.sh fails on what it is there to catch: a copy of the source tree passes, and each break
# planted in a fresh copy fails it (exit 1) with its own message.
#   deps_test.sh [REPO_ROOT]
set -u
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
lint="$root/tests/lint/deps.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/tree"
cp -r "$root/CMakeLists.txt" "$root/backend" "$root/tui" "$root/kernels" "$tmp/tree/" || exit 2
bad=0

if ! bash "$lint" "$tmp/tree" >"$tmp/out" 2>&1; then
    echo "deps_test: the tree as it is fails deps.sh:" >&2
    cat "$tmp/out" >&2
    exit 1
fi

# case NAME EXPECTED PLANT...: in a fresh copy, run PLANT, then deps.sh must exit 1 and say
# EXPECTED (a grep -E pattern) on stderr
case_() {
    local name=$1 want=$2 dir="$tmp/$1"
    shift 2
    rm -rf "$dir"
    cp -r "$tmp/tree" "$dir"
    (cd "$dir" && eval "$*") || {
        echo "deps_test: $name: cannot plant the break" >&2
        bad=1
        return
    }
    bash "$lint" "$dir" >/dev/null 2>"$tmp/err"
    local rc=$?
    if [ "$rc" -ne 1 ] || ! grep -qE "$want" "$tmp/err"; then
        echo "deps_test: $name: deps.sh exited $rc, expected 1 saying /$want/; it said:" >&2
        cat "$tmp/err" >&2
        bad=1
        return
    fi
    echo "deps_test: $name: caught ($(head -n 1 "$tmp/err"))"
}

# shellcheck disable=SC2317 # run through case_'s eval
inc() { # append an include of $2 to file $1
    printf '#include "%s"\n' "$2" >>"$1"
}

case_ view_includes_dashboard 'tui/view/wrap.c includes tui/dashboard/ui.h: tui/view may include' \
    inc tui/view/wrap.c tui/dashboard/ui.h
case_ agent_includes_dashboard 'tui/agent/remote.c includes tui/dashboard/app.h: tui/agent may' \
    inc tui/agent/remote.c tui/dashboard/app.h
case_ agent_includes_view 'tui/agent/remote.c includes tui/view/ui_model.h: tui/agent may' \
    inc tui/agent/remote.c tui/view/ui_model.h
case_ doctor_includes_cli 'tui/doctor/doctor_env.c includes tui/cli/cli.h: tui/doctor may' \
    inc tui/doctor/doctor_env.c tui/cli/cli.h
case_ panel_includes_agent 'panels/panel_gpu.c includes tui/agent/remote.h: tui/dashboard may' \
    inc tui/dashboard/panels/panel_gpu.c tui/agent/remote.h
case_ backend_includes_tui 'backend/run/run.c includes tui/view/theme.h: backend/ must not' \
    inc backend/run/run.c tui/view/theme.h
case_ core_includes_data 'backend/core/ev.c includes backend/data/data_series.h: backend/core' \
    inc backend/core/ev.c backend/data/data_series.h
case_ circle 'form a circle' inc backend/data/data_csv.c backend/engine/engine.h
case_ no_such_header 'includes tui/view/nothing.h: no such file' \
    inc tui/view/wrap.c tui/view/nothing.h
case_ folder_without_row 'tui/extra \(tui/extra/x.c\) has no row' \
    'mkdir tui/extra && inc tui/extra/x.c tui/view/wrap.h'
case_ file_at_tui_root 'tui holds C files and tui/agent, another library' \
    'inc tui/x.c tui/view/wrap.h'
case_ library_inside_library 'tui/view holds C files and tui/view/plot, another library' \
    'mkdir tui/view/plot && inc tui/view/plot/plot.c tui/view/wrap.h &&
     echo "add_library(rs_plot STATIC plot.c)" >tui/view/plot/CMakeLists.txt'
case_ source_folder_of_another_library 'panel_extra.c is not in the library of tui/dashboard' \
    'inc tui/dashboard/panels/panel_extra.c tui/dashboard/panel.h &&
     echo "add_library(rs_extra STATIC panels/panel_extra.c)" >>tui/dashboard/CMakeLists.txt'

exit "$bad"
