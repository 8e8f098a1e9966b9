#!/bin/bash
# SPDX-License-Identifier: MIT
# Interop with rdma-core's mckey on raw datagrams, both directions:
# the verbs fabric sends to an mckey receiver, and receives from an mckey sender.
. "$PUBD_REPO/tests/softroce/lib.sh"

probe=$BUILD/tests/softroce/fabric_probe
[ -x "$probe" ] || { fail "fabric_probe not built at $probe"; exit 0; }

# fabric (rxa) -> mckey (rxb)
rx=/tmp/mckey-rx.out
stdbuf -oL mckey -m 239.1.3.1 -b 192.168.77.2 -C 10 >"$rx" 2>&1 &
pid=$!
if wait_for_file "$rx" 'joined dgid' 30; then
	if timeout 60 "$probe" send 192.168.77.1 239.1.3.1 10 100; then
		pass "fabric sent 10 datagrams to 239.1.3.1"
	else
		fail "fabric send to 239.1.3.1"
	fi
	if timeout 30 tail --pid=$pid -f /dev/null && wait $pid && grep -q 'data transfers complete' "$rx"; then
		pass "mckey on rxb received the fabric's 10 datagrams"
	else
		fail "mckey on rxb did not receive 10 datagrams"
	fi
else
	fail "mckey receiver did not join"
fi
kill $pid 2>/dev/null
cat "$rx"

# mckey (rxa) -> fabric (rxb)
# fabric_probe line-buffers its own stdout (no stdbuf: its LD_PRELOAD
# breaks sanitizer builds).
out=/tmp/fabric-rx.out
"$probe" recv 192.168.77.2 239.1.3.2 10 60 >"$out" 2>&1 &
pid=$!
if wait_for_file "$out" '^joined' 30; then
	timeout 60 mckey -m 239.1.3.2 -s -b 192.168.77.1 -C 10 || fail "mckey sender exited $?"
	if wait $pid && grep -q 'received 10 datagrams' "$out" && [ "$(grep -c ': 100 bytes, slot 0' "$out")" = 10 ]; then
		pass "fabric on rxb received mckey's 10 datagrams of 100 bytes on slot 0"
	else
		fail "fabric did not receive mckey's 10 datagrams"
	fi
else
	fail "fabric receiver did not join"
	kill $pid 2>/dev/null
fi
cat "$out"
