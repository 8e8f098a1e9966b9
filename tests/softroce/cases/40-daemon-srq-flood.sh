#!/bin/bash
# SPDX-License-Identifier: MIT
# SRQ flood: B on rxb with a small SRQ (64 buffers, low watermark 16) takes a
# burst from three publishers on A (three groups, three message sizes: one
# datagram, less than one, four fragments). B must see SRQ limit events and
# count refills (pubctl status, fabric table), and once the reassembly
# timeouts have passed every stream must balance: A's published == B's
# delivered + dropped, with `pubctl drops` naming where the dropped went.
# B's `pubctl status` and `pubctl drops` after the flood are kept in
# $BUILD/softroce/flood-status.txt (and printed here).
. "$PUBD_REPO/tests/softroce/lib.sh"
. "$PUBD_REPO/tests/softroce/daemon-lib.sh"
dl_init

COUNT=1000
declare -A SIZE=([f1]=200 [f2]=3000 [f3]=976)
GRPS=(f1 f2 f3)
conf() {
	dl_conf "$1" "$2" <<EOF
$3
limits:
  reassembly_timeout_ms: 300
groups:
  - {name: f1, address: 239.77.40.1}
  - {name: f2, address: 239.77.40.2}
  - {name: f3, address: 239.77.40.3}
EOF
}
conf A 192.168.77.1 ""
conf B 192.168.77.2 "  srq_depth: 64
  srq_low_watermark: 16"
dl_start_ab
v=$(dl_sq B status 'fabric.value[key=srq_depth]' 'fabric.value[key=srq_low_watermark]' 'fabric.value[key=srq_fill]')
v=${v//$'\n'/ }
echo "B fabric: srq_depth, srq_low_watermark, srq_fill: $v"
[ "${v% *}" = "64 16" ] || fail "B's SRQ depth / low watermark are not 64 / 16: $v"

# One subscriber on B for the three groups (the flood's bytes go nowhere).
dl_ctl B sub "${GRPS[@]}" --output /dev/null 2>"$W/B.sub.err" &
subpid=$!
DL_BG+=($subpid)
for g in "${GRPS[@]}"; do
	dl_wait 30 dl_subs B "$g" 1 || fail "subscriber of $g on B not there within 30s"
done
# B counts a stream from its first message only when it has been receiving
# the group for the grace period (5 heartbeats) by the time it first hears
# it; a stream whose first messages are lost in the flood before that starts
# where B first heard it, and what came before is nobody's to count.
receiving_for() { [ "$(dl_sq B groups "groups.receiving_ms[name=$1]")" -ge "$2" ]; }
for g in "${GRPS[@]}"; do
	dl_wait 10 receiving_for "$g" 700 || fail "B not receiving $g for the grace period within 10s"
done

# The burst: three publishers at once, as fast as A takes them.
declare -A PUBPID=()
t0=$SECONDS
for g in "${GRPS[@]}"; do
	dl_ctl A pub "$g" --count $COUNT --size "${SIZE[$g]}" >"$W/pub.$g.out" 2>&1 &
	PUBPID[$g]=$!
done
for g in "${GRPS[@]}"; do
	if wait "${PUBPID[$g]}"; then
		pass "A published $COUNT x ${SIZE[$g]} B to $g: $(cat "$W/pub.$g.out")"
	else
		fail "publishing to $g on A failed: $(cat "$W/pub.$g.out")"
	fi
done
dl_log "burst published in $((SECONDS - t0))s"

# Every stream settles: nothing in flight or missing at B, and B has heard
# (data or heartbeat) up to A's last sequence number.
declare -A PUBLISHED=()
for g in "${GRPS[@]}"; do
	PUBLISHED[$g]=$(dl_sq A groups "groups.published[name=$g]")
done
settled() { # one query for the three streams
	local g f v i=0 exprs=()
	for g in "${GRPS[@]}"; do
		f="source=$SRC_A,group=$g"
		exprs+=("sources.inflight[$f]" "sources.missing[$f]" "sources.delivered[$f]" "sources.dropped[$f]")
	done
	mapfile -t v <<<"$(dl_sq B sources "${exprs[@]}")"
	for g in "${GRPS[@]}"; do
		[ "${v[i]} ${v[i + 1]}" = "0 0" ] && [ $((v[i + 2] + v[i + 3])) = "${PUBLISHED[$g]}" ] || return 1
		i=$((i + 4))
	done
}
if dl_wait 90 settled; then
	pass "B's streams from A settled (no partials or gaps pending, delivered + dropped = published)"
else
	fail "B's streams from A did not settle within 90s"
fi
dl_ctl A groups
dl_ctl B sources

{
	read -r lim
	read -r ref
	read -r minfill
} <<<"$(dl_sq B status 'fabric.value[key=srq_limit_events]' 'fabric.value[key=srq_refills]' 'fabric.value[key=srq_min_fill]')"
if [ "${lim:-0}" -ge 1 ] && [ "${ref:-0}" -ge 1 ]; then
	pass "B's SRQ hit its low watermark: srq_limit_events $lim, srq_refills $ref, srq_min_fill $minfill"
else
	fail "B saw no SRQ limit event / refill: srq_limit_events '$lim', srq_refills '$ref', srq_min_fill $minfill"
fi

total_dropped=0
for g in "${GRPS[@]}"; do
	# (no process substitution: the guest has no /dev/fd)
	read -r _ _ del drp <<<"$(dl_stream B "$SRC_A" "$g")"
	read -r named reasons <<<"$(dl_drops B "$SRC_A/$g")"
	if [ -n "$del" ] && [ "${PUBLISHED[$g]}" = "$COUNT" ] && [ $((del + drp)) -eq "$COUNT" ] && [ "$named" = "$drp" ]; then
		pass "$g: published $COUNT on A = delivered $del + dropped $drp on B; drops rows name them (${reasons:-none})"
	else
		fail "$g: published '${PUBLISHED[$g]}' (want $COUNT) vs delivered '$del' + dropped '$drp' on B; drops rows sum '$named' (${reasons:-none})"
	fi
	total_dropped=$((total_dropped + ${drp:-0}))
done
# The group and daemon totals agree with the per-source rows.
for g in "${GRPS[@]}"; do
	got=$(dl_sq B groups "groups.received[name=$g]" "groups.dropped[name=$g]")
	got=${got//$'\n'/ }
	read -r _ _ del drp <<<"$(dl_stream B "$SRC_A" "$g")"
	[ "$got" = "$del $drp" ] || fail "$g: B's group row received/dropped '$got' differs from its source row '$del $drp'"
done
echo "messages dropped on B in all: $total_dropped (of $((3 * COUNT)))"

out=$BUILD/softroce/flood-status.txt
{
	echo "# pubd B (rxb, srq_depth 64, srq_low_watermark 16) after a burst of 3 x $COUNT messages"
	echo "# (sizes ${SIZE[f1]}, ${SIZE[f2]}, ${SIZE[f3]} B) from 3 publishers on A (rxa); $(date -u +%FT%TZ), kernel $(uname -r)"
	echo "\$ pubctl status"
	dl_ctl B status
	echo
	echo "\$ pubctl drops"
	dl_ctl B drops
} >"$out.tmp" && mv "$out.tmp" "$out"
echo "==== $out"
cat "$out"
grep -q '^  srq_limit_events' "$out" && grep -q '^drops' "$out" ||
	fail "the saved status/drops output is incomplete"

kill -TERM $subpid
wait $subpid
dl_stop
