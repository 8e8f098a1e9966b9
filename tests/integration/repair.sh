#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Loss repair on the udp fabric: h1 publishes, h2 subscribes, and nftables
# drops 1%, 5% and 20% of the multicast datagrams arriving at h2 (the group
# port; NAKs and unicast repairs use the daemons' own send ports and are
# not dropped). Each loss level on its own repair group, streams of mixed
# sizes (64 B to 1 MiB, 10,000 messages a level) published at once: on h2 every message arrives,
# intact and once, repaired > 0 and unrecovered 0, published == delivered.
# The same loss on a group without repair is counted as today (seq_gap,
# reasm_timeout), published == delivered + dropped.
#
# In order: the subscriber sees each group's sequence numbers ascending.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
it_setup repair
command -v nft >/dev/null || it_die "needs nft (package nftables)"

it_hosts 79 h1 h2
for h in h1 h2; do
	addr_var="IT_ADDR_$h"
	it_conf_write "$h" "${!addr_var}" <<-EOF
		  heartbeat_ms: 50
		limits:
		  reassembly_timeout_ms: 300
		  # every stream's partial messages at once, so nothing is evicted
		  # (reasm_inflight) while the large ones wait for repair
		  reassembly_inflight: 4096
		  reassembly_budget: 512MiB
		  # messages held back behind a repair are released at once: the
		  # subscriber's queue takes the burst (else sub_overflow)
		  subscriber_queue: 65536
		  subscriber_queue_bytes: 256MiB
		  # three rounds of about 88 MiB each kept for max_age_ms
		  repair_budget: 1GiB
		groups:
		  # 20% of a round is about 18 MB of repairs: more than the default
		  # caps (rate 32MiB/s, peer_rate 16MiB/s) send within the default
		  # NAK retries (8 at 100 ms), so the caps are raised here
		  - {name: r1, address: 239.79.1.1, repair: {window: 256MiB, max_age_ms: 20000, rate: 256MiB, peer_rate: 256MiB}}
		  - {name: r5, address: 239.79.1.5, repair: {window: 256MiB, max_age_ms: 20000, rate: 256MiB, peer_rate: 256MiB}}
		  - {name: r20, address: 239.79.1.20, repair: {window: 256MiB, max_age_ms: 20000, rate: 256MiB, peer_rate: 256MiB}}
		  - {name: n5, address: 239.79.2.5}
	EOF
	it_pubd_start "$h" "$(it_ns "$h")" || it_die "pubd $h did not start"
done
SRC=$(it_q h1 status '.status[0].source_id')
ns2=$(it_ns h2)
ip netns exec "$ns2" nft add table inet loss || it_die "nft table"
ip netns exec "$ns2" nft add chain inet loss in '{ type filter hook input priority 0; }' || it_die "nft chain"
set_loss() { # PERCENT
	ip netns exec "$ns2" nft flush chain inet loss in
	ip netns exec "$ns2" nft add rule inet loss in udp dport "${IT_PORT:-7470}" ip daddr 239.79.0.0/16 \
		numgen random mod 100 '<' "$1" counter drop || it_die "nft rule"
}
nft_dropped() {
	ip netns exec "$ns2" nft list chain inet loss in | grep -o 'counter packets [0-9]*' | awk '{print $3}'
}

it_bg sub "$ns2" "$ITEST_CLIENT" sub -s "$(it_sock h2)" -g r1 -g r5 -g r20 -g n5 \
	--log "$IT_WORK/sub.log" --timeout-ms $((IT_LIMIT * 1000))
for g in r1 r5 r20 n5; do
	it_wait "subscriber on h2 $g" 20 it_subscribers_at_least h2 "$g" 1 || it_die "no subscriber"
done

# Streams of one round: count size (index ranges apart: every message unique),
# 10,000 messages of 64 B to 1 MiB, about 88 MiB; IT_REPAIR_SCALE=10 takes a
# tenth of each for a quick look.
scale=${IT_REPAIR_SCALE:-1}
streams=("$((8000 / scale)) 64" "$((1500 / scale)) 4096" "$((450 / scale)) 65536" "$((50 / scale)) 1048576")
TOTAL=0
for s in "${streams[@]}"; do TOTAL=$((TOTAL + ${s%% *})); done

