#!/usr/bin/env bash
# Build a local sysroot of the Debian packages ringside compiles against, for a machine that
# has a compiler but neither these headers nor a package registry (copy the folder there).
#   scripts/sysroot.sh [DIR]          default DIR: ./sysroot (git-ignored)
# Then configure with:
#   PKG_CONFIG_SYSROOT_DIR=$PWD/sysroot \
#   PKG_CONFIG_LIBDIR=$PWD/sysroot/usr/lib/x86_64-linux-gnu/pkgconfig:$PWD/sysroot/usr/share/pkgconfig \
#   cmake -S . -B build -DCMAKE_PREFIX_PATH=$PWD/sysroot/usr \
#         -DPKG_CONFIG_EXECUTABLE=$PWD/sysroot/usr/bin/pkgconf \
#         -DCMAKE_C_FLAGS=-I$PWD/sysroot/usr/include
# and run with LD_LIBRARY_PATH=$PWD/sysroot/usr/lib/x86_64-linux-gnu.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
dest=$(realpath -m "${1:-$top/sysroot}")
# ncurses' runtime is on every Linux machine: only its headers and link stubs come along.
# So are zlib's, libzstd's, GnuTLS's and libcurl-gnutls's (every machine with git has
# libcurl-gnutls.so.4: git links it), whose own dependencies (nghttp2, ldap, ...) differ from one
# distribution to the next.
packages=(libncurses-dev libjson-c-dev libjson-c5 libmicrohttpd-dev libmicrohttpd12
          libgnutls28-dev libcurl4-gnutls-dev zlib1g-dev libzstd-dev
          libcriterion-dev libcriterion3 libboxfort-dev libnanomsg5 libgit2-1.5
          libhttp-parser2.9 libmbedtls14 libmbedx509-1 libmbedcrypto7 libssh2-1 libffi8
          pkgconf-bin libpkgconf3)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download "${packages[@]}" >/dev/null)
mkdir -p "$dest"
for deb in "$work"/*.deb; do
    dpkg -x "$deb" "$dest"
done
# ncurses' form, menu and panel libraries, which not every machine has (nvtop links them, for
# scripts/nvtop-compare.sh): those alone, so that ncurses and terminfo stay the machine's own.
mkdir -p "$work/curses"
(cd "$work/curses" && apt-get download libncurses6 libncursesw6 >/dev/null)
for deb in "$work"/curses/*.deb; do
    dpkg -x "$deb" "$work/curses/x"
done
cp -a "$work"/curses/x/usr/lib/x86_64-linux-gnu/lib{form,menu,panel}*.so.6* \
    "$dest/usr/lib/x86_64-linux-gnu/"
# Debian's .so links are absolute or relative. A link to a library inside the sysroot stays
# (made relative); a link to one the target machine has itself (ncurses, GnuTLS, libcurl-gnutls)
# becomes a linker script naming its soname, so the target's own copy is linked, never a mix of
# two distributions' libraries.
find "$dest" -type l -name '*.so' | while read -r link; do
    target=$(readlink "$link")
    case "$target" in
    /*) inside=$dest$target ;;
    *) inside=$(dirname "$link")/$target ;;
    esac
    if [ -e "$inside" ]; then
        ln -sfnr "$inside" "$link"
    else
        rm "$link"
        echo "INPUT($(basename "$target" | sed -E 's/(\.so\.[0-9]+).*/\1/'))" >"$link"
    fi
done
# libmicrohttpd's and GnuTLS's .pc files name their dependencies for static links only: the
# shared libraries find the target's own (libgnutls.so.30, which libmicrohttpd12 needs, and
# nettle and the rest under it), so pkg-config is not made to look for their headers here.
sed -i '/^Requires.private:/d' "$dest"/usr/lib/x86_64-linux-gnu/pkgconfig/libmicrohttpd.pc \
    "$dest"/usr/lib/x86_64-linux-gnu/pkgconfig/gnutls.pc
# libcurl.pc names its dependencies in Libs.private alone (read for static links only): nothing
# to trim there.
echo "sysroot: ${#packages[@]} packages in $dest"
