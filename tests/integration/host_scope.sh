#!/bin/bash
# SPDX-License-Identifier: MIT
#
# groups.scope: host. A group that lives on one host, beside a fabric group,
# on two hosts (h1, h2) whose daemons both have both:
#  1. pubd starts ready with the host group (nothing to join: pubctl groups
#     says joined 1, join host, scope host, address host).
#  2. h1 publishes N to "here": h1's subscribers get all N intact, one on
#     shared memory (libpub's default; socket in the tier's second run) and
#     pubctl on its socket. h2's subscriber of its own "here" gets none, and
#     h1 sent not one datagram for them: status tx_datagrams is 0 (no fabric
#     group has sent yet, so not even a heartbeat).
#  3. The fabric group beside it still carries h1's messages to h2.
#     Then 50 of 64 KiB (lent from the publish log, not copied) to a third
#     subscriber there.
#  4. Accounting on h1's host group: published N + 50, delivered 2 N + 50,
#     nothing dropped.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
it_setup host_scope

N=500
SIZE=700
it_hosts 87 h1 h2
for h in h1 h2; do
	addr_var="IT_ADDR_$h"
	it_conf_write "$h" "${!addr_var}" <<-EOF
		groups:
		  - name: here
		    scope: host
		  - name: wire
		    address: 239.87.1.1
	EOF
	it_pubd_start "$h" "$(it_ns "$h")" || it_die "pubd $h did not start (a host group must not hold it back)"
done
ns1=$(it_ns h1)
ns2=$(it_ns h2)
sock1=$(it_sock h1)
sock2=$(it_sock h2)
"$ITEST_CLIENT" gen --count "$N" --size "$SIZE" >"$IT_WORK/expected.bin" || it_die "gen"

# ---- 1. what pubctl shows ----
it_eq "h1: here is a host group, up at once" \
	"$(it_q h1 groups '.groups[] | select(.name == "here") | "\(.scope) \(.join) \(.joined) \(.address)"')" \
	"host host 1 host"
it_eq "h1: wire is on the fabric" "$(it_group_val h1 wire scope)" fabric

# ---- 2. the host group stays on h1 ----
it_bg sub-h1 "$ns1" "$ITEST_CLIENT" sub -s "$sock1" -g here --count "$N" --timeout-ms 60000 \
	--log "$IT_WORK/sub-h1.log"
sub_pid=$IT_BG_PID
it_bg pubctl-h1 "$ns1" "$PUBCTL" -s "$sock1" sub here --count "$N" --timeout 60 --output "$IT_WORK/pubctl-h1.bin"
pubctl_pid=$IT_BG_PID
it_bg sub-h2 "$ns2" "$ITEST_CLIENT" sub -s "$sock2" -g here --timeout-ms 60000 --log "$IT_WORK/sub-h2.log"
it_wait "two subscribers of here on h1" 20 it_subscribers_at_least h1 here 2 || it_die "subscribers on h1"
it_wait "one subscriber of here on h2" 20 it_subscribers_at_least h2 here 1 || it_die "subscriber on h2"
ip netns exec "$ns1" "$ITEST_CLIENT" pub -s "$sock1" -g here --count "$N" --size "$SIZE" --rate 5000 ||
	it_fail "publish $N to here"
it_wait "h1's subscriber has $N" 60 it_lines_at_least "$IT_WORK/sub-h1.log" '^msg here ' "$N"
it_eq "h1's subscriber: all $N intact" "$(grep -c '^msg here .* OK$' "$IT_WORK/sub-h1.log")" "$N"
it_reap "$pubctl_pid" 60
it_eq "pubctl on h1's socket: every byte" "$(sha256sum <"$IT_WORK/pubctl-h1.bin" | cut -d' ' -f1)" \
	"$(sha256sum <"$IT_WORK/expected.bin" | cut -d' ' -f1)"
it_eq "h1 sent no datagram for its host group" "$(it_counter h1 tx_datagrams)" 0
it_eq "h2 received nothing" "$(it_counter h2 rx_datagrams) $(it_group_val h2 here received)" "0 0"
it_eq "h2's subscriber of here got nothing" "$(it_lines "$IT_WORK/sub-h2.log" '^msg ')" 0

# Large ones (64 KiB: lent from the publish log's record, not borrowed) too.
it_reap "$sub_pid" 30
it_wait "h1's first subscribers gone" 20 it_group_is h1 here subscribers 0
it_bg big-h1 "$ns1" "$ITEST_CLIENT" sub -s "$sock1" -g here --count 50 --timeout-ms 60000 --log "$IT_WORK/big-h1.log"
it_wait "a subscriber of here for the large ones" 20 it_subscribers_at_least h1 here 1 || it_die "big subscriber"
ip netns exec "$ns1" "$ITEST_CLIENT" pub -s "$sock1" -g here --count 50 --size 65536 --start "$N" ||
	it_fail "publish 50 x 64 KiB to here"
it_wait "h1's subscriber has the 50 large ones" 60 it_lines_at_least "$IT_WORK/big-h1.log" '^msg here ' 50
it_eq "the 50 large ones intact" "$(grep -c '^msg here .* 65536 .* OK$' "$IT_WORK/big-h1.log")" 50
it_eq "h1 sent no datagram for its host group" "$(it_counter h1 tx_datagrams)" 0

# ---- 3. the fabric group beside it ----
it_bg wire-h2 "$ns2" "$ITEST_CLIENT" sub -s "$sock2" -g wire --count "$N" --timeout-ms 60000 \
	--log "$IT_WORK/wire-h2.log"
it_wait "a subscriber of wire on h2" 20 it_subscribers_at_least h2 wire 1 || it_die "subscriber of wire"
ip netns exec "$ns1" "$ITEST_CLIENT" pub -s "$sock1" -g wire --count "$N" --size "$SIZE" --rate 5000 ||
	it_fail "publish $N to wire"
it_wait "h2's subscriber of wire has $N" 60 it_lines_at_least "$IT_WORK/wire-h2.log" '^msg wire ' "$N"
it_eq "wire: all $N intact on h2" "$(grep -c '^msg wire .* OK$' "$IT_WORK/wire-h2.log")" "$N"
it_check "h1 sent wire's datagrams ($(it_counter h1 tx_datagrams))" test "$(it_counter h1 tx_datagrams)" -gt 0

# ---- 4. accounting ----
it_eq "here on h1: published, delivered, dropped, sub_dropped" \
	"$(it_q h1 groups '.groups[] | select(.name == "here") | "\(.published) \(.delivered) \(.dropped) \(.sub_dropped)"')" \
	"$((N + 50)) $((2 * N + 50)) 0 0"
it_finish
