#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Build pubd's Debian packages from the tracked tree and check them with
# lintian:
#
#   tests/packages/build.sh OUTDIR
#
# Copies the files git tracks (nothing from a build dir or an editor) to a
# scratch tree, runs `dpkg-buildpackage -us -uc -b` there (it writes the
# .debs to the tree's parent), runs lintian on the .changes and leaves the
# .debs, the .changes, the .buildinfo, build.log and lintian.txt in OUTDIR
# (emptied first). Exit status: 0 when the packages built and lintian
# reported no error; 1 otherwise; 2 on bad usage or missing tools.
set -euo pipefail

usage() {
	echo "usage: $0 OUTDIR" >&2
	exit 2
}
[ $# -eq 1 ] || usage
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
for tool in git dpkg-buildpackage dh lintian; do
	command -v $tool >/dev/null || {
		echo "packages: FATAL: $tool not found (packages: git dpkg-dev debhelper lintian)" >&2
		exit 2
	}
done
mkdir -p "$1"
out=$(cd "$1" && pwd)
case "$out" in "$repo" | "$repo"/*) echo "packages: FATAL: OUTDIR must be outside the tree" >&2 && exit 2 ;; esac
rm -f "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo "$out"/build.log "$out"/lintian.txt

# The scratch tree lives in OUTDIR's own scratch dir, so the parent that
# dpkg-buildpackage writes to holds this build's files only.
work=$(mktemp -d "${TMPDIR:-/var/tmp}/pubd-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/src"
git -C "$repo" ls-files -z | tar -C "$repo" --null -T - -cf - | tar -C "$work/src" -xf -

echo "packages: dpkg-buildpackage -us -uc -b in $work/src (log: $out/build.log)"
start=$(date +%s)
if ! (cd "$work/src" && dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1; then
	tail -n 40 "$out/build.log"
	echo "packages: FAIL: dpkg-buildpackage failed after $(($(date +%s) - start)) s (see $out/build.log)"
	exit 1
fi
echo "packages: built in $(($(date +%s) - start)) s"
# dpkg-gensymbols warns (without failing) when the library's symbols and
# debian/libpub1.symbols differ: that is a failure here.
if grep -q 'dpkg-gensymbols: warning' "$out/build.log"; then
	grep -A 20 'dpkg-gensymbols: warning' "$out/build.log"
	echo "packages: FAIL: debian/libpub1.symbols does not match libpub.so.1"
	exit 1
fi
cp "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out"/
ls -l "$out"/*.deb | sed 's/^/  /'

changes=$(ls "$out"/*.changes)
# initial-upload-closes-no-bugs asks for the ITP bug of an upload to Debian's
# archive; these packages are built from the upstream tree, not uploaded.
lintian --info --display-info --suppress-tags initial-upload-closes-no-bugs "$changes" >"$out/lintian.txt" 2>&1 || true
errors=$(grep -c '^E: ' "$out/lintian.txt" || true)
warnings=$(grep -c '^W: ' "$out/lintian.txt" || true)
echo "packages: lintian: $errors errors, $warnings warnings, $(grep -c '^[IP]: ' "$out/lintian.txt" || true) info/pedantic (see $out/lintian.txt)"
grep -E '^[EW]: ' "$out/lintian.txt" | sed 's/^/  /' || true
if [ "$errors" -ne 0 ]; then
	echo "packages: FAIL: lintian reported errors"
	exit 1
fi
echo "packages: PASS"
