#!/usr/bin/env bash
# The source tree's dependency rules, from the #include lines of backend/, tui/ and kernels/
# and the source lists of the CMake files:
#   - a folder includes only itself and the folders its row of the table below names (the
#     first row that matches it); a folder with no row is an error: a new folder gets its row;
#   - so nothing in backend/ includes a front end (tui/), and backend/core includes nothing
#     outside backend/core;
#   - an included header exists;
#   - the folders' include graph has no circle;
#   - no folder holds both a library's files and another library's folder: below a folder
#     with C files, no folder has a CMakeLists.txt of its own, and every C file there is in
#     the source list of a library of the folder's own files (a plain source folder such as
#     tui/dashboard/panels, counted as its parent here).
# Prints the folder graph (one "from -> to" a line) and exits 1 on a broken rule.
#   deps.sh [REPO_ROOT]
set -euo pipefail

# folder: the folders it may include besides itself. The first row that matches a folder is
# its row; backend/* is any folder there. The front ends point down: the command line starts
# them all, the dashboard draws the view, the view and the agent never include the dashboard.
rules='
backend/core:
backend/*:     backend/* kernels
kernels:
tui/doctor:    backend/*
tui/agent:     backend/*
tui/view:      tui/doctor backend/*
tui/dashboard: tui/view tui/doctor backend/*
tui/cli:       tui/dashboard tui/view tui/agent tui/doctor backend/*
'

top=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$top"
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- the libraries' folders ----

# "FILE LIBRARY" for every source a CMakeLists.txt lists (add_library, add_executable,
# target_sources; generated files, under a ${...} path, left out)
for cm in CMakeLists.txt $(find backend tui kernels -name CMakeLists.txt | sort); do
    dir=$(dirname "$cm")
    sed 's/#.*//' "$cm" | tr '\n' ' ' |
        { grep -oE '(add_library|add_executable|target_sources)\([^)]*\)' || true; } |
        sed 's/^[a-z_]*(//; s/)$//' |
        while read -r name rest; do
            for tok in $rest; do
                case "$tok" in
                *'$'*) ;;
                *.c) echo "$dir/$tok $name" ;;
                esac
            done
        done
done | sed 's|^\./||' | sort -u >"$tmp/sources"

declare -A lib_of
while read -r src lib; do
    lib_of[$src]="${lib_of[$src]:-}${lib_of[$src]:+ }$lib"
done <"$tmp/sources"

has_c() { # the folder holds C files of its own
    compgen -G "$1/*.c" >/dev/null
}

while IFS= read -r d; do
    has_c "$d" || continue
    libs=" "
    for f in "$d"/*.c; do
        for l in ${lib_of[$f]:-}; do
            case "$libs" in *" $l "*) ;; *) libs+="$l " ;; esac
        done
    done
    while IFS= read -r sub; do
        if [ -f "$sub/CMakeLists.txt" ]; then
            echo "deps: $d holds C files and $sub, another library's folder (a CMakeLists.txt" \
                "of its own): one or the other" >&2
            fail=1
            continue
        fi
        for f in "$sub"/*.c; do
            [ -e "$f" ] || continue
            mine=
            for l in ${lib_of[$f]:-}; do
                case "$libs" in *" $l "*) mine=1 ;; esac
            done
            if [ -z "$mine" ]; then
                said=${libs# }
                echo "deps: $f is not in the library of $d's own files (${said% }):" \
                    "no folder holds both a library's files and another library's folder" >&2
                fail=1
            fi
        done
    done < <(find "$d" -mindepth 1 -type d | sort)
done < <(find backend tui kernels -type d | sort)

# ---- the includes ----

declare -A folder_of
folder() { # a file's folder, a plain source folder counted as its parent's
    local d p
    d=${1%/*}
    if [ -z "${folder_of[$d]:-}" ]; then
        p=$d
        while [ "$p" != "${p%/*}" ] && [ ! -f "$p/CMakeLists.txt" ] && has_c "${p%/*}"; do
            p=${p%/*}
        done
        folder_of[$d]=$p
    fi
    folder=${folder_of[$d]}
}

# the table: the folders' patterns and what each may include (no pathname expansion of
# them from here on)
set -f
pats=()
mays=()
while IFS=: read -r pat may; do
    [ -n "$pat" ] || continue
    read -r -a words <<<"$may"
    pats+=("$pat")
    mays+=("${words[*]}")
done <<<"$rules"

row() { # the first row matching folder $1: sets may (what it may include); 1 when none
    local i
    for i in "${!pats[@]}"; do
        # shellcheck disable=SC2254 # the row's pattern
        case "$1" in ${pats[$i]})
            may=${mays[$i]}
            return 0
            ;;
        esac
    done
    return 1
}

declare -A told
while IFS= read -r file; do
    folder "$file"
    from=$folder
    norow=
    if ! row "$from"; then
        norow=1
        if [ -z "${told[$from]:-}" ]; then
            echo "deps: $from ($file) has no row in deps.sh's table: give it one" >&2
            told[$from]=1
        fi
        fail=1
    fi
    while IFS= read -r inc; do
        if [ ! -f "$inc" ]; then
            echo "deps: $file includes $inc: no such file" >&2
            fail=1
            continue
        fi
        folder "$inc"
        to=$folder
        [ "$to" = "$from" ] && continue
        echo "$from $to" >>"$tmp/edges"
        [ -z "$norow" ] || continue
        ok=
        for pat in $may; do
            # shellcheck disable=SC2254
            case "$to" in $pat) ok=1 ;; esac
        done
        [ -n "$ok" ] && continue
        case "$from:$to" in
        backend/core:*) why="backend/core includes only backend/core" ;;
        backend/*:tui*) why="backend/ must not include a front end" ;;
        *) why="$from may include only ${may:-itself}" ;;
        esac
        echo "deps: $file includes $inc: $why" >&2
        fail=1
    done < <(sed -n 's/^#include "\(\(backend\|tui\|kernels\)\/[^"]*\)".*/\1/p' "$file")
done < <(find backend tui kernels -name '*.c' -o -name '*.h' -o -name '*.cpp' | sort)

touch "$tmp/edges"
sort -u "$tmp/edges" -o "$tmp/edges"
sed 's/ / -> /' "$tmp/edges"
if ! tsort "$tmp/edges" >/dev/null 2>"$tmp/circle"; then
    echo "deps: the folders' includes form a circle:" >&2
    cat "$tmp/circle" >&2
    fail=1
fi
[ "$fail" -eq 0 ] && echo "deps: ok (each folder includes only what its row allows, no circle," \
    "no library's folder inside another's)"
exit "$fail"
