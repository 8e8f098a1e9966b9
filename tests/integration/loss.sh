#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Loss on one host's link (nftables drops ~15% of the fabric datagrams
# arriving at h3; the host kernel has no netem). Streams from h1 and h2 (one
# datagram per message and several), plus a local stream on h3.
#
# Once the reassembly timeouts have passed, on the lossy host:
#  - every remote stream: published (at its origin) == delivered + dropped,
#    and the drops by reason add up to dropped;
#  - pubctl drops accounts exactly for what the subscriber there did not
#    receive, per group;
#  - the subscriber received exactly the messages pubd says it delivered,
#    each intact.
# On the lossless host h2 the same streams arrive complete.
#
# The real `pubctl groups` and `pubctl drops` output of h3 is printed to the
# test log and saved in $IT_ARTIFACTS/loss-pubctl.txt.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
it_setup loss
command -v nft >/dev/null || it_die "needs nft (package nftables)"

LOSS=${IT_LOSS_PERCENT:-15}
it_hosts 78 h1 h2 h3
# h3 receives every group from its start (receive: always), as a monitoring
# host would: the lc case below needs it to have listened for seconds before
# lc's stream begins. h1 and h2 receive on demand (the default).
for h in h1 h2 h3; do
	addr_var="IT_ADDR_$h"
	receive=on-demand
	[ "$h" = h3 ] && receive=always
	it_conf_write "$h" "${!addr_var}" <<-EOF
		  heartbeat_ms: 50
		  receive: $receive
		limits:
		  reassembly_timeout_ms: 300
		groups:
		  - name: la
		    address: 239.78.1.1
		  - name: lb
		    address: 239.78.1.2
		  - name: lc
		    address: 239.78.1.3
	EOF
	it_pubd_start "$h" "$(it_ns "$h")" || it_die "pubd $h did not start"
done

# Loss on h3's way in, fabric datagrams only (not IGMP).
ns3=$(it_ns h3)
ip netns exec "$ns3" nft add table inet loss || it_die "nft table"
ip netns exec "$ns3" nft add chain inet loss in '{ type filter hook input priority 0; }'
ip netns exec "$ns3" nft add rule inet loss in ip daddr != 239.78.1.3 udp dport "${IT_PORT:-7470}" \
	numgen random mod 100 '<' "$LOSS" counter drop || it_die "nft rule"
# lc: the worst start of a stream: its start heartbeat (the first 72-byte
# datagram: UDP header + pubd header with its token and age, no payload) and
# its first message (the first other datagram) are both lost. h3 has
# listened on lc for seconds by then, so it must still count message 0 as
# lost.
ip netns exec "$ns3" nft add rule inet loss in ip daddr 239.78.1.3 udp dport "${IT_PORT:-7470}" \
	udp length 72 numgen inc mod 1000000000 '<' 1 counter drop || it_die "nft rule"
ip netns exec "$ns3" nft add rule inet loss in ip daddr 239.78.1.3 udp dport "${IT_PORT:-7470}" \
	udp length != 72 numgen inc mod 1000000000 '<' 1 counter drop || it_die "nft rule"

src() { it_q "$1" status '.status[0].source_id'; }
# Read through indirection (SRC_$host).
# shellcheck disable=SC2034
{
	SRC_h1=$(src h1)
	SRC_h2=$(src h2)
	SRC_h3=$(src h3)
}
P=$(it_q h1 status '.status[0].payload_per_datagram')

# Streams: name origin group count size (sizes: 1, ~3 and ~5 datagrams).
streams=(
	"h1 la 400 1000"
	"h1 lb 150 $((P * 4 + 100))"
	"h2 lb 300 $((P * 2 + 50))"
	"h3 la 100 2000"
)

# Subscribers of both groups on h3 (lossy) and h2 (clean).
for h in h2 h3; do
	it_bg "sub-$h" "$(it_ns "$h")" "$ITEST_CLIENT" sub -s "$(it_sock "$h")" -g la -g lb \
		--log "$IT_WORK/sub-$h.log" --timeout-ms $((IT_LIMIT * 1000))
	printf -v "SUBPID_$h" '%s' "$IT_BG_PID"
	it_wait "subscriber on $h" 20 it_subscribers_at_least "$h" la 1 || it_die "no subscriber"
	it_wait "subscriber on $h" 20 it_subscribers_at_least "$h" lb 1 || it_die "no subscriber"
done

# Publish all streams at once; index ranges apart so every message is unique.
pids=()
k=0
for s in "${streams[@]}"; do
	read -r h g n size <<<"$s"
	it_bg "pub-$k" "$(it_ns "$h")" "$ITEST_CLIENT" pub -s "$(it_sock "$h")" -g "$g" --count "$n" --size "$size" \
		--start $((k * 100000))
	pids+=("$IT_BG_PID")
	k=$((k + 1))
