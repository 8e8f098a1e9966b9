# SPDX-License-Identifier: MIT
# Helpers sourced by tests/softroce/cases/*.sh (inside the guest).
# Each check prints one "PASS name" or "FAIL name: why" line.

pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; }

# check NAME CMD...: PASS when CMD succeeds.
check() {
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name: '$*' failed (status $?)"; fi
}

# wait_for_file FILE PATTERN SECONDS: until grep finds PATTERN in FILE.
# Polls a file a background process writes; a bounded wait, not a sleep for an event.
# Bounded by wall time, not by a count of polls: under TCG each poll
# (a fork of grep) is slow.
wait_for_file() {
	local f=$1 pat=$2 end=$((SECONDS + $3))
	while [ $SECONDS -lt $end ]; do
		grep -q -- "$pat" "$f" 2>/dev/null && return 0
		sleep 0.1
	done
	grep -q -- "$pat" "$f" 2>/dev/null
}
