#!/bin/bash
# SPDX-License-Identifier: MIT
# Two daemons on one device (both on rxa, 192.168.77.1, separate sockets):
# rxa loops every multicast back to both QPs, so each daemon gets its own
# datagrams back (discarded: rx_self) and the other's (delivered). Each
# daemon's subscriber must see exactly 2N messages: its own N (local fan-out)
# and the other's N, none twice.
. "$PUBD_REPO/tests/softroce/lib.sh"
. "$PUBD_REPO/tests/softroce/daemon-lib.sh"
dl_init

N=300
conf() {
	dl_conf "$1" 192.168.77.1 <<EOF
groups:
  - {name: d1, address: 239.77.70.1}
EOF
}
conf C1
conf C2
dl_pubd C1 "$W/C1.yaml"
dl_pubd C2 "$W/C2.yaml"
dl_ready C1 60 && dl_ready C2 60 || exit 0
declare -A SRC=()
for d in C1 C2; do
	{
		read -r SRC[$d]
		read -r dev
	} <<<"$(dl_sq $d status status.source_id 'fabric.value[key=device]')"
	[ "$dev" = rxa ] || fail "pubd $d is on '$dev', not rxa"
done
echo "C1 source ${SRC[C1]}, C2 source ${SRC[C2]}, both on rxa"

declare -A SUB=()
for d in C1 C2; do
	dl_ctl $d sub d1 --timeout 120 >"$W/$d.list" 2>"$W/$d.err" &
	SUB[$d]=$!
	DL_BG+=($!)
done
for d in C1 C2; do
	dl_wait 30 dl_subs $d d1 1 || fail "subscriber of d1 on $d not there within 30s"
done

# Both publish at once: N messages of 1500 bytes (two datagrams each).
declare -A PUB=()
for d in C1 C2; do
	dl_ctl $d pub d1 --count $N --size 1500 --rate 300 >"$W/$d.pub" 2>&1 &
	PUB[$d]=$!
done
for d in C1 C2; do
	wait "${PUB[$d]}" && pass "$d published $N messages: $(cat "$W/$d.pub")" || fail "$d's publisher failed: $(cat "$W/$d.pub")"
done

# Settled: each has all of the other's stream (nothing pending) and has had
# all of its own datagrams back (rx_self >= what it sent by then).
declare -A TX=()
for d in C1 C2; do
	TX[$d]=$(dl_ctr $d tx_datagrams)
done
settled() {
	local d=$1 o=$2
	local inf mis del drp
	read -r inf mis del drp <<<"$(dl_stream $d "${SRC[$o]}" d1)"
	[ "$inf $mis" = "0 0" ] && [ $((del + drp)) = $N ] && [ "$(dl_ctr $d rx_self)" -ge "${TX[$d]}" ]
}
dl_wait 60 settled C1 C2 || fail "C1 did not settle (C2's stream complete, own datagrams back) within 60s"
dl_wait 60 settled C2 C1 || fail "C2 did not settle (C1's stream complete, own datagrams back) within 60s"
for d in C1 C2; do
	echo "$d: $(dl_kv $d counters rx_self rx_datagrams tx_datagrams)"
	dl_ctl $d sources
done

for d in C1 C2; do
	o=C2
	[ $d = C2 ] && o=C1
	kill -TERM "${SUB[$d]}"
	wait "${SUB[$d]}"
	# "GROUP SOURCE SEQ LEN ...": counted with builtins (no exec per line or per tool).
	total=0 own=0 other=0 dups=0
	unset seen
	declare -A seen=()
	# Its own: under its daemon's source id, or (libpub on shared memory,
	# the direct path) under its publisher's own, one source either way.
	own_src=
	while read -r _ src seq _; do
		total=$((total + 1))
		if [ "$src" = "${SRC[$o]}" ]; then
			other=$((other + 1))
		elif [ -z "$own_src" ] || [ "$src" = "$own_src" ]; then
			own_src=$src
			own=$((own + 1))
		fi
		[ -n "${seen[$src/$seq]:-}" ] && dups=$((dups + 1))
		seen[$src/$seq]=1
	done <"$W/$d.list"
	if [ "$total" = $((2 * N)) ] && [ "$own" = $N ] && [ "$other" = $N ] && [ "$dups" = 0 ]; then
		pass "$d's subscriber got exactly $((2 * N)): its own $N once and $o's $N once"
	else
		fail "$d's subscriber got $total (want $((2 * N))): own $own, from $o $other, duplicated (source, seq) $dups"
	fi
	rs=$(dl_ctr $d rx_self)
	nsrc=$(dl_sq $d sources '#sources.source')
	if [ "$rs" -ge "${TX[$d]}" ] && [ "${TX[$d]}" -ge $((2 * N)) ] && [ "$nsrc" = 1 ]; then
		pass "$d discarded its own loopback: rx_self $rs >= its $((TX[$d])) datagrams sent; only $o as a remote source"
	else
		fail "$d: rx_self '$rs', tx_datagrams '${TX[$d]}', remote sources '$nsrc' (want 1)"
	fi
done
dl_stop
