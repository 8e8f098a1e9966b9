#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The interface's MTU goes down and back up under a stream (udp fabric):
# h1 publishes 16,000-byte messages to h2 while h1's eth0 goes from 1500
# to 1280 and back. pubd must follow the interface (the kernel's link
# announcement, or the first EMSGSIZE): cut what it sends for 1252 bytes a
# datagram, then for 1472 again, with nothing dropped at either end. Before,
# every message sent while the MTU was low was dropped as mtu_exceeded,
# until pubd restarted (found by an outside audit).
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
it_setup mtu_change

N=${IT_MTU_COUNT:-6000}
SIZE=16000
it_hosts 89 h1 h2
for h in h1 h2; do
	addr_var="IT_ADDR_$h"
	it_conf_write "$h" "${!addr_var}" <<-EOF
		limits:
		  subscriber_queue: $((N + 1024))
		groups:
		  - name: m
		    address: 239.89.1.1
	EOF
	it_pubd_start "$h" "$(it_ns "$h")" || it_die "pubd $h did not start"
done
ns1=$(it_ns h1)
ns2=$(it_ns h2)
mtu_row() { it_q h1 status '.fabric[] | select(.key == "mtu") | .value'; }
published_at_least() { [ "$(it_group_val h1 m published)" -ge "$1" ]; }
it_eq "h1 cuts for the interface's 1500 bytes at start" "$(mtu_row)" 1472

it_bg sub "$ns2" "$ITEST_CLIENT" sub -s "$(it_sock h2)" -g m --count "$N" --timeout-ms 120000 \
	--log "$IT_WORK/sub.log"
sub=$IT_BG_PID
it_wait "h2 subscribed" 20 it_subscribers_at_least h2 m 1 || it_die "no subscriber"
it_wait "h2 receives m" 20 it_group_is h2 m receiving 1 || it_die "h2 not receiving"
it_bg pub "$ns1" "$ITEST_CLIENT" pub -s "$(it_sock h1)" -g m --count "$N" --size "$SIZE" --rate 1000
pub=$IT_BG_PID

it_wait "a third published" 60 published_at_least $((N / 3)) || it_die "h1 did not publish"
ip -n "$ns1" link set eth0 mtu 1280 || it_die "mtu 1280"
it_wait "h1 cuts for 1280 (1252 a datagram)" 10 it_holds '[ "$(mtu_row | cut -d" " -f1)" = 1252 ]'
it_wait "two thirds published" 60 published_at_least $((2 * N / 3)) || it_die "h1 stopped publishing"
ip -n "$ns1" link set eth0 mtu 1500 || it_die "mtu 1500"
it_wait "h1 cuts for 1500 again" 10 it_holds '[ "$(mtu_row | cut -d" " -f1)" = 1472 ]'
it_log "h1 fabric mtu: $(mtu_row)"

it_reap "$pub" 60
it_eq "the publisher had every message accepted" "$IT_STATUS" 0
it_reap "$sub" 60
it_eq "h2's subscriber got all $N, each whole" "$IT_STATUS" 0
it_eq "h1 published $N" "$(it_group_val h1 m published)" "$N"
it_eq "h1 dropped nothing (no mtu_exceeded, no fabric_error)" "$(it_q h1 drops '[.drops[].count] | add // 0')" 0
it_eq "h2 dropped nothing" "$(it_q h2 drops '[.drops[].count] | add // 0')" 0
it_check "h1 says the MTU changed twice" grep -q "changed with the interface 2 times" <<<"$(mtu_row)"
it_check "h1's log says so" grep -q "MTU changed from 1472 to 1252" "$IT_WORK/h1.log"

# The link goes down: every send fails (ENETUNREACH), each message is
# dropped and counted (fabric_error), and the log takes a few lines a
# period, not one a message (it took 3,819 in 7 s).
ip -n "$ns1" link set eth0 down || it_die "link down"
if ip netns exec "$ns1" "$ITEST_CLIENT" pub -s "$(it_sock h1)" -g m --count 500 --size 100 --start "$N"; then
	it_pass "500 more published while the link is down"
else
	it_fail "publish while the link is down"
fi
it_wait "the 500 counted as fabric_error" 20 \
	it_holds '[ "$(it_q h1 drops "[.drops[] | select(.reason == \"fabric_error\") | .count] | add // 0")" = 500 ]'
lines=$(grep -c "fabric refused message" "$IT_WORK/h1.log")
it_log "log lines for 500 refused messages: $lines"
it_check "at most 5 lines for them in a period ($lines)" [ "$lines" -le 5 ]
ip -n "$ns1" link set eth0 up || it_die "link up"
it_finish
