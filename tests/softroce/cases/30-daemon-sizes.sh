#!/bin/bash
# SPDX-License-Identifier: MIT
# Two daemons over real verbs, A on rxa (192.168.77.1) and B on rxb
# (192.168.77.2): messages of 0 B, 1 B, P-1, P, P+1 (P = payload_per_datagram,
# the 1024-byte fabric MTU less pubd's header: one datagram), 1 MiB and 16 MiB
# published on A arrive byte-identical, in order and once each at subscribers
# on B, on three groups at once; subscribers on A get their own daemon's
# messages exactly once (the looped-back copies are discarded: rx_self).
# A host group (scope: host) beside them stays on A.
. "$PUBD_REPO/tests/softroce/lib.sh"
. "$PUBD_REPO/tests/softroce/daemon-lib.sh"
dl_init

GRPS=(s1 s2 s3)
dl_conf_ab <<EOF
  # Room for the burst (3 x 17 MiB at once, both daemons and a dozen clients
  # on two emulated cores): UD has no flow control, an empty SRQ drops.
  # 16384 is rxe's largest SRQ.
  srq_depth: 16384
  srq_low_watermark: 4096
limits:
  # 16 MiB take seconds at Soft-RoCE-under-TCG speed; the default 500 ms from
  # first to last fragment would drop them as reasm_timeout.
  reassembly_timeout_ms: 30000
  reassembly_budget: 128MiB
groups:
  - {name: s1, address: 239.77.30.1}
  - {name: s2, address: 239.77.30.2}
  - {name: s3, address: 239.77.30.3}
  - {name: h, scope: host}
EOF
dl_start_ab

# The fabric in use, as pubctl shows it (its fabric table, up to the counters).
for d in A B; do
	echo "pubd $d: pubctl status, fabric table:"
	show=0
	while IFS= read -r line; do
		[ "$line" = fabric ] && show=1
		[[ "$line" = *" rx_datagrams "* || -z "$line" ]] && show=0
		[ $show = 1 ] && echo "$line"
	done <<<"$(dl_ctl $d status)"