done
for i in "${!pids[@]}"; do
	it_reap "${pids[$i]}" 120
	it_eq "stream ${streams[$i]}: publisher confirmed every message" "$IT_STATUS" 0 ||
		cat "$IT_WORK/pub-$i.out" >&2
done

# Per remote stream on a host: delivered + dropped from `pubctl sources`.
stream_total() { # HOST SRC GROUP
	it_q "$1" sources ".sources[] | select(.source == \"$2\" and .group == \"$3\") | .delivered + .dropped"
}
stream_settled() { # HOST SRC GROUP WANT
	[ "$(stream_total "$1" "$2" "$3")" = "$4" ]
}

# Settled: every remote stream accounted for (heartbeats reveal a lost
# tail; the reassembly timeout resolves gaps and partial messages).
for h in h2 h3; do
	for s in "${streams[@]}"; do
		read -r o g n size <<<"$s"
		[ "$o" = "$h" ] && continue
		sv="SRC_$o"
		it_wait "$h accounts for every message of $o/$g" 60 stream_settled "$h" "${!sv}" "$g" "$n" ||
			it_log "$h sources: $(it_ctl "$h" --json sources)"
	done
done
# The subscribers have read everything pubd delivered to them.
sub_got() { # HOST GROUP
	grep -c "^msg $2 " "$IT_WORK/sub-$1.log" 2>/dev/null || true
}
sub_caught_up() { # HOST GROUP
	local want
	want=$(it_q "$1" group "$2" '.subscribers[0].delivered + .subscribers[0].queued')
	[ "$(it_q "$1" group "$2" '.subscribers[0].queued')" = 0 ] && [ "$(sub_got "$1" "$2")" = "$want" ]
}
for h in h2 h3; do
	for g in la lb; do
		it_wait "subscriber on $h read all of $g" 30 sub_caught_up "$h" "$g"
	done
done

# The record of this run.
{
	echo "== nft on h3: $(ip netns exec "$ns3" nft list chain inet loss in | grep -o 'counter packets [0-9]* bytes [0-9]*' | head -n1)"
	echo "== h3 \$ pubctl groups"
	it_ctl h3 groups
	echo "== h3 \$ pubctl drops"
	it_ctl h3 drops
	echo "== h3 \$ pubctl sources"
	it_ctl h3 sources
} >"$IT_WORK/loss-pubctl.txt" 2>&1
cat "$IT_WORK/loss-pubctl.txt"
if [ -n "$IT_ARTIFACTS" ] && [ -d "$IT_ARTIFACTS" ]; then
	cp "$IT_WORK/loss-pubctl.txt" "$IT_ARTIFACTS/loss-pubctl.txt"
fi

nft_dropped=$(ip netns exec "$ns3" nft list chain inet loss in | grep -o 'counter packets [0-9]*' | head -n1 | awk '{print $3}')
[ "${nft_dropped:-0}" -gt 0 ] || it_fail "nftables dropped nothing: the test saw no loss"

