#!/bin/bash
# SPDX-License-Identifier: MIT
# IPv6 groups over RoCE v2 (rxe), beside an IPv4 group. The kernel's rdma_cm
# refuses an IPv6 group on a RoCE v2 port (ENOTSUPP), so the verbs fabric
# joins those itself (daemon/fabric/verbs/mcast6.c): an address handle from
# the port's IPv6 RoCE v2 GID to the group, the QP attached and an MLD join
# on the netdev while it listens. rxe needs an IPv6 address on each veth for
# that GID to exist: added with nodad, then the GID table polled until the
# entry appears. A (rxa) publishes on a site-local (ff15::), a link-local
# (ff12::) and an IPv4 group; B (rxb) subscribes to all three: every message
# arrives once, pubctl groups shows the addresses, B's netdev holds the MLD
# membership while B listens.
. "$PUBD_REPO/tests/softroce/lib.sh"
. "$PUBD_REPO/tests/softroce/daemon-lib.sh"
dl_init

ip -6 addr add fd00:77::1/64 dev va nodad
ip -6 addr add fd00:77::2/64 dev vb nodad
# gid_v2 DEV HEX: the port has a RoCE v2 GID for that address (sysfs form).
gid_v2() {
	local g i
	for g in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		i=${g##*/}
		[ "$(cat "$g")" = "$2" ] &&
			[ "$(cat "/sys/class/infiniband/$1/ports/1/gid_attrs/types/$i" 2>/dev/null)" = "RoCE v2" ] && return 0
	done
	return 1
}
if dl_wait 20 gid_v2 rxa fd00:0077:0000:0000:0000:0000:0000:0001 &&
	dl_wait 20 gid_v2 rxb fd00:0077:0000:0000:0000:0000:0000:0002; then
	pass "rxa and rxb have RoCE v2 GIDs of their IPv6 addresses"
else
	fail "no RoCE v2 GID for fd00:77::1/::2 within 20s"
fi

dl_conf_ab <<EOF
groups:
  - {name: s6, address: 'ff15::77:1'}
  - {name: l6, address: 'ff12::77:2'}
  - {name: v4, address: 239.77.96.1}
EOF
dl_start_ab
dl_expect "A's groups and their addresses" \
	"$(dl_sq A groups groups.address | paste -sd' ')" "ff15::77:1 ff12::77:2 239.77.96.1"
if grep -q 'joined ff15::77:1 on rxa as .* without rdma_cm' "$DL_LOGS/$DL_RUN-A.pubd.log"; then
	pass "A joined ff15::77:1 itself: $(grep -m1 'joined ff15::77:1' "$DL_LOGS/$DL_RUN-A.pubd.log" | cut -c1-160)"
else
	fail "A's log does not say how it joined ff15::77:1"
fi

COUNT=100
declare -A SUB=()
for g in s6 l6 v4; do
	dl_ctl B sub "$g" --count $COUNT --timeout 120 --output "$W/B.$g.out" 2>"$W/B.$g.err" &
	DL_BG+=("$!")
	SUB[$g]=$!
done
for g in s6 l6 v4; do
	dl_wait 30 dl_subs B "$g" 1 || fail "B's subscriber of $g not there within 30s"
done
mld() { ip -6 maddr show dev vb | grep -q "$1"; }
if dl_wait 10 mld ff15::77:1 && dl_wait 10 mld ff12::77:2; then
	pass "vb holds the MLD memberships of ff15::77:1 and ff12::77:2"
else
	fail "vb's IPv6 memberships: $(ip -6 maddr show dev vb | grep -o 'ff1[0-9a-f]::[0-9a-f:]*' | paste -sd' ')"
fi
for g in s6 l6 v4; do
	dl_ctl A pub "$g" --count $COUNT --size 300 >"$W/A.$g.pub" 2>&1 || fail "publishing to $g on A: $(cat "$W/A.$g.pub")"
done
for g in s6 l6 v4; do
	if dl_wait 90 dl_gone "${SUB[$g]}" && wait "${SUB[$g]}"; then
		pass "$g: B's subscriber got its $COUNT messages"
	else
		fail "$g: B's subscriber did not get $COUNT messages: $(cat "$W/B.$g.err")"
	fi
	read -r pa db <<<"$(dl_sq A groups "groups.published[name=$g]" | paste -sd' ') $(dl_sq B groups "groups.delivered[name=$g]")"
	dl_expect "$g: A published, B delivered" "$pa $db" "$COUNT $COUNT"
done
dl_ctl B groups | head -n 5
dl_stop
