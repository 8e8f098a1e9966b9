#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Back-to-back publishes of every size class the client reader of pubd
# treats differently, on one connection each, to one local subscriber:
#   - bodies under 16 KiB, parsed out of the receive buffer;
#   - bodies from 16 KiB, read straight into their message buffer once their
#     header is in, with the next frame's start read into the receive buffer
#     in the same readv;
#   - bodies larger than the 256 KiB receive buffer;
#   - small messages gathered by libpub's PUB_MORE and written in 64 KiB runs.
# Every message must arrive once, in order, byte for byte (itest_client
# checks each payload's pattern), and pubd must count no drop. Off the
# direct path (PUBD_DIRECT=off): these are pubd's readers, and its
# subscriber queue takes the bursts (a direct log is only so deep).
export PUBD_DIRECT=off
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
it_setup big_stream

it_host_lo h1
it_conf_write h1 - <<-EOF
	limits:
	  max_message_size: 1MiB
	  subscriber_queue: 100000
	groups:
	  - name: bs
	    address: 239.81.2.1
EOF
ns=$(it_ns h1)
sock=$(it_sock h1)
it_pubd_start h1 "$ns" || it_die "pubd did not start"

# COUNT SIZE [--more]: one publisher run each, indices continuing.
runs=("300 16383" "300 16384" "300 40000" "200 100000" "40 300000" "3000 100 --more" "2000 3000 --more"
	"100 16384 --more")
total=0
for r in "${runs[@]}"; do
	read -r n _ <<<"$r"
	total=$((total + n))
done

it_bg client "$ns" "$ITEST_CLIENT" sub -s "$sock" -g bs --count "$total" --timeout-ms 120000 \
	--log "$IT_WORK/client.log"
client_pid=$IT_BG_PID
it_wait "subscribed" 20 it_subscribers_at_least h1 bs 1 || it_die "no subscriber"

start=0
for r in "${runs[@]}"; do
	read -r n size more <<<"$r"
	# shellcheck disable=SC2086 # $more is empty or one flag
	if ip netns exec "$ns" "$ITEST_CLIENT" pub -s "$sock" -g bs --count "$n" --size "$size" --start "$start" $more; then
		it_pass "published $n x $size B ${more:-(one write each)}"
	else
		it_fail "publish $n x $size B $more"
	fi
	start=$((start + n))
done
it_reap "$client_pid" 120
it_eq "the subscriber received all $total messages" "$IT_STATUS" 0
it_eq "in order, each once, every payload intact" \
	"$(awk -v want="$total" '$1 == "msg" { if ($6 != n || $7 != "OK") bad++; n++ }
		END { print (bad ? bad " out of order or damaged" : "ok") " " n "/" want }' "$IT_WORK/client.log")" \
	"ok $total/$total"
it_eq "pubd counted no drop" "$(it_q h1 drops '[.drops[].count] | add // 0')" 0
it_pubd_stop h1
it_finish
