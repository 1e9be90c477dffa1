#!/usr/bin/env bash
# The documentation's shape: README.md a newcomer reads top to bottom (at most 400 lines), the
# reference in docs/ with a table of contents (docs/README.md) naming every file there, and
# every relative link in them pointing at a file that exists (an anchor after '#' is not
# checked). Exits 1 with one line per broken rule.
set -euo pipefail
top=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$top"
fail=0
say() {
    echo "docs: $*" >&2
    fail=1
}

lines=$(wc -l <README.md)
[ "$lines" -le 400 ] || say "README.md has $lines lines; at most 400 (the reference goes in docs/)"
[ -f docs/README.md ] || say "docs/README.md (the table of contents) is missing"
for f in docs/*; do
    name=$(basename "$f")
    [ "$name" = README.md ] && continue
    [ -f docs/README.md ] && ! grep -qF "($name)" docs/README.md &&
        say "docs/README.md does not link $name"
done
for doc in README.md docs/*.md; do
    dir=$(dirname "$doc")
    # [text](target): relative targets only (no scheme, no pure anchor)
    while IFS= read -r target; do
        path=${target%%#*}
        [ -n "$path" ] || continue
        [ -e "$dir/$path" ] || say "$doc links $target, which does not exist"
    done < <(grep -o '\](\([^)]*\))' "$doc" | sed 's/^](\(.*\))$/\1/' | grep -v '^[a-z]*:' || true)
done
[ "$fail" -eq 0 ] && echo "docs: ok (README.md $lines lines; docs/ listed; links resolve)"
exit "$fail"