publish_round() { # GROUP
	local k=0 pids=() s n size
	for s in "${streams[@]}"; do
		read -r n size <<<"$s"
		it_bg "pub-$1-$k" "$(it_ns h1)" "$ITEST_CLIENT" pub -s "$(it_sock h1)" -g "$1" --count "$n" \
			--size "$size" --start $((k * 100000))
		pids+=("$IT_BG_PID")
		k=$((k + 1))
	done
	for k in "${!pids[@]}"; do
		it_reap "${pids[$k]}" 120
		it_eq "$1 stream ${streams[$k]}: publisher confirmed every message" "$IT_STATUS" 0
	done
}
src_val() { # GROUP FIELD
	it_q h2 sources ".sources[] | select(.source == \"$SRC\" and .group == \"$1\") | .$2"
}
settled() { # GROUP WANT: delivered + dropped
	[ "$(it_q h2 sources ".sources[] | select(.source == \"$SRC\" and .group == \"$1\") | .delivered + .dropped")" = "$2" ]
}
sub_got() { awk -v g="$1" '$1 == "msg" && $2 == g' "$IT_WORK/sub.log" | wc -l; }
sub_caught_up() { [ "$(sub_got "$1")" = "$(src_val "$1" delivered)" ]; }
reason() { # GROUP REASON
	it_ctl h2 --json drops | jq "[.drops[] | select(.scope == \"group\" and .name == \"$1\" and .reason == \"$2\") | .count] | add // 0"
}
check_sub() { # GROUP: intact, once; prints out-of-order count
	local g=$1
	it_eq "$g: every message intact" "$(awk -v g="$g" '$1 == "msg" && $2 == g && $7 != "OK"' "$IT_WORK/sub.log" | wc -l)" 0
	it_eq "$g: no message twice" "$(awk -v g="$g" '$1 == "msg" && $2 == g {print $6}' "$IT_WORK/sub.log" | sort | uniq -d | wc -l)" 0
	awk -v g="$g" '$1 == "msg" && $2 == g { if ($4 + 0 < last) o++; last = $4 + 0 } END { print o + 0 }' "$IT_WORK/sub.log"
}

for loss in ${IT_REPAIR_LEVELS:-1 5 20}; do
	g="r$loss"
	set_loss "$loss"
	t0=$(date +%s%N)
	publish_round "$g"
	it_wait "h2 accounts for every message of $g" 60 settled "$g" "$TOTAL" ||
		it_log "h2 sources: $(it_ctl h2 --json sources)"
	it_wait "subscriber read all of $g" 30 sub_caught_up "$g" ||
		it_log "h2: $(it_ctl h2 --json sources) $(it_ctl h2 --json status)"
	ms=$((($(date +%s%N) - t0) / 1000000))
	ooo=$(check_sub "$g" | tail -n1)
	it_log "$g at $loss% loss: nft dropped $(nft_dropped), published $TOTAL, delivered $(src_val "$g" delivered)," \
		"naks_sent $(src_val "$g" naks_sent), repaired $(src_val "$g" repaired), unrecovered" \
		"$(src_val "$g" unrecovered), repairs sent by h1 $(it_group_val h1 "$g" repairs_sent)," \
		"out of order $ooo, $ms ms"
	it_eq "$g: every message delivered" "$(src_val "$g" delivered)" "$TOTAL"
	it_eq "$g: the subscriber got them all" "$(sub_got "$g")" "$TOTAL"
	it_eq "$g: nothing unrecovered" "$(src_val "$g" unrecovered)" 0
	it_eq "$g: nothing dropped" "$(src_val "$g" dropped)" 0
	it_check "$g: repaired > 0" [ "$(src_val "$g" repaired)" -gt 0 ]
	it_check "$g: h1 answered NAKs" [ "$(it_group_val h1 "$g" repairs_sent)" -gt 0 ]
	it_eq "$g: delivered in order" "$ooo" 0
	it_eq "$g: no subscriber-level drop" "$(it_group_val h2 "$g" sub_dropped)" 0
done

# No repair: the same loss is counted as before.
set_loss 5
publish_round n5
it_wait "h2 accounts for every message of n5" 60 settled n5 "$TOTAL"
it_wait "subscriber read all of n5" 30 sub_caught_up n5
check_sub n5 >/dev/null
d=$(src_val n5 dropped)
it_log "n5 at 5% loss without repair: delivered $(src_val n5 delivered), dropped $d" \
	"(seq_gap $(reason n5 seq_gap), reasm_timeout $(reason n5 reasm_timeout))"
it_check "n5: losses counted" [ "$d" -gt 0 ]
it_eq "n5: published == delivered + dropped" "$(($(src_val n5 delivered) + d))" "$TOTAL"
it_eq "n5: the drops are seq_gap and reasm_timeout" "$(($(reason n5 seq_gap) + $(reason n5 reasm_timeout)))" "$d"
it_eq "n5: nothing unrecovered (no repair)" "$(reason n5 unrecovered)" 0
it_eq "n5: no NAK sent" "$(src_val n5 naks_sent)" 0
it_eq "n5: the subscriber got what was delivered" "$(sub_got n5)" "$(src_val n5 delivered)"

it_ctl h2 groups
it_ctl h2 sources
it_finish
