#!/bin/bash
# SPDX-License-Identifier: MIT
# fabric.receive: on-demand over real verbs, A on rxa and B on rxb. The QP
# is attached to a group (ibv_attach_mcast) only while the daemon has a
# local subscriber of it; the rdmacm join stays either way, so publishing
# never waits for it. Soft-RoCE cannot block a QP's own multicast
# (self_loopback_block no): a publishing daemon attached to its group takes
# back every datagram it sends and discards it (rx_self). Detached, it takes
# none. B attaches with its first subscriber, gets what follows, counts no
# gap for what it did not hear, and detaches when the subscriber leaves.
. "$PUBD_REPO/tests/softroce/lib.sh"
. "$PUBD_REPO/tests/softroce/daemon-lib.sh"
dl_init

dl_conf_ab <<EOF
groups:
  - {name: od, address: 239.77.80.1}
EOF
dl_start_ab

attached() { dl_fab "$1" groups_attached; }
attached_is() { [ "$(attached "$1")" = "$2" ]; }
settled() { # "inflight missing" of B's row for A's stream is "0 0"
	local v
	v=$(dl_stream B "$SRC_A" od) || return 1
	[ "${v% * *}" = "0 0" ]
}

for d in A B; do
	dl_expect "$d: od joined, QP not attached (no subscriber)" \
		"$(dl_sq "$d" groups 'groups.joined[name=od]' 'groups.receiving[name=od]' | paste -sd' ') $(attached "$d")" \
		"1 0 0"
done

# Nobody subscribes: A's datagrams come back to nobody, A included.
dl_ctl A pub od --count 50 --size 100 >/dev/null || fail "publish 50 on A"
a_sent() { [ "$(dl_sq A groups 'groups.tx_queued[name=od]')" = 0 ]; }
dl_wait 30 a_sent || fail "A did not send its 50"
# Messages that went out: a batch (fabric.batch) carries several in one datagram.
TX=$(dl_fab A tx_datagrams)
TXM=$((TX - $(dl_ctr A tx_batches) + $(dl_ctr A tx_batched_msgs)))
if [ "$TXM" -ge 50 ]; then
	pass "A sent $TX datagrams carrying $TXM messages and heartbeats (50 messages published)"
else
	fail "A sent $TX datagrams carrying $TXM messages and heartbeats, want >= 50"
fi
dl_expect "A received none of them back (rx_datagrams, rx_self)" \
	"$(dl_fab A rx_datagrams) $(dl_ctr A rx_self)" "0 0"
dl_expect "B received none" "$(dl_fab B rx_datagrams)" 0

# B's first subscriber attaches its QP before the SUBSCRIBE is answered.
dl_ctl B sub od --count 20 >"$W/B.list" 2>"$W/B.err" &
SUB=$!
DL_BG+=("$SUB")
dl_wait 30 dl_subs B od 1 || fail "B's subscriber not there within 30s"
# Send-only until the subscriber (join_type.c): its full join is the first,
# and librdmacm attaches the QP with it; nothing was detached before.
dl_expect "B: QP attached with the subscriber (groups_attached, qp_attaches, qp_detaches)" \
	"$(attached B) $(dl_fab B qp_attaches) $(dl_fab B qp_detaches)" "1 1 0"
dl_ctl A pub od --count 20 --size 100 >/dev/null || fail "publish 20 more on A"
if dl_wait 60 dl_gone "$SUB" && wait "$SUB"; then
	pass "B's subscriber got its 20 messages"
else
	fail "B's subscriber did not get 20 messages: $(cat "$W/B.err")"
fi
dl_expect "B's subscriber saw seqs 50..69" "$(awk 'NR == 1 { f = $3 } END { print f, $3 }' "$W/B.list")" "50 69"
dl_wait 30 settled || fail "B's row for A's stream did not settle: $(dl_stream B "$SRC_A" od)"
dl_expect "B: A's stream delivered 20, dropped 0 (no gap for 0..49, sent before B listened)" \
	"$(dl_stream B "$SRC_A" od | awk '{ print $3, $4 }')" "20 0"
dl_wait 30 attached_is B 0 || fail "B kept its QP attached after the subscriber left"
dl_expect "B: QP detached with the last subscriber (groups_attached, qp_detaches)" \
	"$(attached B) $(dl_fab B qp_detaches)" "0 1"
dl_expect "A, still without a subscriber, received nothing back" "$(dl_fab A rx_datagrams)" 0
dl_expect "no attach errors" "$(dl_fab A qp_attach_errors) $(dl_fab B qp_attach_errors)" "0 0"
dl_stop