# Per stream on h3: published == delivered + dropped, reasons add up, and the
# subscriber got exactly the delivered messages, intact.
total_drops_h3=0
declare -A pub_in_group=([la]=0 [lb]=0)
k=0
for s in "${streams[@]}"; do
	read -r o g n size <<<"$s"
	pub_in_group[$g]=$((pub_in_group[$g] + n))
	sv="SRC_$o"
	srcid=${!sv}
	lo=$((k * 100000))
	k=$((k + 1))
	got=$(awk -v g="$g" -v s="$srcid" '$1 == "msg" && $2 == g && $3 == s' "$IT_WORK/sub-h3.log" | wc -l)
	bad=$(awk -v g="$g" -v s="$srcid" '$1 == "msg" && $2 == g && $3 == s && $7 != "OK"' "$IT_WORK/sub-h3.log" | wc -l)
	dup=$(awk -v g="$g" -v s="$srcid" '$1 == "msg" && $2 == g && $3 == s {print $6}' "$IT_WORK/sub-h3.log" |
		sort | uniq -d | wc -l)
	it_eq "h3 $o/$g: messages intact" "$bad" 0
	it_eq "h3 $o/$g: no message twice" "$dup" 0
	if [ "$o" = h3 ]; then
		# Local: on the direct path, under its publisher's own source
		# id; its messages are told by their indices.
		got=$(awk -v g="$g" -v lo="$lo" -v n="$n" '$1 == "msg" && $2 == g && $6 >= lo && $6 < lo + n && $7 == "OK"' \
			"$IT_WORK/sub-h3.log" | sort -u -k6,6 | wc -l)
		it_eq "h3 local $g: every message (local fan-out has no wire)" "$got" "$n"
		continue
	fi
	row=$(it_ctl h3 --json sources | jq -c ".sources[] | select(.source == \"$srcid\" and .group == \"$g\")")
	delivered=$(jq -r .delivered <<<"$row")
	dropped=$(jq -r .dropped <<<"$row")
	by_reason=$(it_ctl h3 --json drops |
		jq "[.drops[] | select(.scope == \"source\" and .name == \"$srcid/$g\" and .unit == \"messages\") | .count] | add // 0")
	it_log "h3 $o/$g: published $n, delivered $delivered, dropped $dropped ($(it_ctl h3 --json drops |
		jq -r "[.drops[] | select(.scope == \"source\" and .name == \"$srcid/$g\") | \"\(.reason)=\(.count)\"] | join(\" \")")), subscriber got $got"
	it_eq "h3 $o/$g: published == delivered + dropped" "$((delivered + dropped))" "$n"
	it_eq "h3 $o/$g: drops by reason add up to dropped" "$by_reason" "$dropped"
	it_eq "h3 $o/$g: the subscriber got exactly what pubd delivered" "$got" "$delivered"
	missing=$(awk -v g="$g" -v s="$srcid" -v lo="$lo" -v n="$n" '
		$1 == "msg" && $2 == g && $3 == s { seen[$6] = 1 }
		END { m = 0; for (i = lo; i < lo + n; i++) if (!(i in seen)) m++; print m }' "$IT_WORK/sub-h3.log")
	it_eq "h3 $o/$g: the messages the subscriber lacks are the ones counted dropped" "$missing" "$dropped"
	total_drops_h3=$((total_drops_h3 + dropped))
done
[ "$total_drops_h3" -gt 0 ] || it_fail "h3 counted no dropped message although nftables dropped $nft_dropped datagrams"

# Per group on h3: what pubctl drops reports (group scope, messages, plus
# the subscriber scopes) is exactly what the subscriber did not receive.
for g in la lb; do
	got=$(sub_got h3 "$g")
	group_drops=$(it_ctl h3 --json drops |
		jq "[.drops[] | select((.scope == \"group\" or .scope == \"group-subscribers\") and .name == \"$g\" and .unit == \"messages\") | .count] | add // 0")
	it_eq "h3 $g: published everywhere ${pub_in_group[$g]} - received by the subscriber $got == pubctl drops" \
		"$((pub_in_group[$g] - got))" "$group_drops"
	it_eq "h3 $g: the groups table's dropped agrees" "$(it_group_val h3 "$g" dropped)" \
		"$(it_ctl h3 --json drops | jq "[.drops[] | select(.scope == \"group\" and .name == \"$g\" and .unit == \"messages\") | .count] | add // 0")"
done

# The first datagram of a stream lost (deterministically): the stream's
# first message must be counted too, not silently taken as "before it began".
it_bg sub-lc "$ns3" "$ITEST_CLIENT" sub -s "$(it_sock h3)" -g lc --log "$IT_WORK/sub-lc.log" --timeout-ms 60000
it_wait "lc subscriber on h3" 20 it_subscribers_at_least h3 lc 1
"$ITEST_CLIENT" pub -s "$(it_sock h2)" -g lc --count 10 --size 100 || it_fail "publish lc"
it_wait "h3 accounts for every message of h2/lc" 30 stream_settled h3 "$SRC_h2" lc 10
it_eq "h3 h2/lc: nftables dropped the start heartbeat and the first message" \
	"$(ip netns exec "$ns3" nft list chain inet loss in | grep -o 'counter packets [0-9]*' | tail -n2 | awk '{print $3}' | paste -sd+)" "1+1"
it_eq "h3 h2/lc: published 10 == delivered + dropped (first message lost)" "$(stream_total h3 "$SRC_h2" lc)" 10
# The first datagram carried the first message, or the first several when
# they left together in a batch (fabric.batch): those are counted, and the
# subscriber has the rest.
lc_dropped=$(it_q h3 sources ".sources[] | select(.source == \"$SRC_h2\" and .group == \"lc\") | .dropped")
it_check "h3 h2/lc: the lost first message is counted ($lc_dropped)" test "$lc_dropped" -ge 1
lc_has() { [ "$(grep -c '^msg lc ' "$IT_WORK/sub-lc.log")" = "$1" ]; }
it_wait "the lc subscriber has the other $((10 - lc_dropped))" 20 lc_has $((10 - lc_dropped))

# h2 had no loss: everything arrived there.
for g in la lb; do
	it_eq "h2 $g: the subscriber got every message" "$(sub_got h2 "$g")" "${pub_in_group[$g]}"
done
it_eq "h2: nothing dropped" "$(it_q h2 status '.status[0].dropped')" 0

it_finish
