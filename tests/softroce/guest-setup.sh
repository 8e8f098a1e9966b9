#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Inside the VM: two Soft-RoCE devices on the two ends of one veth pair, in
# the initial network namespace (rxe in 6.1 only receives there; softroce.md).
#   rxa on va 192.168.77.1/24, rxb on vb 192.168.77.2/24
set -eu

modprobe rdma_rxe
modprobe rdma_ucm
modprobe veth
ip link set lo up
ip link add va type veth peer name vb
ip addr add 192.168.77.1/24 dev va
ip addr add 192.168.77.2/24 dev vb
ip link set va up
ip link set vb up
# Both ends sit in one namespace: without these the receiver drops the
# sender's packets as coming from one of its own addresses.
for i in all default va vb; do
	sysctl -qw net.ipv4.conf.$i.accept_local=1 net.ipv4.conf.$i.rp_filter=0
done
rdma link add rxa type rxe netdev va
rdma link add rxb type rxe netdev vb

# Wait (bounded) for both ports to report ACTIVE rather than assuming it.
for i in $(seq 1 100); do
	a=$(cat /sys/class/infiniband/rxa/ports/1/state 2>/dev/null || true)
	b=$(cat /sys/class/infiniband/rxb/ports/1/state 2>/dev/null || true)
	case "$a$b" in *ACTIVE*ACTIVE*) break ;; esac
	sleep 0.1
done
rdma link show
ibv_devices
mtu_a=$(ibv_devinfo -d rxa | sed -n 's/.*active_mtu:[[:space:]]*\([0-9]*\).*/\1/p')
echo "fabric: Soft-RoCE (rdma_rxe) rxa=va/192.168.77.1 rxb=vb/192.168.77.2 state rxa:${a#*: } rxb:${b#*: } active_mtu ${mtu_a}"
case "$a$b" in *ACTIVE*ACTIVE*) ;; *) echo "ports not ACTIVE" >&2; exit 1 ;; esac
