#!/usr/bin/env bash
# End-to-end test of finding themes from anywhere: run from a directory without ./themes, a
# build tree's binary finds the shipped themes and an installed tree's (cmake --install to
# a prefix of its own) finds its own; a theme that is missing or broken is one line on the
# terminal (not in the session log) and exit status 2, before anything starts.
#
# usage: themes.sh RINGSIDE SCRATCH_DIR
E2E_NAME="themes e2e"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

t0=$SECONDS
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH/away" || exit 1
cd "$SCRATCH/away" || exit 1

# pane BIN ARGS...: run BIN in a 120x40 pane from here; its status into rc, the screen kept
pane() {
    rm -f "$SCRATCH/rc"
    tm new-session -d -s "$SESSION" -x 120 -y 40 sh -c "$*; echo \$? > '$SCRATCH/rc'; sleep 30" ||
        fail "tmux new-session failed"
}
rc_is() { [ -s "$SCRATCH/rc" ] && [ "$(cat "$SCRATCH/rc")" = "$1" ]; }
quick="--backend cpu --synthetic-days 3 --epochs 1 --telemetry none --no-kmsg --frames 3 -d 1"

pane "'$RINGSIDE' --theme nosuch $quick --output '$SCRATCH/o1'"
wait_for "--theme nosuch: exit 2" 20 rc_is 2
capture
lines=$(printf '%s\n' "$SCREEN" | grep -c "theme 'nosuch' not found")
[ "$lines" = 1 ] || fail "want the reason once on the terminal, got $lines"
has "themes found: default" || fail "the themes that exist are not named"
[ ! -e "$SCRATCH/o1" ] || fail "a bad theme started the run (its output directory exists)"
next_server

printf '{"name": "x", "colors": {"ok": {"fg": "nocolor"}}}\n' > "$SCRATCH/bad.json"
pane "'$RINGSIDE' --theme '$SCRATCH/bad.json' $quick --output '$SCRATCH/o2'"
wait_for "a broken theme file: exit 2" 20 rc_is 2
capture
has "bad.json" && has "nocolor" || fail "the reason does not name the file and the value"
next_server

pane "'$RINGSIDE' --theme nord $quick --output '$SCRATCH/o3'"
wait_for "the build tree's binary finds nord from elsewhere" 60 rc_is 0
next_server

build=$(dirname "$RINGSIDE")
STEP="cmake --install to a prefix of its own"
cmake --install "$build" --prefix "$SCRATCH/inst" > "$SCRATCH/install.log" 2>&1 ||
    fail "$(tail -n 5 "$SCRATCH/install.log")"
pane "'$SCRATCH/inst/bin/ringside' --theme solarized-dark $quick --output '$SCRATCH/o4'"
wait_for "the installed tree's binary finds its themes" 60 rc_is 0
echo "themes e2e: ok ($((SECONDS - t0)) s)"
