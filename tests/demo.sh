#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The main job, end to end: install the build dependencies, build, start two
# pubd daemons, and send messages from a libpub publisher on one to a libpub
# subscriber on the other, across the fabric. Uses the verbs fabric when this
# machine has an RDMA device with an IPv4 address, else says so and uses the
# udp fabric (IP multicast on loopback).
#
#   tests/demo.sh            (PUBD_SKIP_APT=1 to skip apt-get)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
if [ "${PUBD_SKIP_APT:-0}" != 1 ]; then
	echo "== installing build dependencies (apt-get)"
	$SUDO apt-get update -q
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
		build-essential cmake ninja-build pkg-config libyaml-dev libsystemd-dev libmicrohttpd-dev libibverbs-dev \
		librdmacm-dev libcmocka-dev ibverbs-providers rdma-core iproute2
fi
echo "== building in $repo/build"
cmake -S "$repo" -B "$repo/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C "$repo/build" -j "$(nproc)" pubd pubctl pub_example_publisher pub_example_subscriber

pubd=$repo/build/daemon/pubd
pubctl=$repo/build/cli/pubctl
work=$(mktemp -d /tmp/pubd-demo.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

# Pick the fabric: the first RDMA device whose port has an IPv4 address.
fabric=udp
address=
for dev in /sys/class/infiniband/*; do
	[ -e "$dev" ] || continue
	for nd in "$dev"/ports/1/gid_attrs/ndevs/*; do
		netdev=$(cat "$nd" 2>/dev/null || true)
		[ -n "$netdev" ] || continue
		address=$(ip -4 -o addr show dev "$netdev" 2>/dev/null | awk '{split($4, a, "/"); print a[1]; exit}')
		if [ -n "$address" ]; then
			fabric=verbs
			echo "== RDMA device $(basename "$dev") on $netdev ($address): using the verbs fabric"
			break 2
		fi
	done
done
if [ $fabric = udp ]; then
	echo "== no RDMA device with an IPv4 address on this machine (none under /sys/class/infiniband):"
	echo "   using the udp fabric (IP multicast on loopback; same wire format, no RDMA)"
fi

for name in a b; do
	cat >"$work/$name.yaml" <<YAML
daemon:
  socket: $work/$name.sock
fabric:
  type: $fabric
${address:+  address: $address}
  udp_port: 7479
groups:
  - name: demo
    address: 239.255.74.1
YAML
	"$pubd" -c "$work/$name.yaml" 2>"$work/$name.log" &
	pids+=($!)
done
# Ready when both answer and the group is joined.
for name in a b; do
	for _ in $(seq 100); do
		if "$pubctl" -s "$work/$name.sock" --json groups 2>/dev/null | grep -q '"joined": *1'; then
			continue 2
		fi
		kill -0 "${pids[0]}" 2>/dev/null && kill -0 "${pids[1]}" 2>/dev/null || break
		sleep 0.1
	done
	echo "pubd $name did not come up; its log:"
	cat "$work/$name.log"
	exit 1
done
echo "== two pubd daemons up ($work/a.sock, $work/b.sock); subscriber on b, publisher on a"

PUBD_SOCKET=$work/b.sock "$repo/build/libpub/pub_example_subscriber" demo >"$work/sub.out" &
pids+=($!)
# The subscriber is in once pubd b lists it on the group.
for _ in $(seq 100); do
	"$pubctl" -s "$work/b.sock" --json group demo 2>/dev/null | grep -q '"name": *"example-subscriber"' && break
	sleep 0.1
done
PUBD_SOCKET=$work/a.sock "$repo/build/libpub/pub_example_publisher" demo
for _ in $(seq 100); do
	[ "$(wc -l <"$work/sub.out")" -ge 10 ] && break
	sleep 0.1
done
echo "== the subscriber on b received:"
cat "$work/sub.out"
echo
echo "== pubctl -s b.sock groups"
"$pubctl" -s "$work/b.sock" groups
echo "== pubctl -s b.sock drops"
"$pubctl" -s "$work/b.sock" drops
n=$(wc -l <"$work/sub.out")
if [ "$n" -ne 10 ]; then
	echo "demo: FAILED: 10 messages published, $n received"
	exit 1
fi
echo "demo: OK: 10 messages published on a, 10 received on b over the $fabric fabric"
