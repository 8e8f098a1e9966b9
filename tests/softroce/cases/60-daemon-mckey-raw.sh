#!/bin/bash
# SPDX-License-Identifier: MIT
# Raw groups (`raw: true`: bare datagrams, one per message, no pubd header)
# against rdma-core's mckey, both ways:
#   mckey -s on rxa sends into raw group r1: pubctl subscribers on B's daemon
#     (rxb) and on A's daemon (rxa, another QP of the sending device) get its
#     10 datagrams of 100 bytes as 10 messages;
#   `pubctl pub` on A into raw group r2 reaches an mckey receiving on rxb (and
#     B's daemon), while A's own subscriber gets A's raw messages exactly once
#     (the copies rxa loops back must not be delivered again);
#   a raw message larger than the fabric MTU is refused.
. "$PUBD_REPO/tests/softroce/lib.sh"
. "$PUBD_REPO/tests/softroce/daemon-lib.sh"
dl_init
command -v mckey >/dev/null || { fail "mckey not installed (rdmacm-utils)"; exit 0; }

dl_conf_ab <<EOF
groups:
  - {name: r1, address: 239.77.60.1, raw: true}
  - {name: r2, address: 239.77.60.2, raw: true}
EOF

# Give A and B the same QP number. rxe numbers QPs per device, so a peer on
# the other port can have ours, and "from my QP number" alone once made B
# drop A's raw datagrams as its own loopback (a CI failure that came and
# went with the QP numbers earlier cases left behind). First measure how
# many QP numbers a pubd start uses before its own, then move both devices
# to the same point.
QPN_ADVANCE=$BUILD/tests/softroce/qpn_advance
la=$("$QPN_ADVANCE" rxa 0) && lb=$("$QPN_ADVANCE" rxb 0) || { fail "qpn_advance failed"; exit 0; }
dl_pubd B "$W/B.yaml"
dl_ready B 60 || exit 0
qb=$(dl_fab B qp_num)
dl_stop B
skip=$((qb - lb - 1))
target=$(((la > qb ? la : qb) + 10))
"$QPN_ADVANCE" rxa $((target - skip)) >/dev/null && "$QPN_ADVANCE" rxb $((target - skip)) >/dev/null ||
	fail "qpn_advance to $((target - skip)) failed"
dl_start_ab
qa=$(dl_fab A qp_num)
qb=$(dl_fab B qp_num)
if [ "$qa" = "$qb" ]; then
	pass "A on rxa and B on rxb have the same QP number ($qa; gids $(dl_fab A gid), $(dl_fab B gid))"
else
	fail "could not line up the QP numbers: A $qa, B $qb (wanted $target)"
fi
[ "$(dl_sq A groups groups.raw)" = "1 1" ] || fail "A's groups are not raw"

# ---- mckey -s (rxa) -> raw group r1 -> subscribers on B and on A ----
for d in A B; do
	dl_ctl $d sub r1 --count 10 --timeout 90 >"$W/$d.r1.list" 2>"$W/$d.r1.err" &
	eval "sub_$d=\$!"
	DL_BG+=($!)
done
for d in A B; do
	dl_wait 30 dl_subs $d r1 1 || fail "subscriber of r1 on $d not there within 30s"
done
if timeout 60 stdbuf -oL mckey -m 239.77.60.1 -s -b 192.168.77.1 -C 10 >"$W/mckey-tx.out" 2>&1; then
	pass "mckey -s on rxa sent 10 datagrams to r1 (239.77.60.1)"
else
	fail "mckey -s on rxa failed"
fi
cat "$W/mckey-tx.out"
for d in A B; do
	pid=sub_$d
	if wait "${!pid}"; then
		lens=$(awk '{print $4}' "$W/$d.r1.list" | sort -u | tr '\n' ' ')
		srcs=$(awk '{print $2}' "$W/$d.r1.list" | sort -u | tr '\n' ' ')
		if [ "$(wc -l <"$W/$d.r1.list")" = 10 ] && [ "$lens" = "100 " ] && [ "$srcs" = "0000000000000000 " ]; then
			pass "pubd $d's subscriber got mckey's 10 datagrams as 10 messages of 100 bytes (source 0: raw)"
		else
			fail "pubd $d's subscriber of r1: lengths '$lens' sources '$srcs'"
			cat "$W/$d.r1.list"
		fi
	else
		fail "pubd $d's subscriber did not get mckey's 10 datagrams on r1: $(cat "$W/$d.r1.err")"
	fi
