#!/bin/sh
# run.sh - `make test-install`: install memplan into a scratch DESTDIR with
# PREFIX=/usr and check what landed there:
#   - exactly the files in tests/install/expected_files (so no private header
#     such as plan_internal.h or strmap.h, and nothing forgotten);
#   - every installed header includes only installed headers and compiles on
#     its own with `pkg-config --cflags memplan`;
#   - the installed programs run, and their man pages name every option (and,
#     for the daemon, every MEMPLAN_* variable) that --help lists; with groff
#     present, the pages format without a warning;
#   - plan_example.c, built against the tree with
#     `pkg-config --cflags --libs memplan`, plans
#     VGG-19 at 2GiB to the same peak_bytes as `memplan plan`;
#   - `make uninstall` removes every file again.
# The Makefile passes MAKE, CC, SAN (the sanitizer flags the library was built
# with, if any), MEMPLAN_CLI and MEMPLAN_SERVER. One line on success.
set -eu
cd "$(dirname "$0")/../.."

tmp=$(mktemp -d "${TMPDIR:-/tmp}/memplan-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
stage=$tmp/stage
CC=${CC:-cc}
SAN=${SAN:-}

fail() {
  echo "test-install: FAIL: $*" >&2
  exit 1
}

# Every directory is given, so that a BINDIR=... on the caller's command line
# (passed down in MAKEFLAGS) cannot move a file away from the expected list.
dirs="PREFIX=/usr BINDIR=/usr/bin LIBDIR=/usr/lib INCLUDEDIR=/usr/include MANDIR=/usr/share/man
      PKGCONFIGDIR=/usr/lib/pkgconfig DOCDIR=/usr/share/doc/memplan"
# shellcheck disable=SC2086
"$MAKE" --no-print-directory install DESTDIR="$stage" $dirs >"$tmp/make.log" 2>&1 ||
  { cat "$tmp/make.log" >&2; fail "make install failed"; }

# 1. the file list
(cd "$stage" && find . \( -type f -o -type l \) | sed 's|^\./||' | LC_ALL=C sort) >"$tmp/installed"
LC_ALL=C sort tests/install/expected_files >"$tmp/expected"
if ! diff -u "$tmp/expected" "$tmp/installed" >"$tmp/diff"; then
  cat "$tmp/diff" >&2
  fail "installed files differ from tests/install/expected_files (a public header is added to both it and PUBLIC_HDRS in the Makefile)"
fi

# 2. the headers: closed under #include "..." and each one self-contained
inc=$stage/usr/include/memplan
for private in plan_internal.h strmap.h threadpool.h solver.h; do
  [ ! -e "$inc/$private" ] || fail "private header $private is installed"
done
for h in "$inc"/*.h; do
  case $h in *_internal.h) fail "private header $(basename "$h") is installed" ;; esac
  # shellcheck disable=SC2013
  for dep in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$h"); do
    [ -e "$inc/$dep" ] || fail "public header $(basename "$h") includes \"$dep\", which is not installed"
  done
done
# memplan.pc with its prefix moved into the stage (pkg-config's --define-prefix
# would move jansson's and libcrypto's too); libdir and includedir must follow.
mkdir "$tmp/pc"
sed "s|^prefix=/usr\$|prefix=$stage/usr|" "$stage/usr/lib/pkgconfig/memplan.pc" >"$tmp/pc/memplan.pc"
export PKG_CONFIG_PATH="$tmp/pc"
pc() { pkg-config "$@" memplan; }
for v in libdir=lib includedir=include; do
  [ "$(pc --variable="${v%%=*}")" = "$stage/usr/${v#*=}" ] || fail "memplan.pc's ${v%%=*} does not follow its prefix"
done
[ "$(pc --modversion)" = "$("$MEMPLAN_CLI" version | sed 's/^memplan //')" ] || fail "memplan.pc's Version is not memplan's"
cflags=$(pc --cflags)
nh=0
for h in "$inc"/*.h; do
  # shellcheck disable=SC2086
  printf '#include <memplan/%s>\n' "$(basename "$h")" |
    $CC -std=c11 -Wall -Wextra -Werror -Wstrict-prototypes -fsyntax-only -x c - $cflags 2>"$tmp/cc.log" ||
    { cat "$tmp/cc.log" >&2; fail "$(basename "$h") does not compile on its own with pkg-config --cflags memplan"; }
  nh=$((nh + 1))
done

# 3. the programs and their man pages
"$stage/usr/bin/memplan" version >/dev/null || fail "the installed memplan does not run"
"$stage/usr/bin/memplan-server" --version >/dev/null || fail "the installed memplan-server does not run"
check_page() { # PAGE HELP-TEXT-FILE
  sed 's/\\-/-/g' "$1" >"$tmp/page" # roff's \- as plain hyphens
  # shellcheck disable=SC2013
  for word in $(grep -o -- '--[a-z][a-z0-9-]*\|MEMPLAN_[A-Z_]*' "$2" | sort -u); do
    grep -qE -- "(^|[^A-Za-z0-9_-])$word([^A-Za-z0-9_-]|\$)" "$tmp/page" ||
      fail "$(basename "$1") does not document $word (listed by --help)"
  done
  command -v groff >/dev/null 2>&1 || fail "groff is missing (Debian: groff-base; deploy/deps.sh installs it)"
  groff -man -Tutf8 -ww -z "$1" >"$tmp/groff.log" 2>&1 || true
  [ ! -s "$tmp/groff.log" ] || { cat "$tmp/groff.log" >&2; fail "groff warns about $(basename "$1")"; }
}
"$stage/usr/bin/memplan" --help >"$tmp/help1"
"$stage/usr/bin/memplan-server" --help >"$tmp/help8"
check_page "$stage/usr/share/man/man1/memplan.1" "$tmp/help1"
check_page "$stage/usr/share/man/man8/memplan-server.8" "$tmp/help8"

# 4. a program built against the installed library through pkg-config
flags=$(pc --cflags --libs)
# shellcheck disable=SC2086
$CC -std=c11 -Wall -Wextra -Werror $SAN -o "$tmp/plan_example" tests/install/plan_example.c $flags 2>"$tmp/cc.log" ||
  { cat "$tmp/cc.log" >&2; fail "plan_example.c does not build with pkg-config memplan"; }
out=$("$tmp/plan_example" tests/graphs/cg_vgg19.txt 2GiB) || fail "plan_example exited with $?: $out"
got=$(printf '%s\n' "$out" | sed -n 's/^peak_bytes //p')
want=$("$MEMPLAN_CLI" plan tests/graphs/cg_vgg19.txt --budget 2GiB --summary --compact |
  sed -n 's/.*"peak_bytes":\([0-9]*\).*/\1/p')
printf '%s\n' "$out" | grep -qx 'feasible true' || fail "plan_example: no feasible plan: $out"
[ -n "$want" ] || fail "memplan plan printed no peak_bytes"
[ "$got" = "$want" ] || fail "plan_example's peak_bytes '$got' is not memplan plan's '$want'"

# 5. uninstall
# shellcheck disable=SC2086
"$MAKE" --no-print-directory uninstall DESTDIR="$stage" $dirs >"$tmp/make.log" 2>&1 ||
  { cat "$tmp/make.log" >&2; fail "make uninstall failed"; }
left=$(cd "$stage" && find . \( -type f -o -type l \) | head -5)
[ -z "$left" ] || fail "make uninstall left files behind: $left"

echo "test-install: ok: $(wc -l <"$tmp/expected") files under DESTDIR (PREFIX=/usr), $nh headers self-contained," \
  "man pages cover --help, plan_example via pkg-config: vgg19 at 2GiB peak_bytes $got as memplan plan; uninstall clean"
