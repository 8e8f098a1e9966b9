#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Raw groups (no pubd header, so no source id) on the udp fabric, two
# daemons on one host: every daemon receives on the one shared group port,
# and the kernel loops each multicast datagram back to all of them. A
# daemon must tell its own looped-back datagrams from its neighbour's (by
# its send socket's port): its local subscriber gets each local raw publish
# once (not again off the wire), and the neighbour's are delivered.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
it_setup raw_udp

it_host_lo h1
ns=$(it_ns h1)
for d in a b; do
	it_conf_write "$d" - <<-EOF
		groups:
		  - name: r1
		    address: 239.81.3.1
		    raw: true
	EOF
	it_pubd_start "$d" "$ns" || it_die "pubd $d did not start"
done

for d in a b; do
	it_bg "sub-$d" "$ns" "$ITEST_CLIENT" sub -s "$(it_sock "$d")" -g r1 --count 10 --timeout-ms 60000 \
		--log "$IT_WORK/sub-$d.log"
	it_wait "subscriber on $d" 20 it_subscribers_at_least "$d" r1 1 || it_die "no subscriber on $d"
done
ip netns exec "$ns" "$ITEST_CLIENT" pub -s "$(it_sock a)" -g r1 --count 5 --size 100 --start 0 ||
	it_fail "publish 0..4 on a"
ip netns exec "$ns" "$ITEST_CLIENT" pub -s "$(it_sock b)" -g r1 --count 5 --size 100 --start 5 ||
	it_fail "publish 5..9 on b"
for d in a b; do
	it_wait "$d's subscriber has 10 messages" 30 it_lines_at_least "$IT_WORK/sub-$d.log" '^msg r1 ' 10 ||
		it_fail "$d's subscriber: $(it_lines "$IT_WORK/sub-$d.log" '^msg r1 ') messages"
done
# Both daemons have seen their own 5 back by now (they did the neighbour's 5).
for d in a b; do
	it_eq "$d delivered 5 local + 5 from the neighbour, each once" "$(it_group_val "$d" r1 delivered)" 10
	it_eq "$d received 5 from the fabric (the neighbour's)" "$(it_group_val "$d" r1 received)" 5
	it_check "$d counted its own 5 looped back as rx_self" \
		test "$(it_counter "$d" rx_self)" -ge 5
	# They came cut to nothing by the socket filter: the fabric read
	# the neighbour's 5 x 100 bytes and none of its own.
	it_eq "$d's socket filter is on" \
		"$(it_q "$d" status '.fabric[] | select(.key == "self_filter") | .value' | cut -d' ' -f1)" on
	it_eq "$d read 500 bytes from the fabric, none of them its own" \
		"$(it_q "$d" status '.fabric[] | select(.key == "rx_bytes") | .value')" 500
	it_eq "$d's subscriber got indices 0..9 once each, intact" \
		"$(awk '$1 == "msg" && $7 == "OK" { print $6 }' "$IT_WORK/sub-$d.log" | sort -n | uniq | tr '\n' ' ')" \
		"0 1 2 3 4 5 6 7 8 9 "
done
it_pubd_stop a
it_pubd_stop b
it_finish
