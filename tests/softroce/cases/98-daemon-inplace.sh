#!/bin/bash
# SPDX-License-Identifier: MIT
# Sending from the publish log in place (verbs/inplace.c), A on rxa and B
# on rxb: messages of 1 KiB and more that a libpub client writes into its
# shared-memory publish log are posted as two scatter entries, pubd's
# header from the send slab and the payload straight from the client's
# log (registered with the PD), not copied. B's subscriber must get every
# message byte-identical and in order; A counts the in-place sends
# (tx_in_place), none over the socket transport. Then a publisher is
# killed (SIGKILL) while its 64 KiB messages are being sent in place: its
# log stays mapped until the device is done, A keeps answering, and B
# accounts for every message A took (delivered + dropped = published).
. "$PUBD_REPO/tests/softroce/lib.sh"
. "$PUBD_REPO/tests/softroce/daemon-lib.sh"
dl_init

dl_need "$ITEST"
dl_conf_ab <<YAML
  srq_depth: 16384
  srq_low_watermark: 4096
limits:
  publish_log: 4MiB # records up to 1 MiB: 64 KiB messages are sent from theirs
  reassembly_timeout_ms: 30000
  reassembly_budget: 256MiB
  subscriber_queue: 65536
  subscriber_queue_bytes: 512MiB
groups:
  - {name: z, address: 239.77.98.1}
YAML
dl_start_ab

"$ITEST" sub -s "$W/B.sock" -g z --log "$W/sub.log" --count 400 --timeout-ms 300000 >"$W/sub.out" 2>&1 &
SUB=$!
DL_BG+=("$SUB")
dl_wait 30 dl_subs B z 1 || fail "subscriber of z on B not there within 30s"

# 300 of 4 KiB (4 datagrams of 976 payload bytes above the 256-byte inline
# limit, and a short last one sent inline) and 100 of 64 KiB (67 and one).
"$ITEST" pub -s "$W/A.sock" -g z --count 300 --size 4096 --start 0 || fail "publishing 300 x 4 KiB on A"
"$ITEST" pub -s "$W/A.sock" -g z --count 100 --size 65536 --start 1000 || fail "publishing 100 x 64 KiB on A"
if dl_wait 120 dl_gone "$SUB" && wait "$SUB"; then
	pass "B's subscriber got 400 messages"
else
	fail "B's subscriber did not get 400 messages: $(tail -3 "$W/sub.out")"
fi
n_ok=0 n_bad=0 order=yes last=-1
while read -r tag _ _ _ _ idx ok; do
	[ "$tag" = msg ] || continue
	if [ "$ok" = OK ]; then n_ok=$((n_ok + 1)); else n_bad=$((n_bad + 1)); fi
	[ "$idx" -gt "$last" ] || order=no
	last=$idx
done <"$W/sub.log"
dl_expect "B: every message byte-identical (OK BAD) and in order" "$n_ok $n_bad $order" "400 0 yes"

inplace=$(dl_fab A tx_in_place)
lent=$(dl_ctr A publog_lent)
dl_log "A: tx_in_place $inplace, publog_lent $lent, tx_datagrams $(dl_fab A tx_datagrams)," \
	"tx_register_failures $(dl_fab A tx_register_failures)"
if [ "${PUBD_TRANSPORT:-shm}" = socket ]; then
	dl_expect "A: over the socket nothing is lent, nothing sent in place" "$lent $inplace" "0 0"
else
	# A lent message waiting for send credits stays in its record, up to
	# half the log (the rest is copied into pubd at the turn's end:
	# publog_lent_copied), and every full-size datagram of one sent from
	# there goes in place: 4 per 4 KiB message, 67 per 64 KiB one. (A
	# message is copied in at once when 256 are lent, so not all 400 are.)
	copied=$(dl_ctr A publog_lent_copied)
	if [ "${lent:-0}" -gt 0 ] && [ "$copied" -le $((lent / 4)) ] && [ "$inplace" -ge $(((lent - copied) * 4)) ] &&
		[ "$inplace" -le $((lent * 67)) ]; then
		pass "A sent $inplace datagrams in place from $lent lent messages ($copied of them copied while queued)"
	else
		fail "A: tx_in_place '$inplace' from publog_lent '$lent' (copied '$copied'), want 4 to 67 per" \
			"message sent from its record and at most a quarter copied"
	fi
	dl_expect "A: the publish logs registered (tx_register_failures)" "$(dl_fab A tx_register_failures)" 0
fi

# A publisher killed while its messages are sent in place (B listens on).
"$ITEST" sub -s "$W/B.sock" -g z --log "$W/sub2.log" --timeout-ms 300000 >"$W/sub2.out" 2>&1 &
DL_BG+=("$!")
dl_wait 30 dl_subs B z 1 || fail "second subscriber of z on B not there within 30s"
pub_before=$(dl_sq A groups 'groups.published[name=z]')
"$ITEST" pub -s "$W/A.sock" -g z --count 100000 --size 65536 --start 100000 >/dev/null 2>&1 &
PUB=$!
DL_BG+=("$PUB")
more_sent() { [ "$(dl_fab A tx_datagrams)" -gt $(($1 + 2000)) ]; }
dl_wait 60 more_sent "$(dl_fab A tx_datagrams)" || fail "A did not send the killed publisher's messages"
kill -KILL "$PUB"
wait "$PUB" 2>/dev/null
queued_out() { [ "$(dl_sq A groups 'groups.tx_queued[name=z]')" = 0 ]; }
dl_wait 60 queued_out || fail "A's queue for z did not empty"
dl_expect "A answers after the publisher died mid-send" "$(dl_sq A status status.fabric)" verbs
published=$(dl_sq A groups 'groups.published[name=z]')
dl_log "A published $((published - pub_before)) messages of the killed publisher"
b_settled() {
	local v
	mapfile -t v <<<"$(dl_sq B sources "sources.delivered[group=z,source=$SRC_A]" \
		"sources.dropped[group=z,source=$SRC_A]")"
	[ -n "${v[0]}" ] && [ $((v[0] + v[1])) = "$published" ]
}
if dl_wait 120 b_settled; then
	pass "B accounts for all $published messages A published (delivered + dropped)"
else
	fail "B's row for A: $(dl_stream B "$SRC_A" z), want delivered + dropped = $published"
fi
dl_stop
