#!/bin/bash
# SPDX-License-Identifier: MIT
#
# IPv6 groups on the udp fabric, three hosts on a bridge (MLD snooping off,
# like IGMP snooping: the bridge floods). h1 and h2 name their interface as
# fabric.address (a dual-stack socket: IPv4 and IPv6 groups side by side);
# h3 gives its IPv6 address (an IPv6-only socket). Groups: a6 site-local
# (ff15::), l6 link-local (ff12::, served on the named interface), v4 an
# IPv4 group beside them (h1, h2), r6 an IPv6 repair group with every 10th
# of its packets dropped at h2, so NAKs and repairs go unicast over IPv6
# (sockaddr_in6). Every message published on h1 arrives at every subscriber,
# intact and once; pubctl groups shows the IPv6 addresses; a config with an
# IPv6 group on an IPv4 fabric.address is refused naming file:line:col.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
it_setup ipv6
command -v nft >/dev/null || it_die "needs nft (package nftables)"

it_hosts 81 h1 h2 h3
for i in 1 2 3; do
	ns=$(it_ns "h$i")
	# nodad: usable at once; the kernel's link-local address still runs
	# DAD, polled below rather than slept through.
	ip -n "$ns" -6 addr add "fd00:81::$i/64" dev eth0 nodad || it_die "IPv6 address on h$i"
done
no_tentative() {
	local h
	for h in h1 h2 h3; do
		[ -z "$(ip -n "$(it_ns "$h")" -6 addr show dev eth0 tentative)" ] || return 1
	done
}
it_wait "IPv6 addresses out of DAD" 20 no_tentative || it_die "IPv6 addresses stay tentative"
# The bridge's own MLD snooping: off, as it_hosts turned IGMP's off (one switch).
it_eq "bridge floods multicast (mcast_snooping 0)" \
	"$(ip -n "$(it_ns sw)" -d link show br0 | grep -o 'mcast_snooping [0-9]')" "mcast_snooping 0"

R6='{name: r6, address: "ff15::81:3", repair: {window: 64MiB, max_age_ms: 20000}}'
for h in h1 h2; do
	it_conf_write "$h" eth0 <<-EOF
		limits:
		  reassembly_budget: 256MiB
		  reassembly_inflight: 1024
		  subscriber_queue: 65536
		  subscriber_queue_bytes: 256MiB
		groups:
		  - {name: a6, address: "ff15::81:1"}
		  - {name: l6, address: "ff12::81:2"}
		  - {name: v4, address: 239.81.1.1}
		  - $R6
	EOF
done
it_conf_write h3 fd00:81::3 <<-EOF
	groups:
	  - {name: a6, address: "ff15::81:1"}
	  - {name: l6, address: "ff12::81:2"}
EOF
# Refused before it starts: IPv6 group on an IPv4 address, at its place.
it_conf_write bad "$IT_ADDR_h1" <<-EOF
	groups:
	  - {name: a6, address: "ff15::81:1"}
EOF
out=$("$PUBD" --check-config "$(it_conf bad)" 2>&1)
it_check "an IPv6 group on an IPv4 fabric.address is refused at file:line:col ($out)" \
	grep -q "bad.yaml:9:25: groups\[0\].address: the udp fabric cannot serve the IPv6 group ff15::81:1" <<<"$out"

for h in h1 h2 h3; do
	it_pubd_start "$h" "$(it_ns "$h")" || it_die "pubd $h did not start"
done
it_eq "h1's groups show their addresses" "$(it_q h1 groups '[.groups[] | .name + "=" + .address] | join(" ")')" \
	"a6=ff15::81:1 l6=ff12::81:2 v4=239.81.1.1 r6=ff15::81:3"
it_ctl h1 groups >/dev/null || it_fail "pubctl groups (text) on h1"
SRC=$(it_q h1 status '.status[0].source_id')

ns2=$(it_ns h2)
ip netns exec "$ns2" nft add table inet loss || it_die "nft table"
ip netns exec "$ns2" nft add chain inet loss in '{ type filter hook input priority 0; }' || it_die "nft chain"
# Every 10th, not 5% at random: a segmented send (UDP_SEGMENT) of up to 64
# datagrams reaches netfilter here as one packet, so r6's 1,000 datagrams
# are a few dozen packets, and 5% at random dropped none in one CI run.
ip netns exec "$ns2" nft add rule inet loss in ip6 daddr ff15::81:3 udp dport "${IT_PORT:-7470}" \
	numgen inc mod 10 '<' 1 counter drop || it_die "nft rule"

