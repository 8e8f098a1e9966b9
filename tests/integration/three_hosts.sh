#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Three hosts (network namespaces on a bridge), one pubd each on the udp
# fabric. Messages of 0 B, 1 B, P-1, P, P+1 (P: the payload one datagram
# carries, as pubctl status reports it), 1 MiB and 16 MiB arrive
# byte-identical at subscribers on every host, on four groups at once (two of
# them sharing one multicast address), published from three hosts, with
# subscribers on the publishing host too. (The 16 MiB messages go one group
# at a time; see below.)
#
# Subscribers: `pubctl sub --count 7 --output F` for every group on every
# host (sha256 of the concatenated payloads), and on h3 one libpub client on
# all four groups that saves each message on its own (sha256 per message,
# matched by group and its place among the group's messages).
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
it_setup three_hosts

it_hosts 77 h1 h2 h3
groups=(g1 g2 g3 g4)
declare -A origin=([g1]=h1 [g2]=h2 [g3]=h3 [g4]=h1)
for h in h1 h2 h3; do
	addr_var="IT_ADDR_$h"
	# A long reassembly timeout: a 16 MiB message from a sanitizer build
	# on two shared cores takes a while, and this test is not about loss.
	it_conf_write "$h" "${!addr_var}" <<-EOF
		limits:
		  max_message_size: 16MiB
		  reassembly_timeout_ms: 20000
		  reassembly_budget: 256MiB
		groups:
		  - name: g1
		    address: 239.77.1.1
		  - name: g2
		    address: 239.77.1.2
		  - name: g3
		    address: 239.77.1.3
		  - name: g4
		    address: 239.77.1.3
		  - name: gb
		    address: 239.77.1.9
	EOF
	it_pubd_start "$h" "$(it_ns "$h")" || it_die "pubd $h did not start"
done

P=$(it_q h1 status '.status[0].payload_per_datagram')
MTU=$(it_q h1 status '.status[0].mtu')
for h in h2 h3; do
	it_eq "$h has the same payload per datagram" "$(it_q "$h" status '.status[0].payload_per_datagram')" "$P"
done
it_log "fabric MTU $MTU, payload per datagram P=$P"
if [ -z "$P" ] || [ "$P" -le 100 ]; then
	it_die "no payload_per_datagram in pubctl status"
fi

# The boundary: P bytes go in one datagram, P+1 in two (gb, no subscribers).
head -c "$P" /dev/urandom >"$IT_WORK/P.bin"
head -c $((P + 1)) /dev/urandom >"$IT_WORK/P1.bin"
for f in P:1 P1:2; do
	before=$(it_counter h1 tx_datagrams)
	it_ctl h1 pub gb --file "$IT_WORK/${f%%:*}.bin" >/dev/null || it_fail "pub gb ${f%%:*}"
	it_wait "h1 sent the ${f%%:*} message" 20 it_group_is h1 gb tx_queued 0
	after=$(it_counter h1 tx_datagrams)
	it_eq "a message of $([ "${f%%:*}" = P ] && echo P || echo P+1) bytes takes ${f#*:} datagram(s)" \
		$((after - before)) "${f#*:}"
done

# Inputs: seven messages per group, random bytes.
sizes=(0 1 $((P - 1)) "$P" $((P + 1)) 1048576 16777216)
mkdir -p "$IT_WORK/in" "$IT_WORK/out" "$IT_WORK/h3-msgs"
for g in "${groups[@]}"; do
	: >"$IT_WORK/in/$g.all"
	for i in "${!sizes[@]}"; do
		head -c "${sizes[$i]}" /dev/urandom >"$IT_WORK/in/$g-$i.bin"
		cat "$IT_WORK/in/$g-$i.bin" >>"$IT_WORK/in/$g.all"
	done
done

