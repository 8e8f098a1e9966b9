#!/bin/bash
# SPDX-License-Identifier: MIT
# Loss repair over real verbs (issue 13): A on rxa publishes, B on rxb
# subscribes, and an nftables rule drops a share of the RoCE v2 datagrams
# (UDP port 4791) that arrive on veth vb for one group's address (numgen
# random mod 100 < N). B finds the gaps and NAKs A by a UD send to A's QP
# (an address handle from the GRH of A's datagrams); A answers with unicast
# (or multicast) repairs. Per loss level (r1: 1%, r5: 5%) streams of mixed
# sizes (64 B to 1 MiB) published at once must all arrive at B's subscriber,
# byte-identical (itest_client checks each payload's pattern), once, and in
# order; repaired > 0, unrecovered 0, nothing dropped. The same 5% loss on a
# group without repair (n5) is counted as before: seq_gap and reasm_timeout,
# delivered + dropped = published. Each rule's counter shows the loss was real.
# Last, a window too small for the loss (rw) gives exact unrecovered counts.
. "$PUBD_REPO/tests/softroce/lib.sh"
. "$PUBD_REPO/tests/softroce/daemon-lib.sh"
dl_init

dl_need "$ITEST"
command -v nft >/dev/null || {
	fail "needs nft (package nftables)"
	exit 0
}
dl_conf_ab <<YAML
  # Room for a burst of 1 MiB messages: an empty SRQ drops, and that loss
  # would be repaired too, but this case is about the loss it makes itself.
  srq_depth: 16384
  srq_low_watermark: 4096
  heartbeat_ms: 50
limits:
  reassembly_inflight: 4096
  reassembly_budget: 256MiB
  subscriber_queue: 65536
  subscriber_queue_bytes: 256MiB
# Under TCG a loaded daemon can take longer than the default 8 retries x
# 100 ms to answer (emulation stalls of a second are seen): 20 retries.
groups:
  - {name: r1, address: 239.77.95.1, repair: {window: 64MiB, max_age_ms: 30000, nak_retries: 20}}
  - {name: r5, address: 239.77.95.5, repair: {window: 64MiB, max_age_ms: 30000, nak_retries: 20}}
  - {name: n5, address: 239.77.96.5}
  # A window of one 32 KiB message (64 KiB less than two with their overhead).
  - {name: rw, address: 239.77.95.9, repair: {window: 64KiB, max_age_ms: 30000}}
YAML
dl_start_ab

