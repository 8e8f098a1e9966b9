#!/bin/bash
# SPDX-License-Identifier: MIT
# The verbs fabric on its own (tests/softroce/fabric_probe.c): probe, joins,
# byte-identical datagrams rxa -> rxb through send credits, MTU refusal, slot
# reuse, shared joins, status rows, SRQ-limit flood, link flap, device removal.
. "$PUBD_REPO/tests/softroce/lib.sh"

probe=$BUILD/tests/softroce/fabric_probe
if [ ! -x "$probe" ]; then
	fail "fabric_probe not built at $probe"
	exit 0
fi
# The probe prints its own PASS/FAIL lines.
"$probe" selftest
rc=$?
# The device-removal check re-adds rxb; make sure it is there for later cases.
rdma link show rxb/1 >/dev/null 2>&1 || rdma link add rxb type rxe netdev vb
ip link set va up
exit $rc