done
for d in A:rxa B:rxb; do
	n=${d%%:*}
	want=${d#*:}
	mapfile -t v <<<"$(dl_sq "$n" status 'fabric.value[key=fabric]' 'fabric.value[key=device]' \
		'fabric.value[key=mtu]' status.fabric status.payload_per_datagram status.source_id)"
	if [ "${v[*]:0:4}" = "verbs $want 1024 verbs" ]; then
		pass "pubd $n runs on verbs, device $want, MTU 1024"
	else
		fail "pubd $n fabric/device/mtu: got '${v[*]:0:4}', want 'verbs $want 1024 verbs'"
	fi
	eval "P_$n=\${v[4]} SRC_$n=\${v[5]}"
done
P=$P_A
if [ "$P_A" = 976 ] && [ "$P_B" = 976 ]; then
	pass "payload_per_datagram 976 (1024 less the 48-byte header)"
else
	fail "payload_per_datagram: A '$P_A', B '$P_B', want 976"
	[ -n "$P" ] || exit 0
fi

sizes=(0 1 $((P - 1)) "$P" $((P + 1)) 1048576 16777216)
N=${#sizes[@]}
declare -A WANT=()
sha() { # sha256 of stdin, one exec
	local h
	h=$(sha256sum)
	echo "${h%% *}"
}
# rand_file N FILE: N random bytes, with shell builtins (an exec per small
# file costs more than the bytes); head -c from /dev/urandom for the big ones.
rand_file() {
	local n=$1 i s= x
	if [ "$n" -gt 4096 ]; then
		head -c "$n" /dev/urandom >"$2"
		return
	fi
	for ((i = 0; i < n; i++)); do
		printf -v x '\\x%02x' $((RANDOM & 255))
		s+=$x
	done
	printf '%b' "$s" >"$2"
}
for g in "${GRPS[@]}"; do
	for i in "${!sizes[@]}"; do
		rand_file "${sizes[$i]}" "$W/$g.$i.bin"
	done
	# What a subscriber's --output holds: the payloads in order ($i < 10: glob order).
	WANT[$g]=$(cat "$W/$g".?.bin | sha)
done
dl_log "payloads ready: sizes ${sizes[*]} on ${GRPS[*]}"

# list_summary FILE: a `pubctl sub` listing ("GROUP SOURCE SEQ LEN ...") as
# "COUNT|LENGTHS|SOURCES|CONSECUTIVE_SEQS" (shell builtins only).
list_summary() {
	local n=0 lens= srcs= first= ok=yes grp src seq len _
	while read -r grp src seq len _; do
		[ $n = 0 ] && first=$seq
		[ "$seq" = $((first + n)) ] || ok=no
		lens+="${lens:+ }$len"
		[[ " $srcs " = *" $src "* ]] || srcs+="${srcs:+ }$src"
		n=$((n + 1))
	done <"$1"
	[ $n = 0 ] && ok=no
	echo "$n|$lens|$srcs|$ok"
}

# The same for a local subscriber on the direct path (libpub over shared
# memory): each `pubctl pub` is a publisher of its own, whose one message
# comes under a source of its own, at seq 0.
# (count|lengths|how many sources|whether every seq is 0)
direct_summary() {
	local n=0 lens= srcs= ok=yes grp src seq len _
	while read -r grp src seq len _; do
		[ "$seq" = 0 ] || ok=no
		lens+="${lens:+ }$len"
		[[ " $srcs " = *" $src "* ]] || srcs+="${srcs:+ }$src"
		n=$((n + 1))
	done <"$1"
	echo "$n|$lens|$(wc -w <<<"$srcs") sources|$ok"
}

# Subscribers: on B, one saving the bytes and one listing (source, seq, length);
# on A, a listing one, open-ended, to see that nothing comes twice.
declare -A SUBPID=()
for g in "${GRPS[@]}"; do
	dl_ctl B sub "$g" --count "$N" --output "$W/B.$g.out" 2>"$W/B.$g.out.err" &
	SUBPID[B.$g.out]=$!
	dl_ctl B sub "$g" --count "$N" >"$W/B.$g.list" 2>"$W/B.$g.list.err" &
	SUBPID[B.$g.list]=$!
	dl_ctl A sub "$g" >"$W/A.$g.list" 2>"$W/A.$g.list.err" &
	SUBPID[A.$g.list]=$!
	DL_BG+=("${SUBPID[B.$g.out]}" "${SUBPID[B.$g.list]}" "${SUBPID[A.$g.list]}")
done
for g in "${GRPS[@]}"; do
	dl_wait 30 dl_subs B "$g" 2 || fail "two subscribers of $g on B not there within 30s"
	dl_wait 30 dl_subs A "$g" 1 || fail "the subscriber of $g on A not there within 30s"
done

# Publish: the three groups at once, each its sizes in order.
t0=$SECONDS
declare -A PUBPID=()
for g in "${GRPS[@]}"; do
	(
		for i in "${!sizes[@]}"; do
			dl_ctl A pub "$g" --file "$W/$g.$i.bin" || { echo "pub $g message $i failed"; exit 1; }
		done
	) &
	PUBPID[$g]=$!
done
for g in "${GRPS[@]}"; do
	if wait "${PUBPID[$g]}"; then
		pass "published ${sizes[*]} bytes to $g on A (confirmed by pubd)"
	else
		fail "publishing to $g on A failed"
	fi
done
dl_log "published in $((SECONDS - t0))s"

# B: each subscriber ends by itself after N messages. Deadline: a lost
# fragment of a 16 MiB message is dropped after reassembly_timeout_ms (30 s).
b_subs_done() {
	local g k
	for g in "${GRPS[@]}"; do
		for k in out list; do
			! kill -0 "${SUBPID[B.$g.$k]}" 2>/dev/null || return 1
		done
	done
}
dl_wait 90 b_subs_done || fail "B's subscribers did not all end within 90s of the last publish"
dl_log "B's subscribers done"
for g in "${GRPS[@]}"; do
	for k in out list; do
		if kill -0 "${SUBPID[B.$g.$k]}" 2>/dev/null; then
			kill -TERM "${SUBPID[B.$g.$k]}"
			wait "${SUBPID[B.$g.$k]}"
			fail "subscriber ($k) of $g on B did not get $N messages: $(cat "$W/B.$g.$k.err")"
		elif ! wait "${SUBPID[B.$g.$k]}"; then
			fail "subscriber ($k) of $g on B failed: $(cat "$W/B.$g.$k.err")"
		fi
	done
	got=$(sha <"$W/B.$g.out")
	if [ "$got" = "${WANT[$g]}" ]; then
		pass "$g: B's subscriber got the $N messages byte-identical (sha256 ${got:0:16}...)"
	else
		fail "$g: B's bytes differ: sha256 $got, want ${WANT[$g]} ($(wc -c <"$W/B.$g.out") bytes)"
	fi
	# Lengths in order, one source (A), consecutive seqs.
	want="$N|${sizes[*]}|$SRC_A|yes"
	got=$(list_summary "$W/B.$g.list")
	if [ "$got" = "$want" ]; then
		pass "$g: B's messages have the published sizes in order (${sizes[*]}), from A ($SRC_A), consecutive seqs"
	else
		fail "$g: B's list (count|sizes|sources|consecutive seqs): '$got', want '$want'"
		cat "$W/B.$g.list"
	fi
	got=$(dl_sq B sources "sources.delivered[group=$g,source=$SRC_A]" "sources.dropped[group=$g,source=$SRC_A]")
	got=${got//$'\n'/ }
	if [ "$got" = "$N 0" ]; then
		pass "$g: B's source row for A: delivered $N, dropped 0"
	else
		fail "$g: B's source row for A: delivered/dropped '$got', want '$N 0'"
	fi
done

# A: its own datagrams come back from rxa (loopback) and must be discarded.
# Wait until as many came back as A had sent when publishing ended, then the
# local subscribers must still have exactly N each.
tx=$(dl_ctr A tx_datagrams)
loopback_back() { [ "$(dl_ctr A rx_self)" -ge "$tx" ]; }
if dl_wait 60 loopback_back; then
	pass "A discarded its own looped-back datagrams: $(dl_kv A counters rx_self) >= tx_datagrams $tx"
else
	fail "A's rx_self $(dl_ctr A rx_self) did not reach its tx_datagrams $tx within 60s"
fi
for g in "${GRPS[@]}"; do
	got=$(dl_sq A "group:$g" subscribers.delivered)
	[ "$got" = "$N" ] || fail "$g: A's subscriber delivered '$got', want '$N'"
	kill -TERM "${SUBPID[A.$g.list]}"
	wait "${SUBPID[A.$g.list]}"
	if [ "${PUBD_TRANSPORT:-shm}" = socket ]; then
		got="$(list_summary "$W/A.$g.list")"
		want="$N|${sizes[*]}|$SRC_A|yes"
	else
		got="$(direct_summary "$W/A.$g.list")"
		want="$N|${sizes[*]}|$N sources|yes"
	fi
	if [ "$got" = "$want" ]; then
		pass "$g: A's local subscriber got its $N messages exactly once, in order, with their sizes"
	else
		fail "$g: A's local subscriber (count|sizes|sources|consecutive seqs): '$got', want '$want'"
	fi
done
# A host group on verbs (scope: host): ready with nothing joined (dl_start_ab
# waited for every group), its messages for A's own subscriber only; B's
# subscriber of its own h gets nothing, and B received nothing for it.
if [ "$(dl_sq A groups 'groups.scope[name=h]' 'groups.join[name=h]' | tr '\n' ' ')" = "host host " ]; then
	pass "h: a host group on A (scope host, join host)"
else
	fail "h: A's groups row: '$(dl_sq A groups 'groups.scope[name=h]' 'groups.join[name=h]' | tr '\n' ' ')'"
fi
dl_ctl A sub h --count 3 >"$W/A.h.list" 2>"$W/A.h.err" &
hpid=$!
dl_ctl B sub h >"$W/B.h.list" 2>"$W/B.h.err" &
hbpid=$!
DL_BG+=("$hpid" "$hbpid")
dl_wait 30 dl_subs A h 1 || fail "the subscriber of h on A not there within 30s"
dl_wait 30 dl_subs B h 1 || fail "the subscriber of h on B not there within 30s"
for i in 1 2 3; do
	dl_ctl A pub h "host message $i" || fail "publishing to h on A failed"
done
if dl_wait 30 eval '! kill -0 "$hpid" 2>/dev/null' && wait "$hpid" && [ "$(wc -l <"$W/A.h.list")" = 3 ]; then
	pass "h: A's subscriber got its 3 messages"
else
	fail "h: A's subscriber: $(cat "$W/A.h.list" "$W/A.h.err")"
fi
got="$(dl_sq B groups 'groups.received[name=h]') $(wc -l <"$W/B.h.list")"
if [ "$got" = "0 0" ]; then
	pass "h: nothing of A's host group reached B"
else
	fail "h: B received/listed '$got', want '0 0'"
fi
kill -TERM "$hbpid" 2>/dev/null
wait "$hbpid" 2>/dev/null
echo "A counters: $(dl_kv A counters rx_self rx_datagrams tx_datagrams)"
echo "B fabric: $(dl_kv B fabric srq_min_fill srq_limit_events srq_refills rx_datagrams hw_counters.rcvd_pkts hw_counters.rdma_recvs)"
dl_ctl B drops
dl_stop
