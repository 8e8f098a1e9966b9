#!/bin/bash
# SPDX-License-Identifier: MIT
#
# One case of the hostile tier in a process of its own (the integration
# library's EXIT trap tears down its namespace and daemons):
#   BUILD=... HOSTILE_TOOLS=... tests/hostile/case.sh CASE
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# ASan's quarantine would keep freed memory resident and hide whether a
# burst's memory is given back; a small one still catches use after free.
export ASAN_OPTIONS="quarantine_size_mb=4:${ASAN_OPTIONS:-}"
IT_LIMIT=${IT_LIMIT:-140}
# shellcheck source=tests/integration/lib.sh
. "$here/../integration/lib.sh"
# shellcheck source=tests/hostile/cases.sh
. "$here/cases.sh"
# shellcheck source=tests/hostile/cases_repair.sh
. "$here/cases_repair.sh"
# shellcheck source=tests/hostile/cases_http.sh
. "$here/cases_http.sh"
# shellcheck source=tests/hostile/cases_publog.sh
. "$here/cases_publog.sh"
# shellcheck source=tests/hostile/cases_operator.sh
. "$here/cases_operator.sh"
# shellcheck source=tests/hostile/cases_order.sh
. "$here/cases_order.sh"
# shellcheck source=tests/hostile/cases_direct.sh
. "$here/cases_direct.sh"
# shellcheck source=tests/hostile/cases_sender.sh
. "$here/cases_sender.sh"
HC=$HOSTILE_TOOLS/hostile_client
FORGE=$HOSTILE_TOOLS/forge_dgram
HSHM=$HOSTILE_TOOLS/hostile_shm
if [ ! -x "$HC" ] || [ ! -x "$FORGE" ] || [ ! -x "$HSHM" ]; then
	echo "FAIL [$1] tools not found in $HOSTILE_TOOLS" >&2
	exit 1
fi
declare -F "case_$1" >/dev/null || {
	echo "FAIL [$1] no such case" >&2
	exit 1
}
it_setup "h-$1"
"case_$1"
it_finish