it_bg sub2 "$ns2" "$ITEST_CLIENT" sub -s "$(it_sock h2)" -g a6 -g l6 -g v4 -g r6 \
	--log "$IT_WORK/sub2.log" --timeout-ms $((IT_LIMIT * 1000))
it_bg sub3 "$(it_ns h3)" "$ITEST_CLIENT" sub -s "$(it_sock h3)" -g a6 -g l6 \
	--log "$IT_WORK/sub3.log" --timeout-ms $((IT_LIMIT * 1000))
for g in a6 l6 v4 r6; do
	it_wait "subscriber on h2 $g" 20 it_subscribers_at_least h2 "$g" 1 || it_die "no subscriber on h2"
done
for g in a6 l6; do
	it_wait "subscriber on h3 $g" 20 it_subscribers_at_least h3 "$g" 1 || it_die "no subscriber on h3"
done

# Per group: 300 x 1 KiB and 5 x 200 KiB (fragments), from two publishers.
TOTAL=305
pids=()
for g in a6 l6 v4 r6; do
	it_bg "pub-$g-s" "$(it_ns h1)" "$ITEST_CLIENT" pub -s "$(it_sock h1)" -g "$g" --count 300 --size 1024
	pids+=("$IT_BG_PID")
	it_bg "pub-$g-l" "$(it_ns h1)" "$ITEST_CLIENT" pub -s "$(it_sock h1)" -g "$g" --count 5 --size 204800 \
		--start 100000
	pids+=("$IT_BG_PID")
done
for p in "${pids[@]}"; do
	it_reap "$p" 120
	it_eq "publisher $p confirmed every message" "$IT_STATUS" 0
done

src_val() { # HOST GROUP FIELD
	it_q "$1" sources ".sources[] | select(.source == \"$SRC\" and .group == \"$2\") | .$3"
}
sub_got() { awk -v g="$2" '$1 == "msg" && $2 == g && $7 == "OK"' "$IT_WORK/$1.log" | wc -l; }
got_all() { [ "$(sub_got "$1" "$2")" = "$TOTAL" ]; }
for hg in sub2:a6 sub2:l6 sub2:v4 sub2:r6 sub3:a6 sub3:l6; do
	s=${hg%%:*} g=${hg#*:} h=h${hg:3:1}
	it_wait "$h's subscriber got all of $g" 60 got_all "$s" "$g" ||
		it_log "$h sources: $(it_ctl "$h" --json sources)"
	it_eq "$h $g: delivered" "$(src_val "$h" "$g" delivered)" "$TOTAL"
	it_eq "$h $g: dropped" "$(src_val "$h" "$g" dropped)" 0
	it_eq "$h $g: no message twice" \
		"$(awk -v g="$g" '$1 == "msg" && $2 == g {print $6}' "$IT_WORK/$s.log" | sort | uniq -d | wc -l)" 0
done
it_eq "h1 published $TOTAL on each group" "$(it_q h1 groups '[.groups[].published] | map(tostring) | join(" ")')" \
	"$TOTAL $TOTAL $TOTAL $TOTAL"
dropped=$(ip netns exec "$ns2" nft list chain inet loss in | grep -o 'counter packets [0-9]*' | awk '{print $3}')
it_log "r6 at 1 packet in 10 lost: nft dropped $dropped, naks_sent $(src_val h2 r6 naks_sent), repaired" \
	"$(src_val h2 r6 repaired), repairs sent by h1 $(it_group_val h1 r6 repairs_sent)"
it_check "r6: datagrams were dropped ($dropped)" [ "${dropped:-0}" -gt 0 ]
it_check "r6: h2 repaired over IPv6 unicast" [ "$(src_val h2 r6 repaired)" -gt 0 ]
it_check "r6: h1 answered NAKs" [ "$(it_group_val h1 r6 naks_received)" -gt 0 ]
it_eq "r6: nothing unrecovered" "$(src_val h2 r6 unrecovered)" 0

it_ctl h2 groups
it_finish