# Subscribers first; publishing starts once every daemon counts them.
n=${#sizes[@]}
for h in h1 h2 h3; do
	for g in "${groups[@]}"; do
		it_bg "sub-$h-$g" "$(it_ns "$h")" "$PUBCTL" -s "$(it_sock "$h")" sub "$g" --count "$n" \
			--timeout 180 --output "$IT_WORK/out/$h-$g.bin"
		printf -v "SUB_${h}_$g" '%s' "$IT_BG_PID"
	done
done
it_bg "client-h3" "$(it_ns h3)" "$ITEST_CLIENT" sub -s "$(it_sock h3)" -g g1 -g g2 -g g3 -g g4 \
	--count $((n * 4)) --timeout-ms 180000 --log "$IT_WORK/h3-client.log" --dir "$IT_WORK/h3-msgs"
client_pid=$IT_BG_PID
for h in h1 h2 h3; do
	want=1
	[ "$h" = h3 ] && want=2
	for g in "${groups[@]}"; do
		it_wait "$want subscriber(s) of $g on $h" 30 it_subscribers_at_least "$h" "$g" "$want" ||
			it_die "subscribers did not come up"
	done
done

# Publish: one publisher per group, all at once, in order within a group,
# up to 1 MiB. Then the 16 MiB messages one group at a time, each once the
# previous one reached every subscriber: the fabric sizes its socket buffer
# for one 16 MiB burst (there is no flow control on a multicast fabric, and a
# sanitizer build does not drain three at once in time).
publish_group() { # GROUP FIRST LAST
	local g=$1 h=${origin[$1]} i
	for ((i = $2; i <= $3; i++)); do
		ip netns exec "$(it_ns "$h")" "$PUBCTL" -s "$(it_sock "$h")" pub "$g" --file "$IT_WORK/in/$g-$i.bin" ||
			return 1
	done
}
last=$((n - 1))
pub_pids=()
for g in "${groups[@]}"; do
	publish_group "$g" 0 $((last - 1)) >"$IT_WORK/pub-$g.out" 2>&1 &
	pub_pids+=($!)
	IT_PIDS+=($!)
done
for i in "${!groups[@]}"; do
	it_reap "${pub_pids[$i]}" 180
	it_eq "publisher of ${groups[$i]} (on ${origin[${groups[$i]}]}) confirmed messages 0..$((last - 1))" \
		"$IT_STATUS" 0 || cat "$IT_WORK/pub-${groups[$i]}.out" >&2
done
delivered_is() { # HOST GROUP WANT
	it_group_is "$1" "$2" delivered "$3"
}
for g in "${groups[@]}"; do
	publish_group "$g" "$last" "$last" >>"$IT_WORK/pub-$g.out" 2>&1 ||
		it_fail "publisher of $g (on ${origin[$g]}) confirmed its 16 MiB message"
	for h in h1 h2 h3; do
		subs=1
		[ "$h" = h3 ] && subs=2
		it_wait "the 16 MiB message of $g reached the subscribers on $h" 120 delivered_is "$h" "$g" $((subs * n))
	done
done

# Every pubctl subscriber: 7 messages, the concatenation byte-identical.
for h in h1 h2 h3; do
	for g in "${groups[@]}"; do
		v="SUB_${h}_$g"
		it_reap "${!v}" 180
		it_eq "pubctl sub $g on $h received $n messages" "$IT_STATUS" 0 || cat "$IT_WORK/sub-$h-$g.out" >&2
		it_eq "$g on $h: sha256 of the payloads" \
			"$(sha256sum <"$IT_WORK/out/$h-$g.bin" | cut -d' ' -f1)" \
			"$(sha256sum <"$IT_WORK/in/$g.all" | cut -d' ' -f1)"
	done
done

# The libpub client on h3: each message on its own, matched by group and
# its place among the group's messages (each published once the one before
# was confirmed, so every subscriber has them in that order). Not by
# sequence number: a group published on h3 reaches it on the direct path,
# where each pubctl publisher is a stream of its own, from sequence 0.
it_reap "$client_pid" 180
it_eq "libpub client on h3 received $((n * 4)) messages" "$IT_STATUS" 0
k=0
bad=0
declare -A place=()
while read -r kind g _src _seq len _idx _ok; do
	[ "$kind" = msg ] || continue
	seq=${place[$g]:-0}
	place[$g]=$((seq + 1))
	want_sha=$(sha256sum <"$IT_WORK/in/$g-$seq.bin" 2>/dev/null | cut -d' ' -f1)
	got_sha=$(sha256sum <"$IT_WORK/h3-msgs/$k.bin" | cut -d' ' -f1)
	if [ "$want_sha" != "$got_sha" ] || [ "$len" != "${sizes[$seq]:-x}" ]; then
		it_fail "h3 message $k ($g seq $seq, $len bytes) differs from what was published"
		bad=$((bad + 1))
	fi
	k=$((k + 1))
done <"$IT_WORK/h3-client.log"
it_eq "h3: every message byte-identical, by group and sequence" "$bad/$k" "0/$((n * 4))"

# Same-address groups stayed apart, and nothing was lost or malformed.
for h in h1 h2 h3; do
	it_eq "$h: no message dropped" "$(it_q "$h" status '.status[0].dropped')" 0
	it_eq "$h: no malformed datagram" "$(it_counter "$h" rx_malformed)" 0
	it_eq "$h: no kernel receive drop" \
		"$(it_q "$h" status '.fabric[] | select(.key == "rx_kernel_drops") | .value')" 0
done
it_log "pubctl groups on h3:"
it_ctl h3 groups >&2

it_finish
