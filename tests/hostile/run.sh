#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The hostile tier: a real pubd (udp fabric, in a network namespace of its
# own) attacked by hostile local clients and forged datagrams, one case per
# attack (tests/hostile/cases.sh says what each one checks).
#
#   tests/hostile/run.sh BUILD_DIR [CASE...]     (default: every case)
#
# BUILD_DIR holds pubd, pubctl and itest_client; the attack tools come from
# $HOSTILE_TOOLS, else BUILD_DIR/tests/hostile, else this checkout's
# build-asan or build (to attack a build of an older tree that lacks them). tests/run-all.sh runs it against the
# ASan+UBSan build. Needs root (network namespaces), iproute2 and jq.
#
# Each case prints the figures it measured ("figure [case] ...") and a
# PASS/FAIL line; the last line is "N passed, N failed"; the exit status is
# non-zero when a case failed.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -ge 1 ] || {
	echo "usage: $0 BUILD_DIR [CASE...]" >&2
	exit 2
}
BUILD=$(cd "$1" && pwd) || exit 2
shift
export BUILD
# The tools: from BUILD_DIR, else from this checkout's own builds (an older
# tree built without them can still be attacked).
if [ -z "${HOSTILE_TOOLS:-}" ]; then
	for HOSTILE_TOOLS in "$BUILD/tests/hostile" "$here/../../build-asan/tests/hostile" "$here/../../build/tests/hostile"; do
		[ -x "$HOSTILE_TOOLS/hostile_client" ] && [ -x "$HOSTILE_TOOLS/forge_dgram" ] && [ -x "$HOSTILE_TOOLS/hostile_shm" ] && break
	done
fi
export HOSTILE_TOOLS
cases=("$@")
# shellcheck source=tests/hostile/cases.sh
[ ${#cases[@]} -gt 0 ] || mapfile -t cases < <(sed -n 's/^case_\([a-z0-9_]*\)() {.*/\1/p' "$here/cases.sh" "$here/cases_repair.sh" "$here/cases_http.sh" "$here/cases_publog.sh" "$here/cases_operator.sh" "$here/cases_order.sh" "$here/cases_direct.sh" "$here/cases_sender.sh")

passed=0
failed=0
failed_names=()
for c in "${cases[@]}"; do
	start=$(date +%s)
	out=$(timeout --kill-after=10 150 "$here/case.sh" "$c" 2>&1)
	rc=$?
	grep '^figure ' <<<"$out"
	if [ $rc = 0 ]; then
		passed=$((passed + 1))
		echo "PASS $c ($(($(date +%s) - start)) s)"
	else
		failed=$((failed + 1))
		failed_names+=("$c")
		grep -E '^(FAIL|FAILED) ' <<<"$out" | head -20
		[ "${HOSTILE_VERBOSE:-0}" = 1 ] && printf '%s\n' "$out" | tail -60
		echo "FAIL $c (status $rc, $(($(date +%s) - start)) s)"
	fi
done
echo
[ $failed = 0 ] || echo "failed: ${failed_names[*]}"
echo "$passed passed, $failed failed"
[ $failed = 0 ]
