#!/bin/bash
# SPDX-License-Identifier: MIT
#
# libpub's own smoke check (libpub/examples/pub_smoke.c) against one pubd:
# messages from 0 bytes to max_message_size intact and in order, refusals,
# a query, and messages written in place with pub_claim/pub_commit. Run by
# the tier once per transport (PUBD_TRANSPORT), like every test here.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
it_setup smoke

it_host_lo h1
it_conf_write h1 - <<-EOF2
	limits:
	  max_message_size: 4MiB
	  direct_log: 64MiB
	groups:
	  - name: smoke
	    address: 239.81.9.1
EOF2
ns=$(it_ns h1)
# 20 messages up to 4 MiB (42 MiB in all) are published before the first is
# read: within limits.subscriber_queue_bytes (64 MiB), and on the direct path
# within the direct log (64 MiB), so none is dropped.
it_pubd_start h1 "$ns" || it_die "pubd did not start"
if "$PUB_SMOKE" -s "$(it_sock h1)" -g smoke -n 20 >"$IT_WORK/smoke.log" 2>&1; then
	it_pass "pub_smoke: $(grep -c ': ok\|round trip ok' "$IT_WORK/smoke.log") checks ok (transport ${PUBD_TRANSPORT:-default})"
else
	it_fail "pub_smoke failed: $(grep FAIL "$IT_WORK/smoke.log" | head -3 | tr '\n' ' ')"
fi
# pub_smoke's one message to a group pubd does not have.
it_eq "dropped: only the unknown group's message" "$(it_q h1 status '.status[0].dropped')" "1"
it_finish
