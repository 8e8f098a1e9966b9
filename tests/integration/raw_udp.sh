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

# A host whose lo has another interface beside it with a global address:
# Linux sends lo's multicast from that address (127.0.0.1 has host scope),
# as on a machine's own root namespace. The daemon still knows its own
# datagrams (its send port, and any of the host's addresses): a raw publish
# is delivered to the local subscriber once, not again off the wire, and
# the filter cuts the looped copies to nothing.
# And a host with many addresses (as a container host has): 40 on an
# interface listed before that one, so the address Linux sends from comes
# 44th in pubd's list (it kept 32 before, and took the rest for a
# neighbour's: each raw message delivered twice).
it_host_lo h2
ns2=$(it_ns h2)
ip -n "$ns2" link add d0 type veth peer name d1 || it_die "veth d0 in $ns2"
for i in $(seq 1 40); do
	ip -n "$ns2" addr add "10.99.0.$i/32" dev d0 scope host || it_die "address $i on d0"
done
ip -n "$ns2" link set d0 up
ip -n "$ns2" link add v0 type veth peer name v1 || it_die "veth in $ns2"
ip -n "$ns2" addr add 192.0.2.99/24 dev v0
ip -n "$ns2" link set v0 up
ip -n "$ns2" link set v1 up
it_conf_write c - <<-EOF
	groups:
	  - name: r1
	    address: 239.81.3.1
	    raw: true
EOF
it_pubd_start c "$ns2" || it_die "pubd c did not start"
it_bg sub-c "$ns2" "$ITEST_CLIENT" sub -s "$(it_sock c)" -g r1 --count 5 --timeout-ms 60000 --log "$IT_WORK/sub-c.log"
sub_c=$IT_BG_PID
it_wait "subscriber on c" 20 it_subscribers_at_least c r1 1 || it_die "no subscriber on c"
ip netns exec "$ns2" "$ITEST_CLIENT" pub -s "$(it_sock c)" -g r1 --count 5 --size 100 --start 0 ||
	it_fail "publish 0..4 on c"
it_wait "c's own 5 looped back" 30 it_holds '[ "$(it_counter c rx_self)" -ge 5 ]' ||
	it_fail "c's rx_self: $(it_counter c rx_self)"
it_eq "c took none of its own 5 for a neighbour's (received)" "$(it_group_val c r1 received)" 0
it_eq "c delivered each of its 5 once" "$(it_group_val c r1 delivered)" 5
it_eq "c read none of their bytes (cut by the filter)" \
	"$(it_q c status '.fabric[] | select(.key == "rx_bytes") | .value')" 0

# The host's addresses change while pubd runs: Linux now sends lo's
# multicast from an address pubd did not see at start. It learns of it from
# the kernel (netlink) and knows the datagrams as its own again, filter
# included: the next five are delivered once and not read either (without
# the watch: each delivered twice, or received as a neighbour's).
self_addrs() { it_q c status '.fabric[] | select(.key == "self_addrs") | .value'; }
before=$(self_addrs)
it_check "c knows all of its 44 or more addresses: $before" test "${before%% *}" -ge 44
it_check "c keeps its addresses current: $before" grep -q "kept current; changed 0 times" <<<"$before"
ip -n "$ns2" addr del 192.0.2.99/24 dev v0 || it_die "addr del"
ip -n "$ns2" addr add 198.51.100.7/24 dev v0 || it_die "addr add"
it_wait "c saw the address change" 20 it_holds \
	'[[ "$(self_addrs)" == "${before%% *} "*"changed "[1-9]* ]]' ||
	it_fail "c's self_addrs: $(self_addrs) (was: $before)"
wait "$sub_c" || it_fail "c's first subscriber: $(tail -3 "$IT_WORK/sub-c.out")"
it_bg sub-c2 "$ns2" "$ITEST_CLIENT" sub -s "$(it_sock c)" -g r1 --count 5 --timeout-ms 60000 --log "$IT_WORK/sub-c2.log"
it_wait "second subscriber on c" 20 it_subscribers_at_least c r1 1 || it_die "no second subscriber on c"
ip netns exec "$ns2" "$ITEST_CLIENT" pub -s "$(it_sock c)" -g r1 --count 5 --size 100 --start 5 ||
	it_fail "publish 5..9 on c"
it_wait "c's next 5 looped back" 30 it_holds '[ "$(it_counter c rx_self)" -ge 10 ]' ||
	it_fail "c's rx_self: $(it_counter c rx_self)"
it_eq "c took none of its next 5 for a neighbour's (received)" "$(it_group_val c r1 received)" 0
it_eq "c delivered each of its next 5 once (to the second subscriber)" "$(it_group_val c r1 delivered)" 10
it_eq "c read none of their bytes either" \
	"$(it_q c status '.fabric[] | select(.key == "rx_bytes") | .value')" 0
it_pubd_stop c
it_finish
