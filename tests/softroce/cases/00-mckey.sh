#!/bin/bash
# SPDX-License-Identifier: MIT
# Harness smoke: the devices are there, and rdma-core's own mckey multicasts
# from rxa (192.168.77.1) to a receiver on rxb (192.168.77.2).
. "$PUBD_REPO/tests/softroce/lib.sh"

ibv_devinfo -d rxa
ibv_devinfo -d rxb
for d in rxa rxb; do
	if ibv_devinfo -d $d | grep -q 'state:.*PORT_ACTIVE'; then
		pass "ibv_devinfo $d port active"
	else
		fail "ibv_devinfo $d: port not active"
	fi
done

# The receiver prints "joined dgid" once attached; start the sender only then.
rx=/tmp/mckey-rx.out
stdbuf -oL mckey -m 239.1.1.1 -b 192.168.77.2 -C 10 >"$rx" 2>&1 &
rxpid=$!
if ! wait_for_file "$rx" 'joined dgid' 30; then
	fail "mckey receiver did not join"
	cat "$rx"
	kill $rxpid 2>/dev/null
	exit 0
fi
tx=/tmp/mckey-tx.out
if timeout 60 stdbuf -oL mckey -m 239.1.1.1 -s -b 192.168.77.1 -C 10 >"$tx" 2>&1; then
	pass "mckey sender rxa -> 239.1.1.1"
else
	fail "mckey sender failed"
fi
cat "$tx"
# The receiver exits by itself after 10 datagrams.
if timeout 30 tail --pid=$rxpid -f /dev/null; then
	wait $rxpid
	rc=$?
	if [ $rc -eq 0 ] && grep -q 'data transfers complete' "$rx"; then
		pass "mckey receiver on rxb got 10 datagrams"
	else
		fail "mckey receiver exited $rc"
	fi
else
	kill $rxpid 2>/dev/null
	fail "mckey receiver on rxb did not get 10 datagrams within 30s"
fi
cat "$rx"