# The loss: on vb's way in, RoCE v2 to one group address at a time.
T=pubd_loss95
nft add table inet $T && nft add chain inet $T in '{ type filter hook input priority 0; }' || {
	fail "nft: cannot make the loss table (nf_tables in the guest kernel?)"
	exit 0
}
trap 'nft delete table inet $T 2>/dev/null; dl_teardown' EXIT
set_loss() { # ADDRESS PERCENT (100: every datagram; nft takes no "mod 100 < 100")
	local some=(numgen random mod 100 '<' "$2")
	[ "$2" = 100 ] && some=()
	nft flush chain inet $T in &&
		nft add rule inet $T in iifname vb udp dport 4791 ip daddr "$1" "${some[@]}" counter drop
}
nft_dropped() {
	local out
	out=$(nft list chain inet $T in)
	out=${out##*counter packets }
	echo "${out%% *}"
}

"$ITEST" sub -s "$W/B.sock" -g r1 -g r5 -g n5 -g rw --log "$W/sub.log" --timeout-ms 600000 \
	>"$W/sub.out" 2>&1 &
DL_BG+=("$!")
for g in r1 r5 n5 rw; do
	dl_wait 30 dl_subs B "$g" 1 || fail "subscriber of $g on B not there within 30s"
done

# One round: count and size per stream (index ranges apart: every message unique).
streams=("1000 64" "300 4096" "40 65536" "4 1048576")
TOTAL=1344
publish_round() { # GROUP
	local k=0 pids=() s n size
	for s in "${streams[@]}"; do
		read -r n size <<<"$s"
		"$ITEST" pub -s "$W/A.sock" -g "$1" --count "$n" --size "$size" --start $((k * 100000)) &
		pids+=("$!")
		k=$((k + 1))
	done
	for k in "${!pids[@]}"; do
		wait "${pids[$k]}" || fail "$1 stream ${streams[$k]}: publisher failed (status $?)"
	done
}
# src GROUP FIELD...: B's sources row for A on GROUP, one line per field.
src() {
	local g=$1 f exprs=()
	shift
	for f in "$@"; do
		exprs+=("sources.$f[group=$g,source=$SRC_A]")
	done
	dl_sq B sources "${exprs[@]}"
}
settled() { # GROUP: delivered + dropped == TOTAL
	local v
	mapfile -t v <<<"$(src "$1" delivered dropped)"
	[ -n "${v[0]}" ] && [ $((v[0] + v[1])) = "$TOTAL" ]
}
sub_got() { # GROUP: messages in the subscriber's log
	local n=0 tag g _
	while read -r tag g _; do
		[ "$tag" = msg ] && [ "$g" = "$1" ] && n=$((n + 1))
	done <"$W/sub.log"
	echo $n
}
sub_caught_up() { [ "$(sub_got "$1")" = "$(src "$1" delivered)" ]; }
# check_log GROUP: "BAD DUPLICATES OUT_OF_ORDER" in the subscriber's log for GROUP.
check_log() {
	local bad=0 dup=0 ooo=0 last=-1 tag g src seq len idx ok
	declare -A seen=()
	while read -r tag g src seq len idx ok; do
		[ "$tag" = msg ] && [ "$g" = "$1" ] || continue
		[ "$ok" = OK ] || bad=$((bad + 1))
		[ -n "${seen[$idx]}" ] && dup=$((dup + 1))
		seen[$idx]=1
		[ "$seq" -gt "$last" ] || ooo=$((ooo + 1))
		last=$seq
	done <"$W/sub.log"
	echo "$bad $dup $ooo"
}
reason() { # GROUP REASON: B's group-scope drops of that reason
	local v
	v=$(dl_sq B drops "+drops.count[scope=group,name=$1,reason=$2]")
	echo "${v:-0}"
}

for loss in 1 5; do
	g=r$loss
	set_loss "239.77.95.$loss" "$loss" || {
		fail "$g: nft rule"
		continue
	}
	t0=$SECONDS
	publish_round "$g"
	dl_wait 120 settled "$g" || fail "$g: B did not account for all $TOTAL messages within 120s ($(src "$g" delivered dropped | tr '\n' ' '))"
	dl_wait 30 sub_caught_up "$g" || fail "$g: the subscriber has $(sub_got "$g") messages, B delivered $(src "$g" delivered)"
	mapfile -t v <<<"$(src "$g" delivered dropped repaired unrecovered naks_sent)"
	dropped=$(nft_dropped)
	read -r bad dup ooo <<<"$(check_log "$g")"
	echo "$g at $loss% loss: nft dropped $dropped datagrams; published $TOTAL, delivered ${v[0]}, dropped ${v[1]}," \
		"repaired ${v[2]}, unrecovered ${v[3]}, naks_sent ${v[4]}, A repairs_sent" \
		"$(dl_sq A groups "groups.repairs_sent[name=$g]"), $((SECONDS - t0))s"
	if [ "${dropped:-0}" -gt 0 ]; then pass "$g: the loss was real (nft dropped $dropped)"; else fail "$g: nft dropped nothing"; fi
	dl_expect "$g: every message delivered" "${v[0]}" "$TOTAL"
	dl_expect "$g: nothing dropped, nothing unrecovered" "${v[1]} ${v[3]}" "0 0"
	if [ "${v[2]:-0}" -gt 0 ]; then pass "$g: repaired ${v[2]} > 0"; else fail "$g: repaired '${v[2]}'"; fi
	dl_expect "$g: the subscriber got them all" "$(sub_got "$g")" "$TOTAL"
	dl_expect "$g: byte-identical, once each, in order (bad, duplicates, out of order)" "$bad $dup $ooo" "0 0 0"
done

# Through verbs unicast: B's NAKs and A's repairs went as UD sends to the
# peer's QP, each daemon with an address handle for the other.
for d in A B; do
	mapfile -t v <<<"$(dl_sq $d status 'fabric.value[key=tx_unicast]' 'fabric.value[key=peer_ahs]' \
		'fabric.value[key=peer_ah_errors]' 'fabric.value[key=tx_bad_peer]')"
	echo "$d: tx_unicast ${v[0]}, peer_ahs ${v[1]}, peer_ah_errors ${v[2]}, tx_bad_peer ${v[3]}"
	if [ "${v[0]:-0}" -gt 0 ] && [ "${v[1]}" = 1 ] && [ "${v[2]} ${v[3]}" = "0 0" ]; then
		pass "$d sent unicast over verbs (tx_unicast ${v[0]}) through one peer AH, no error"
	else
		fail "$d: tx_unicast '${v[0]}', peer_ahs '${v[1]}', peer_ah_errors '${v[2]}', tx_bad_peer '${v[3]}'"
	fi
done

# No repair: the same 5% loss is counted as before.
set_loss 239.77.96.5 5 || fail "n5: nft rule"
publish_round n5
dl_wait 120 settled n5 || fail "n5: B did not account for all $TOTAL messages within 120s"
dl_wait 30 sub_caught_up n5 || fail "n5: the subscriber has $(sub_got n5), B delivered $(src n5 delivered)"
mapfile -t v <<<"$(src n5 delivered dropped naks_sent)"
sg=$(reason n5 seq_gap)
rt=$(reason n5 reasm_timeout)
read -r bad dup ooo <<<"$(check_log n5)"
echo "n5 at 5% loss without repair: nft dropped $(nft_dropped), delivered ${v[0]}, dropped ${v[1]} (seq_gap $sg, reasm_timeout $rt)"
if [ "${v[1]:-0}" -gt 0 ]; then pass "n5: losses counted (dropped ${v[1]})"; else fail "n5: dropped '${v[1]}'"; fi
dl_expect "n5: delivered + dropped = published" "$((v[0] + v[1]))" "$TOTAL"
dl_expect "n5: the drops are seq_gap and reasm_timeout" "$((sg + rt))" "${v[1]}"
dl_expect "n5: no NAK, nothing unrecovered" "${v[2]} $(reason n5 unrecovered)" "0 0"
dl_expect "n5: what arrived is intact and once (bad, duplicates)" "$bad $dup" "0 0"

# A window too small for the loss: exact unrecovered counts. Every datagram
# of rw is dropped while A publishes K+1 messages of 32 KiB; A's window
# keeps only the last. Then the loss ends: A's next heartbeat shows B the
# gap 0..K, B NAKs it, A repairs the last message and answers GONE for the
# K before it. Exactly K unrecovered, 1 repaired, 1 delivered (in order).
K=5
set_loss 239.77.95.9 100 || fail "rw: nft rule"
"$ITEST" pub -s "$W/A.sock" -g rw --count $((K + 1)) --size 32768 --start 500000 || fail "rw: publisher failed"
rw_lost=$(nft_dropped)
nft flush chain inet $T in
rw_settled() {
	local v
	mapfile -t v <<<"$(src rw delivered unrecovered)"
	[ "${v[0]} ${v[1]}" = "1 $K" ]
}
dl_wait 60 rw_settled || fail "rw: B's row for A did not reach delivered 1, unrecovered $K"
mapfile -t v <<<"$(src rw delivered dropped repaired unrecovered naks_sent)"
echo "rw (window of one message, all $((K + 1)) lost: nft dropped $rw_lost): delivered ${v[0]}, dropped ${v[1]}," \
	"repaired ${v[2]}, unrecovered ${v[3]}, naks_sent ${v[4]}, A gone_sent $(dl_sq A groups 'groups.gone_sent[name=rw]')"
dl_expect "rw: delivered, dropped, repaired, unrecovered" "${v[0]} ${v[1]} ${v[2]} ${v[3]}" "1 $K 1 $K"
dl_expect "rw: the drops are all unrecovered" "$(reason rw unrecovered)" "$K"
dl_wait 30 sub_caught_up rw || fail "rw: the subscriber has $(sub_got rw)"
dl_expect "rw: the subscriber got the one repaired message (count, bad, duplicates)" \
	"$(sub_got rw) $(check_log rw | cut -d' ' -f1-2)" "1 0 0"

dl_ctl B sources
dl_ctl A groups
dl_stop
