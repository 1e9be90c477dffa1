#!/usr/bin/env bash
# The Debian package installed as a user installs it: built with cpack, installed with apt in a
# fresh Debian 12 root (debootstrap --variant=minbase bookworm) whose only sources are Debian's
# archive, run there (--version, doctor --quick, its themes and data, the man page, a short
# headless training, the Python bridge), then purged, with no file of it left. As root, on a
# machine that reaches a Debian mirror (the one of its own apt sources, else deb.debian.org).
#   scripts/deb-check.sh root ROOT              make ROOT only (the slow half, downloads mostly:
#                                               start it early, in the background)
#   scripts/deb-check.sh check BUILD_DIR ROOT   build the package in BUILD_DIR, then install,
#                                               run and purge it in ROOT (waiting for a `root`
#                                               still making it)
#   scripts/deb-check.sh BUILD_DIR ROOT         both, one after the other
# BUILD_DIR is a build of its own: configured here with -DCMAKE_INSTALL_PREFIX=/usr (the
# package's prefix, which the binary's data lookups are compiled with); a new one builds the
# CPU binary alone (no tests, no benchmarks). ROOT is made anew by `root` (its log: ROOT.log);
# the check's logs are in BUILD_DIR/deb-check/. One line on stderr says what failed, exit 1.
set -euo pipefail
export LC_ALL=C # the order of globs and sort, whatever the caller's locale

top=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc 2>/dev/null || echo 2)
suite=bookworm
marker=.deb-check-root # in ROOT once `root` has finished it

usage() {
    echo "usage: scripts/deb-check.sh root ROOT | check BUILD_DIR ROOT | BUILD_DIR ROOT" >&2
    exit 2
}
fail() {
    echo "deb-check: FAIL: $*" >&2
    exit 1
}
say() { echo "deb-check: $*"; }

# The URI of an enabled deb source serving SUITE in this machine's apt sources (one-line and
# deb822 files), if any.
apt_uri() { # suite
    local f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        awk -v s="$1" '$1 == "deb" {
            i = 2
            if ($i ~ /^\[/) { while (i < NF && $i !~ /\]$/) i++; i++ }
            if ($(i + 1) == s) { print $i; exit }
        }' "$f"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk -v s="$1" 'BEGIN { RS = ""; FS = "\n" } {
            types = ""; uris = ""; suites = ""; enabled = "yes"
            for (i = 1; i <= NF; i++) {
                if ($i ~ /^#/) continue
                k = tolower($i); sub(/:.*/, "", k); v = $i; sub(/^[^:]*:[ \t]*/, "", v)
                if (k == "types") types = " " v " "
                else if (k == "uris") uris = v
                else if (k == "suites") suites = " " v " "
                else if (k == "enabled") enabled = tolower(v)
            }
            if (enabled != "no" && types ~ / deb / && suites ~ (" " s " ")) {
                split(uris, u, /[ \t]+/); print u[1]; exit
            }
        }' "$f"
    done
}
first_uri() { # suite default
    local uri
    uri=$(apt_uri "$1" | head -n 1)
    echo "${uri:-$2}"
}

mounted=""
unmount() {
    if [ -n "$mounted" ] && mountpoint -q "$mounted"; then
        umount "$mounted" || umount -l "$mounted"
    fi
    mounted=""
}
mount_proc() {
    mountpoint -q "$root/proc" || { mount -t proc proc "$root/proc" && mounted=$root/proc; }
}
# a command in ROOT, with a clean environment
in_root() {
    chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        DEBIAN_FRONTEND=noninteractive "$@"
}
# ROOT's lock: held by `root` while it makes ROOT, taken by `check` before it uses it
lock_root() {
    exec 9>"$root.lock"
    flock -n 9 || { say "waiting for $root: 'deb-check.sh root' is making it"; flock 9; }
}
set_root() { # the root's folder, never /
    root=$(realpath -m "$1")
    [ "$root" != / ] || fail "ROOT must not be /"
}
need_root_user() {
    [ "$(id -u)" -eq 0 ] || fail "must run as root (debootstrap, chroot, mount)"
}

