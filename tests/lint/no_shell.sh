#!/usr/bin/env bash
# ringside never runs a shell command or another program: no system(), popen(), exec*(),
# posix_spawn*() or fork() in the sources of backend/, tui/ or kernels/ (comments included:
# keep the names out of them too, so this stays a plain grep).
#   no_shell.sh [REPO_ROOT]
set -u
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" || exit 2
pattern='\b(system|popen|execl|execlp|execle|execv|execve|execvp|execvpe|execveat|fexecve|posix_spawnp?|v?fork)[[:space:]]*\('
hits=$(grep -rnE "$pattern" backend tui kernels --include='*.c' --include='*.h' \
    --include='*.cpp' --include='*.hpp' --include='*.hip' --include='*.cu' --include='*.cuh')
if [ -n "$hits" ]; then
    echo "no_shell: ringside must not run shell commands or other programs; found:" >&2
    printf '%s\n' "$hits" >&2
    exit 1
fi
echo "no_shell: ok (no system, popen, exec*, posix_spawn or fork in backend/, tui/, kernels/)"
