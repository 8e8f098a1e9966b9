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

# An event loop's subscriber: poll(pub_fd), then pub_recv(0) until it has
# nothing. 300 messages at 1,000 a second must wake it about once each, and
# a wakeup must find what woke it. Over the socket, pub_recv(0) read the
# socket one call in 64 once it had found it empty: the loop spun on a
# readable socket (some 30,000 empty wakeups a second), and messages came
# late.
it_bg pollsub "$ns" "$ITEST_CLIENT" pollsub -s "$(it_sock h1)" -g smoke --count 300 --timeout-ms 30000 \
	--ready "$IT_WORK/pollsub.ready"
pollsub=$IT_BG_PID
it_wait "the event-loop subscriber" 20 test -e "$IT_WORK/pollsub.ready" || it_die "pollsub did not subscribe"
ip netns exec "$ns" "$ITEST_CLIENT" pub -s "$(it_sock h1)" -g smoke --count 300 --size 64 --rate 1000 ||
	it_fail "publish 300 at 1,000/s"
it_reap "$pollsub" 30
it_eq "the event-loop subscriber got all 300" "$IT_STATUS" 0
empty=$(sed -n 's/^pollsub: .*, \([0-9]*\) empty$/\1/p' "$IT_WORK/pollsub.out")
it_check "and its wakeups found messages ($(cat "$IT_WORK/pollsub.out"))" test "${empty:-999999}" -le 30

# pubctl takes the socket's data path (issue 12: the socket path stays for
# pubctl): a query maps no log at all, and pub and sub none either unless
# $PUBD_TRANSPORT asks for shared memory. Each query made pubd create a
# 1 MiB publish log and a 1 MiB deliver log (memfds) for nothing.
client_row() { # PID COLUMN
	it_q h1 clients ".clients[] | select(.pid == $1) | .$2"
}
it_eq "a query's own client has no publish log" \
	"$(it_q h1 clients '[.clients[] | select(.name == "pubctl") | .publish_log + .deliver_log] | add')" 0
it_bg pubctl-sub "$ns" "$PUBCTL" -s "$(it_sock h1)" sub smoke --count 1 --timeout 30
pubctl_sub=$IT_BG_PID
it_wait "pubctl sub subscribed" 20 it_subscribers_at_least h1 smoke 1 || it_die "pubctl sub"
want_logs=0
[ "${PUBD_TRANSPORT:-}" = shm ] && want_logs=1
logs=$(client_row "$pubctl_sub" 'publish_log + .deliver_log')
it_eq "pubctl sub maps logs only when PUBD_TRANSPORT=shm ($logs bytes)" "$([ "${logs:-0}" -gt 0 ] && echo 1 || echo 0)" "$want_logs"
ip netns exec "$ns" "$PUBCTL" -s "$(it_sock h1)" pub smoke hello >/dev/null || it_fail "pubctl pub"
it_reap "$pubctl_sub" 30
it_eq "pubctl sub got the message" "$IT_STATUS" 0
it_finish