done

# ---- pubctl pub on A -> raw group r2 -> mckey receiving on rxb, and B ----
stdbuf -oL mckey -m 239.77.60.2 -b 192.168.77.2 -C 10 >"$W/mckey-rx.out" 2>&1 &
mrx=$!
DL_BG+=($mrx)
dl_ctl B sub r2 --count 10 --timeout 90 >"$W/B.r2.list" 2>"$W/B.r2.err" &
subB=$!
dl_ctl A sub r2 >"$W/A.r2.list" 2>"$W/A.r2.err" &
subA=$!
DL_BG+=($subB $subA)
wait_for_file "$W/mckey-rx.out" 'joined dgid' 30 || fail "mckey receiver on rxb did not join"
for d in A B; do
	dl_wait 30 dl_subs $d r2 1 || fail "subscriber of r2 on $d not there within 30s"
done
if dl_ctl A pub r2 --count 10 --size 100; then
	pass "pubctl pub on A: 10 raw messages of 100 bytes to r2 (239.77.60.2)"
else
	fail "pubctl pub to raw group r2 on A failed"
fi
if timeout 60 tail --pid=$mrx -f /dev/null && wait $mrx && grep -q 'data transfers complete' "$W/mckey-rx.out"; then
	pass "mckey on rxb received pubd A's 10 raw datagrams"
else
	fail "mckey on rxb did not receive 10 datagrams from pubd A"
	kill $mrx 2>/dev/null
fi
cat "$W/mckey-rx.out"
if wait $subB && [ "$(awk '{print $4}' "$W/B.r2.list" | sort -u)" = 100 ]; then
	pass "pubd B's subscriber got A's 10 raw messages of 100 bytes"
else
	fail "pubd B's subscriber of r2: $(cat "$W/B.r2.err"); $(wc -l <"$W/B.r2.list") messages"
fi

# A's own subscriber: exactly its 10 local messages. To know that rxa's
# looped-back copies have come and gone, send 10 more from mckey on rxa
# afterwards: A must then hold 20 messages (10 local + mckey's 10) and
# count 10 received from the fabric (mckey's), not 20 and 30.
timeout 60 mckey -m 239.77.60.2 -s -b 192.168.77.1 -C 10 >"$W/mckey-tx2.out" 2>&1 || fail "second mckey -s on rxa failed"
at_least() { [ "$(dl_sq A group:r2 subscribers.delivered)" -ge "$1" ]; }
dl_wait 30 at_least 20 || fail "A's subscriber of r2 has $(dl_sq A group:r2 subscribers.delivered) messages, not 20 (10 local + 10 from mckey)"
rcv=$(dl_sq A groups 'groups.received[name=r2]')
kill -TERM $subA
wait $subA
n=$(wc -l <"$W/A.r2.list")
echo "A r2: subscriber got $n messages; group received from the fabric: $rcv; $(dl_kv A fabric self_loopback_block rx_datagrams)"
if [ "$n" = 20 ] && [ "$rcv" = 10 ]; then
	pass "A's subscriber got A's 10 raw messages exactly once (+ mckey's 10); A's looped-back copies discarded"
else
	fail "A's raw publishes not delivered exactly once locally: subscriber got $n (want 20 = 10 local + 10 mckey), group r2 received $rcv from the fabric (want 10, mckey's only)"
	cat "$W/A.r2.list"
fi

# Raw groups cannot fragment: more than the MTU is refused.
if dl_ctl A pub r2 --size 1025 2>"$W/big.err"; then
	fail "a 1025-byte raw message was accepted (MTU 1024)"
else
	pass "a 1025-byte raw message is refused: $(cat "$W/big.err")"
fi
dl_ctl A drops
dl_stop
