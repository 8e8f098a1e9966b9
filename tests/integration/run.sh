#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The host integration tier, every test in turn:
#   tests/integration/run.sh BUILD_DIR [TEST...]
# TEST is a script name without .sh (default: all). The same tests run under
# ctest: ctest --test-dir BUILD_DIR -L integration.
#
# Needs root (network namespaces), iproute2, nftables and jq. For the
# sanitizer build, point BUILD_DIR at a -DPUBD_SANITIZE=ON build: lib.sh sets
# ASAN_OPTIONS/UBSAN_OPTIONS so that any report fails the test.
#
# Exit status: 0 when every test passed, 1 otherwise.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -ge 1 ] || {
	echo "usage: $0 BUILD_DIR [TEST...]" >&2
	exit 2
}
BUILD=$(cd "$1" && pwd) || exit 2
shift
export BUILD
export IT_ARTIFACTS=${IT_ARTIFACTS:-$BUILD/tests/integration}
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(fabric_udp_check three_hosts loss slow_sub garbage_acl restart reload big_stream raw_udp)

passed=()
failed=()
for t in "${tests[@]}"; do
	echo "==== $t"
	start=$(date +%s)
	if [ "$t" = fabric_udp_check ]; then
		"$BUILD/tests/integration/fabric_udp_check"
	else
		timeout --kill-after=30 420 "$here/$t.sh"
	fi
	rc=$?
	if [ $rc = 0 ]; then
		passed+=("$t")
		echo "==== $t: passed in $(($(date +%s) - start)) s"
	else
		failed+=("$t")
		echo "==== $t: FAILED (status $rc) in $(($(date +%s) - start)) s"
	fi
done
echo
echo "passed: ${passed[*]:-none}"
echo "failed: ${failed[*]:-none}"
[ ${#failed[@]} = 0 ]