make_root() {
    local t0=$SECONDS mirror updates security log=$root.log
    need_root_user
    lock_root
    if ! command -v debootstrap >/dev/null 2>&1; then
        # waiting for another apt (CI's dependencies) rather than failing beside it
        local apt=(apt-get -o DPkg::Lock::Timeout=600 -y -qq)
        say "installing debootstrap"
        { DEBIAN_FRONTEND=noninteractive "${apt[@]}" install debootstrap ||
            { "${apt[@]}" update &&
                DEBIAN_FRONTEND=noninteractive "${apt[@]}" install debootstrap; }
        } >"$log" 2>&1 || { tail -n 20 "$log" >&2; fail "could not install debootstrap"; }
    fi
    mirror=$(first_uri "$suite" http://deb.debian.org/debian)
    updates=$(first_uri "$suite-updates" "$mirror")
    security=$(first_uri "$suite-security" http://deb.debian.org/debian-security)
    mirror=${mirror%/} updates=${updates%/} security=${security%/}
    if mountpoint -q "$root/proc"; then umount "$root/proc" || umount -l "$root/proc"; fi
    rm -rf --one-file-system "$root"
    say "debootstrap --variant=minbase $suite $root $mirror (log: $log)"
    debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$log" 2>&1 ||
        { tail -n 20 "$log" >&2; fail "debootstrap $suite from $mirror failed (log: $log)"; }
    printf 'deb %s %s main\ndeb %s %s-updates main\ndeb %s %s-security main\n' \
        "$mirror" "$suite" "$updates" "$suite" "$security" "$suite" >"$root/etc/apt/sources.list"
    # a throwaway root: no fsync after each file, no translations, no man-db index rebuilt on
    # every install (man -w reads the pages' folders)
    echo force-unsafe-io >"$root/etc/dpkg/dpkg.cfg.d/deb-check"
    echo 'Acquire::Languages "none";' >"$root/etc/apt/apt.conf.d/99deb-check"
    mount_proc
    {
        echo 'man-db man-db/auto-update boolean false' | in_root debconf-set-selections &&
            in_root apt-get update -qq &&
            in_root apt-get install -y -qq --no-install-recommends man-db
    } >>"$log" 2>&1 || { tail -n 20 "$log" >&2; fail "apt in the new root failed (log: $log)"; }
    unmount
    date -u +%FT%TZ >"$root/$marker"
    say "root $root made in $((SECONDS - t0)) s (sources: $mirror, $security)"
}

build_package() {
    local log=$logs/build.log
    if [ -f "$build/CMakeCache.txt" ]; then
        cmake -S "$top" -B "$build" -DCMAKE_INSTALL_PREFIX=/usr >"$log" 2>&1
    else
        cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
            -DBUILD_TESTING=OFF -DRS_BENCH=OFF -DRINGSIDE_HIP=OFF >"$log" 2>&1
    fi || { tail -n 20 "$log" >&2; fail "cmake configure of $build failed (log: $log)"; }
    cmake --build "$build" -j"$jobs" >>"$log" 2>&1 ||
        { tail -n 20 "$log" >&2; fail "the build in $build failed (log: $log)"; }
    # the man pages and the completion
    cmake --build "$build" --target rs_docs >>"$log" 2>&1 ||
        { tail -n 20 "$log" >&2; fail "the rs_docs target failed (log: $log)"; }
    rm -f "$build"/ringside_*.deb
    (cd "$build" && cpack -G DEB) >>"$log" 2>&1 ||
        { tail -n 20 "$log" >&2; fail "cpack -G DEB in $build failed (log: $log)"; }
    local debs=("$build"/ringside_*_*.deb)
    if [ ${#debs[@]} -ne 1 ] || [ ! -f "${debs[0]}" ]; then
        fail "cpack wrote no single ringside_*.deb in $build"
    fi
    deb=${debs[0]}
    version=$(dpkg-deb -f "$deb" Version)
    [ "$(basename "$deb")" = "ringside_${version}_$(dpkg --print-architecture).deb" ] ||
        fail "$(basename "$deb"): not named ringside_VERSION_ARCH.deb"
    dpkg-deb -c "$deb" >"$logs/contents.txt"
    say "package $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB, $(grep -vc '/$' \
        "$logs/contents.txt") files; dpkg -c: $logs/contents.txt)"
    say "Depends: $(dpkg-deb -f "$deb" Depends)"
    say "Recommends: $(dpkg-deb -f "$deb" Recommends)"
}

# apt installs the package and what it needs: every one of those from ROOT's sources (Debian's
# archive), listed.
install_package() {
    local log=$logs/install.log
    # a root an earlier check stopped in: its package goes first, or apt would keep it
    if in_root dpkg-query -W -f "\${Status}" ringside 2>/dev/null | grep -q 'ok installed'; then
        say "ringside is installed in $root already (an earlier check): purging it first"
        in_root apt-get purge -y ringside >"$log" 2>&1 ||
            { tail -n 20 "$log" >&2; fail "apt-get purge -y ringside failed (log: $log)"; }
    fi
    in_root dpkg-query -W -f "\${Package} \${Version}\n" | sort >"$logs/before.txt"
    cp "$deb" "$root/tmp/"
    in_root sh -c "cd /tmp && apt-get install -y ./$(basename "$deb")" >"$log" 2>&1 ||
        { tail -n 20 "$log" >&2; fail "apt-get install ./$(basename "$deb") failed (log: $log)"; }
    in_root dpkg-query -W -f "\${Package} \${Version}\n" | sort >"$logs/after.txt"
    comm -13 "$logs/before.txt" "$logs/after.txt" | grep -v '^ringside ' >"$logs/new.txt" || true
    in_root dpkg-query -W -f "\${Status}" ringside | grep -q 'install ok installed' ||
        fail "ringside is not installed after apt-get install"
    local uris
    uris=$(awk '$1 == "deb" { print $2 }' "$root/etc/apt/sources.list" | sort -u | paste -sd' ' -)
    say "apt installed ringside and $(wc -l <"$logs/new.txt") packages, from $uris:"
    sed 's/ /=/' "$logs/new.txt" | paste -sd' ' - | fold -s -w 98 | sed 's/^/  /; s/ *$//'
    [ -s "$logs/new.txt" ] || return 0
    # shellcheck disable=SC2046 # one word a package
    in_root apt-cache madison $(cut -d' ' -f1 "$logs/new.txt") >"$logs/madison.txt" 2>&1 || true
    local stray
    stray=$(awk -v uris=" $uris " -F' [|] ' '
        NR == FNR { want[$0] = 1; next }
        { gsub(/^ +| +$/, "", $1); gsub(/^ +| +$/, "", $2); split($3, w, " ")
          if (index(uris, " " w[1] " ")) seen[$1 " " $2] = 1 }
        END { for (p in want) if (!(p in seen)) print p }' "$logs/new.txt" "$logs/madison.txt")
    [ -z "$stray" ] ||
        fail "installed, but not from Debian's archive: $(echo "$stray" | paste -sd' ' -)"
}

run_checks() {
    local out rc datadir=/usr/share/ringside
    out=$(in_root ringside --version 2>&1) || fail "ringside --version: exit $?: $out"
    case "$out" in
    "ringside $version ("*) ;;
    *) fail "ringside --version says '$out', not $version" ;;
    esac
    say "ok: $out"

    # doctor: no GPU here, so its GPU rows are skip; it must run to its summary, its rules loaded
    rc=0
    out=$(in_root ringside doctor --quick 2>&1) || rc=$?
    echo "$out" >"$logs/doctor.txt"
    [ "$rc" -le 1 ] || fail "ringside doctor --quick: exit $rc (log: $logs/doctor.txt)"
    local summary
    summary=$(echo "$out" | grep -E '^[0-9]+ ok, [0-9]+ warn, [0-9]+ fail, [0-9]+ skipped$') ||
        fail "ringside doctor --quick printed no summary (log: $logs/doctor.txt)"
    echo "$out" | grep -Eq 'no known-bad combination +ok +[1-9][0-9]* rules checked' ||
        fail "ringside doctor --quick checked no rules (log: $logs/doctor.txt)"
    say "ok: doctor --quick: $summary (exit $rc)"
    [ "$rc" -eq 0 ] || echo "$out" | grep -E '^  .* fail  ' | sed 's/^/  /'

    # the data the binary looks for under the prefix it was built for
    local f
    for f in remedies.json doctor_rules.json; do
        [ -s "$root$datadir/$f" ] || fail "$datadir/$f is not installed"
        grep -qaF "$datadir/$f" "$root/usr/bin/ringside" ||
            fail "the installed binary does not look for $datadir/$f"
    done
    local themes="" t
    for t in "$root$datadir"/themes/*.json; do # in C order, as ringside lists them
        [ -f "$t" ] || fail "no themes in $datadir/themes"
        t=$(basename "$t" .json)
        themes+=${themes:+, }$t
    done
    rc=0
    out=$(in_root sh -c 'cd /tmp && ringside --theme no-such-theme' 2>&1) || rc=$?
    if [ "$rc" -ne 2 ] || ! echo "$out" | grep -qF "$datadir/themes" ||
        ! echo "$out" | grep -qF "themes found: $themes"; then
        fail "ringside does not find the themes of $datadir/themes: exit $rc: $out"
    fi
    say "ok: data in $datadir: remedies.json, doctor_rules.json, themes $themes"

    local exec_bin
    exec_bin=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' \
        "$root/usr/lib/systemd/system/ringside-agent.service" | head -n 1)
    if [ -z "$exec_bin" ] || [ ! -x "$root$exec_bin" ]; then
        fail "ringside-agent.service: ExecStart '$exec_bin' is not an installed program"
    fi
    say "ok: /usr/lib/systemd/system/ringside-agent.service runs $exec_bin"

    # the man pages, rendered, and the completion
    grep -q ' \./usr/share/man/man1/ringside\.1' "$logs/contents.txt" ||
        fail "the package has no man page ringside.1"
    out=$(in_root man -w ringside 2>&1) || fail "man -w ringside: $out"
    say "ok: man -w ringside: $out"
    in_root env MANWIDTH=80 man ringside-train 2>&1 | grep -q -- '--epochs N' ||
        fail "man ringside-train does not render train's options"
    say "ok: man ringside-train renders its options"
    local comp=/usr/share/bash-completion/completions/ringside
    [ -f "$root$comp" ] || fail "the package has no $comp"
    in_root bash -c ". $comp && complete -p ringside" >/dev/null 2>&1 ||
        fail "$comp does not define a completion for ringside"
    say "ok: $comp"
    [ -f "$root/usr/share/doc/ringside/docs/README.md" ] ||
        fail "the package has no /usr/share/doc/ringside/docs/README.md (the reference)"

    # a short headless training: its JSON lines from the run line to the completed summary
    local run=/tmp/deb-check-train
    in_root ringside train --headless --synthetic-days 5 --epochs 1 --output "$run" \
        >"$root$run.jsonl" 2>"$logs/train.err" ||
        fail "ringside train --headless: exit $? ($(tail -n 3 "$logs/train.err"))"
    out=$(in_root python3 -B -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
first, last = lines[0], lines[-1]
ok = (first.get("type") == "run" and last.get("type") == "summary"
      and last.get("state") == "completed" and last.get("epochs") == 1)
print("%d lines, %s to %s %s, checkpoint %s" % (len(lines), first.get("type"), last.get("type"),
      last.get("state"), last.get("checkpoint")))
sys.exit(0 if ok else 1)' "$run.jsonl" 2>&1) || fail "the headless run did not end completed: $out"
    [ -s "$root$run/vpoc_mlp.rsmodel" ] || fail "the headless run wrote no checkpoint in $run"
    say "ok: train --headless: $out"

    # the bridge, as Debian's python3 imports it (as root: it may write __pycache__, which the
    # package must remove too); the copy in share/ringside/python as well
    out=$(in_root python3 -c 'import importlib.metadata, ringside
print(ringside.__version__, importlib.metadata.version("ringside"), ringside.__file__)' 2>&1) ||
        fail "python3 -c 'import ringside': $out"
    [ "$out" = "$version $version /usr/lib/python3/dist-packages/ringside/__init__.py" ] ||
        fail "python3 imports ringside as: $out"
    out=$(in_root env PYTHONPATH=$datadir/python python3 -c 'import ringside
print(ringside.__file__)' 2>&1) || fail "PYTHONPATH=$datadir/python: import ringside: $out"
    [ "$out" = "$datadir/python/ringside/__init__.py" ] ||
        fail "PYTHONPATH=$datadir/python python3 imports ringside from $out"
    say "ok: python3 -c 'import ringside': $version from /usr/lib/python3/dist-packages"
}

# apt-get purge, then none of the package's paths is left, but folders other packages own
purge_package() {
    local log=$logs/purge.log p left=()
    in_root dpkg -L ringside >"$logs/files.txt"
    in_root apt-get purge -y ringside >"$log" 2>&1 ||
        { tail -n 20 "$log" >&2; fail "apt-get purge -y ringside failed (log: $log)"; }
    ! in_root dpkg-query -W -f "\${Status}" ringside 2>/dev/null | grep -q 'ok installed' ||
        fail "ringside is still installed after apt-get purge"
    while read -r p; do
        if [ -z "$p" ] || { [ ! -e "$root$p" ] && [ ! -L "$root$p" ]; }; then
            continue
        fi
        if [ -d "$root$p" ] && [ ! -L "$root$p" ]; then
            # a folder stays when another package has it (under its own path or, Debian 12's
            # merged /usr, its /lib or /bin alias)
            in_root dpkg-query -S "$p" >/dev/null 2>&1 && continue
            case "$p" in /usr/lib/* | /usr/bin/* | /usr/sbin/*)
                in_root dpkg-query -S "${p#/usr}" >/dev/null 2>&1 && continue ;;
            esac
            p="$p/ ($(cd "$root$p" && find . -mindepth 1 | head -n 5 | tr '\n' ' '))"
        fi
        left+=("$p")
    done <"$logs/files.txt"
    [ ${#left[@]} -eq 0 ] || fail "left after apt-get purge ringside: ${left[*]}"
    say "ok: apt-get purge ringside left none of its $(wc -l <"$logs/files.txt") paths"
}

check() {
    local t0=$SECONDS t1
    need_root_user
    mkdir -p "$build"
    build=$(cd "$build" && pwd)
    logs=$build/deb-check
    mkdir -p "$logs"
    build_package
    say "package built in $((SECONDS - t0)) s"
    t1=$SECONDS
    lock_root
    [ $((SECONDS - t1)) -eq 0 ] || say "waited $((SECONDS - t1)) s for $root"
    t1=$SECONDS
    [ -f "$root/$marker" ] || fail "$root is not a root made by 'deb-check.sh root' (see $root.log)"
    mount_proc
    install_package
    run_checks
    purge_package
    unmount
    say "package checked in $root in $((SECONDS - t1)) s (all: $((SECONDS - t0)) s)"
}

trap unmount EXIT
trap 'exit 1' INT TERM HUP
case "${1:-}" in
root)
    [ $# -eq 2 ] || usage
    set_root "$2"
    make_root
    ;;
check)
    [ $# -eq 3 ] || usage
    build=$2
    set_root "$3"
    check
    ;;
*)
    [ $# -eq 2 ] || usage
    build=$1
    set_root "$2"
    make_root
    check
    ;;
esac
