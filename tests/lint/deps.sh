#!/usr/bin/env bash
# The source tree's dependency rules, from the #include lines of backend/, tui/ and kernels/:
#   - nothing in backend/ includes a front end (tui/);
#   - backend/core includes nothing outside backend/core;
#   - the folders' include graph has no circle (tui/dashboard/panels counts as tui/dashboard).
# Prints the folder graph (one "from -> to" a line) and exits 1 on a broken rule.
set -euo pipefail
top=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$top"
fail=0
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT

folder() { # a file's (or header's) folder, tui/dashboard/panels folded into tui/dashboard
    local d
    d=$(dirname "$1")
    [ "$d" = tui/dashboard/panels ] && d=tui/dashboard
    echo "$d"
}

while IFS= read -r file; do
    from=$(folder "$file")
    while IFS= read -r inc; do
        to=$(folder "$inc")
        [ "$to" = "$from" ] && continue
        echo "$from $to" >>"$edges"
        case "$from:$to" in
        backend/*:tui*)
            echo "deps: $file includes $inc: backend/ must not include a front end" >&2
            fail=1
            ;;
        backend/core:*)
            echo "deps: $file includes $inc: backend/core includes only backend/core" >&2
            fail=1
            ;;
        esac
    done < <(sed -n 's/^#include "\(\(backend\|tui\|kernels\)\/[^"]*\)".*/\1/p' "$file")
done < <(find backend tui kernels -name '*.c' -o -name '*.h' -o -name '*.cpp' | sort)

sort -u "$edges" -o "$edges"
sed 's/ / -> /' "$edges"
if ! tsort "$edges" >/dev/null 2>"$edges.err"; then
    echo "deps: the folders' includes form a circle:" >&2
    cat "$edges.err" >&2
    fail=1
fi
rm -f "$edges.err"
[ "$fail" -eq 0 ] && echo "deps: ok (no front end included from backend/, core stands alone, no circle)"
exit "$fail"
