#!/bin/bash
# SPDX-License-Identifier: MIT
#
# pubd against its peers, side by side in one run on the same links: ZeroMQ
# over OpenPGM (epgm://) and NORM (norm://), Debian's libzmq5, and Aeron
# (C media driver + C client, built from source). Three hosts (network
# namespaces h1 h2 h3 on one bridge, as the integration tier builds them);
# pubd on its udp fabric, one daemon per host; one aeronmd per host.
#
#   tests/bench/peers/run.sh [--quick] [--only "tput lat loss"] [--peers "zmq-epgm zmq-norm aeron"]
#                            [--out FILE]
#
#   tput  h1 publishes to a subscriber on h2 (1->1) and on h2 and h3 (1->2):
#         64 B, 1 KiB, 64 KiB, 1 MiB; delivered msgs/s and bytes/s per
#         subscriber, every message checked (length, sequence, content).
#         Also the cost: CPU seconds per million messages of each process
#         (clients: their own getrusage, all threads; daemons: utime+stime
#         of /proc/PID/stat around the run) and peak RSS.
#   lat   64 B ping-pong h1 <-> h2, one-way (round trip / 2) p50 and p99.
#   loss  1% and 5% of every UDP datagram arriving at h2 dropped (nftables
#         numgen): 1 KiB messages h1 -> h2; delivered fraction, in order,
#         throughput; pubd with and without repair (groups.repair), PGM,
#         NORM, Aeron.
#
# Needs root, iproute2, nftables, jq, cmake, ninja, a C compiler; installs
# libzmq3-dev with apt-get when missing, and builds Aeron (git clone of
# github.com/aeron-io/aeron at $PEERS_AERON_TAG, default 1.52.2) under
# $PEERS_CACHE (default /var/tmp/pubd-peers) when it is not there yet. The
# pubd build is $BUILD (default <repo>/build-bench, Release).
# Environment: PEER_PGM_RATE_KBIT (ZMQ_RATE for PGM, default 1000000),
# PEERS_AERON_GIT (a URL or path to clone Aeron from, default GitHub's),
# PEERS_SKIP_AERON=1, PEERS_LINGER_US (the daemons' fabric.rx_linger_us, default
# 50), PEERS_RECV_LINGER_US (the pubd clients' $PUBD_RECV_LINGER_US, default
# 100; Aeron's clients back off before sleeping too), PEERS_SIZES and PEERS_NSUBS (the tput cases: default
# "64 1024 65536 1048576" and "1 2").
#
# A measurement, not a test: exits 0 when every case ran, whatever the
# figures. Each table shows pubd's figure, each peer's, and pubd's ratio to
# the best peer; one JSON line per row goes to FILE (default
# $BUILD/bench/peers-DATE.jsonl) and to stdout.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
BUILD=${BUILD:-$repo/build-bench}
CACHE=${PEERS_CACHE:-/var/tmp/pubd-peers}
AERON_TAG=${PEERS_AERON_TAG:-1.52.2}
# Where to clone Aeron from: a local mirror or clone of it on a machine without
# access to GitHub.
AERON_GIT=${PEERS_AERON_GIT:-https://github.com/aeron-io/aeron.git}
quick=0
only="tput lat loss"
peers="zmq-epgm zmq-norm aeron"
out=
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1 ;;
	--only) only=$2; shift ;;
	--peers) peers=$2; shift ;;
	--out) out=$2; shift ;;
	-h | --help) awk 'NR > 2 && !/^#/ { exit } NR > 2' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "peers: unknown argument $1 (try --help)" >&2; exit 2 ;;
	esac
	shift
done
mkdir -p "$BUILD/bench/peers"
[ -n "$out" ] || out=$BUILD/bench/peers-$(date +%Y%m%d-%H%M%S).jsonl
: >"$out" || exit 2
PB=$BUILD/bench/peers
: >"$PB/runs.jsonl"

. "$here/prepare.sh"
peers_prepare || exit 2

PUBD=$BUILD/daemon/pubd
PUBCTL=$BUILD/cli/pubctl
ITEST_CLIENT=$BUILD/tests/integration/itest_client
IT_LIMIT=${PEERS_LIMIT:-5400}
# shellcheck source=tests/integration/lib.sh
. "$repo/tests/integration/lib.sh"
. "$here/cases.sh"
it_setup peers
t_start=$(date +%s)
peers_hosts || exit 1

has() { [[ " $peers " == *" $1 "* ]]; }
systems=(pubd)
for p in zmq-epgm zmq-norm aeron; do
	if has "$p"; then
		if [ "$p" = aeron ] && [ -z "$AERONMD" ]; then
			continue
		fi
		systems+=("$p")
	fi
done
it_log "systems: ${systems[*]}; load $(cut -d' ' -f1-3 /proc/loadavg)"

if [[ " $only " == *" tput "* ]]; then
	for size in ${PEERS_SIZES:-64 1024 65536 1048576}; do
		for nsubs in ${PEERS_NSUBS:-1 2}; do
			for s in "${systems[@]}"; do
				tput_case "$s" "$size" "$nsubs" 0
			done
		done
	done
fi
if [[ " $only " == *" lat "* ]]; then
	for s in "${systems[@]}"; do
		lat_case "$s"
	done
fi
if [[ " $only " == *" loss "* ]]; then
	for loss in 1 5; do
		for s in pubd pubd-repair "${systems[@]:1}"; do
			tput_case "$s" 1024 1 "$loss"
		done
	done
fi

peers_tables "$out"
it_log "peers: done in $(($(date +%s) - t_start)) s; figures in $out"
it_finish
