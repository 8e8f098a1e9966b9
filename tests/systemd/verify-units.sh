#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The systemd files exactly as `cmake --install` puts them, staged under a
# temporary root (DESTDIR) and checked there with systemd's own tools:
#   systemd-analyze verify      pubd.service, pubd.socket (ExecStart= exists, syntax, deps)
#   systemd-analyze security    exposure score, at most PUBD_SD_EXPOSURE_MAX (default 1.5)
#   systemd-sysusers --root     creates the pubd user and group
#   systemd-tmpfiles --root     creates /run/pubd owned by pubd
#
#   tests/systemd/verify-units.sh BUILD_DIR
#
# The staged root gets a copy of this host's system units, so the units'
# dependencies (sysinit.target, rdma-hw.target, ...) resolve inside it.
# shellcheck disable=SC2001 # sed 's/^/  /' indents multi-line output
set -uo pipefail

build=${1:?usage: verify-units.sh BUILD_DIR}
max_exposure=${PUBD_SD_EXPOSURE_MAX:-1.5}
failed=0
pass() { echo "PASS $*"; }
fail() {
	echo "FAIL $*"
	failed=$((failed + 1))
}

for tool in systemd-analyze systemd-sysusers systemd-tmpfiles; do
	command -v $tool >/dev/null || {
		fail "setup: $tool not found (package systemd)"
		exit 1
	}
done
root=$(mktemp -d "${TMPDIR:-/tmp}/pubd-units-XXXXXX")
trap 'rm -rf "$root"' EXIT

if ! DESTDIR=$root cmake --install "$build" >"$root.install.log" 2>&1; then
	cat "$root.install.log"
	rm -f "$root.install.log"
	fail "setup: cmake --install $build into $root"
	exit 1
fi
rm -f "$root.install.log"
unitdir=$(cmake -L -N "$build" 2>/dev/null | sed -n 's/^PUBD_SYSTEMD_UNITDIR:PATH=//p')
[ -n "$unitdir" ] || unitdir=/lib/systemd/system
for f in pubd.service pubd.socket; do
	[ -f "$root$unitdir/$f" ] || fail "installed: no $unitdir/$f in the staged root"
done
[ $failed -eq 0 ] && pass "installed: pubd.service and pubd.socket in $unitdir"
grep -h '^ExecStart=' "$root$unitdir/pubd.service" | sed 's/^/  /'

# The host's units beside ours (a separate directory of the search path, so
# nothing of ours is shadowed), and the one outside binary ExecReload= runs.
sysdir=$root/usr/lib/systemd/system
[ "$unitdir" = /usr/lib/systemd/system ] && sysdir=$root/etc/systemd/system
mkdir -p "$sysdir" "$root/bin"
cp -a /usr/lib/systemd/system/. "$sysdir/" 2>/dev/null
rm -f "$sysdir/pubd.service" "$sysdir/pubd.socket"
[ -e "$root/bin/kill" ] || cp "$(type -P kill)" "$root/bin/kill"

if out=$(systemd-analyze verify --root="$root" "$unitdir/pubd.service" "$unitdir/pubd.socket" 2>&1) &&
	[ -z "$out" ]; then
	pass "systemd_analyze_verify"
else
	fail "systemd_analyze_verify:"
	echo "$out" | sed 's/^/  /'
fi

score_out=$(systemd-analyze security --offline=yes --root="$root" --threshold=100 "$unitdir/pubd.service" 2>&1)
score=$(echo "$score_out" | sed -n 's/.*Overall exposure level for pubd.service: \([0-9.]*\).*/\1/p')
echo "$score_out" | grep -E '^✗' | sed 's/^/  /'
if [ -z "$score" ]; then
	fail "exposure_score: systemd-analyze security printed no score"
	echo "$score_out" | tail -n 5 | sed 's/^/  /'
elif awk -v s="$score" -v m="$max_exposure" 'BEGIN { exit !(s <= m) }'; then
	pass "exposure_score: $score (at most $max_exposure)"
else
	fail "exposure_score: $score, above $max_exposure"
fi

# sysusers and tmpfiles chown what they create: as another user they cannot
# run at all, so say so rather than fail.
if [ "$(id -u)" != 0 ]; then
	echo "SKIP sysusers_creates_pubd_user_and_group, tmpfiles_creates_run_pubd: need root"
	[ $failed -eq 0 ]
	exit
fi
sysusersdir=$(cmake -L -N "$build" 2>/dev/null | sed -n 's/^PUBD_SYSUSERSDIR:PATH=//p')
tmpfilesdir=$(cmake -L -N "$build" 2>/dev/null | sed -n 's/^PUBD_TMPFILESDIR:PATH=//p')
mkdir -p "$root/etc"
touch "$root/etc/passwd" "$root/etc/group" "$root/etc/shadow" "$root/etc/gshadow"
if out=$(systemd-sysusers --root="$root" "$root$sysusersdir/pubd.conf" 2>&1) &&
	grep -q '^pubd:x:[0-9]*:[0-9]*:.*:.*/nologin$' "$root/etc/passwd" &&
	grep -q '^pubd:x:[0-9]*:' "$root/etc/group"; then
	pass "sysusers_creates_pubd_user_and_group: $(grep '^pubd:' "$root/etc/passwd")"
else
	fail "sysusers_creates_pubd_user_and_group:"
	echo "$out" | sed 's/^/  /'
	sed 's/^/  passwd: /' "$root/etc/passwd"
fi

uid=$(sed -n 's/^pubd:x:\([0-9]*\):.*/\1/p' "$root/etc/passwd")
want="755 $uid"
out=$(systemd-tmpfiles --root="$root" --create "$root$tmpfilesdir/pubd.conf" 2>&1)
st=$(stat -c '%a %u' "$root/run/pubd" 2>/dev/null)
if [ "$st" = "$want" ]; then
	pass "tmpfiles_creates_run_pubd: mode and owner '$st'"
else
	fail "tmpfiles_creates_run_pubd: mode and owner '${st:-missing}', expected '$want'"
	echo "$out" | sed 's/^/  /'
fi

[ $failed -eq 0 ]
