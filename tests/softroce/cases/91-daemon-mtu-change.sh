#!/bin/bash
# SPDX-License-Identifier: MIT
# The fabric MTU changing at run time (issue 10, defect 2).
#  1. fabric.mtu 4096 on a port whose active MTU is 1024 (veth MTU 1500):
#     pubd refuses to start, with a log line naming both MTUs.
#  2. veth MTU 9000 (active MTU 4096): A (fabric.mtu 4096) and B (auto) run
#     at 4096. Then the veth MTU drops to 1500 while they run, with no link
#     flap (rxe changes the port's active MTU without any port event, and
#     drops a UD send above it without an error). Both must notice, rebuild
#     at 1024 and tell the daemon: A with one error line (fabric.mtu above
#     the port's MTU), not one per second. Messages of several sizes
#     published after the change arrive byte-identical, with no mtu_exceeded.
#  3. veth MTU 9000 again: A goes back to its configured 4096.
. "$PUBD_REPO/tests/softroce/lib.sh"
. "$PUBD_REPO/tests/softroce/daemon-lib.sh"
dl_init

set_mtu() { ip link set va mtu "$1" && ip link set vb mtu "$1"; }
active_mtu() { ibv_devinfo -d "$1" | sed -n 's/.*active_mtu:[[:space:]]*\([0-9]*\).*/\1/p'; }
both_active() { [ "$(active_mtu rxa)" = "$1" ] && [ "$(active_mtu rxb)" = "$1" ]; }
# The later cases expect the default MTU (1500: active 1024).
trap 'set_mtu 1500; dl_teardown' EXIT

# ---- 1. a configured MTU the port cannot carry ----
dl_conf C 192.168.77.1 <<EOF
  mtu: 4096
groups:
  - {name: m1, address: 239.77.91.1}
EOF
logC=$DL_LOGS/$DL_RUN-C.pubd.log
dl_pubd C "$W/C.yaml"
if dl_wait 30 dl_gone "${DL_PID[C]}"; then
	wait "${DL_PID[C]}"
	rc=$?
	unset "DL_PID[C]"
	line=$(grep -m1 'fabric.mtu 4096 is larger than the active MTU 1024' "$logC")
	if [ $rc -ne 0 ] && [ -n "$line" ]; then
		pass "fabric.mtu 4096 on a 1024 port refused (exit $rc): $line"
	else
		fail "fabric.mtu 4096 on a 1024 port: exit $rc, log: $(tail -n 3 "$logC")"
	fi
else
	fail "pubd with fabric.mtu 4096 on a 1024 port still running after 30s"
	dl_stop C
fi

# ---- 2. 4096, then 1024 under the running daemons ----
set_mtu 9000
dl_wait 30 both_active 4096 || fail "rxa/rxb active MTU not 4096 after veth MTU 9000: $(active_mtu rxa)/$(active_mtu rxb)"
dl_conf A 192.168.77.1 <<EOF
  mtu: 4096
  srq_depth: 4096
  srq_low_watermark: 1024
limits:
  reassembly_timeout_ms: 10000
groups:
  - {name: m1, address: 239.77.91.1}
EOF
dl_conf B 192.168.77.2 <<EOF
  srq_depth: 4096
  srq_low_watermark: 1024
limits:
  reassembly_timeout_ms: 10000
groups:
  - {name: m1, address: 239.77.91.1}
EOF
dl_start_ab
mtus() { echo "$(dl_sq A status status.mtu) $(dl_sq B status status.mtu)"; }
dl_expect "daemon MTUs (A B) at veth MTU 9000" "$(mtus)" "4096 4096"

dl_log "veth MTU 9000 -> 1500, links stay up"
set_mtu 1500
at_mtu() { [ "$(mtus)" = "$1" ]; }
if dl_wait 30 at_mtu "1024 1024"; then
	pass "both daemons cut for 1024 after the port MTU dropped ($(dl_kv A fabric mtu active_mtu mtu_limited_by_port device_rebuilds))"
else
	fail "daemon MTUs 30s after the drop: '$(mtus)', want '1024 1024' (ports' active MTU $(active_mtu rxa)/$(active_mtu rxb))"
fi
dl_ready A 60 && dl_ready B 60 || exit 0

SIZES=(100 976 977 3000 4048 10000)
N=3
i=0
for s in "${SIZES[@]}"; do
	for k in $(seq 1 $N); do
		head -c "$s" /dev/urandom >"$W/msg.$(printf %03d $i).bin"
		i=$((i + 1))
	done
done
TOTAL=$i
want=$(cat "$W"/msg.*.bin | sha256sum)
dl_ctl B sub m1 --count $TOTAL --timeout 120 --output "$W/B.out" 2>"$W/B.sub.err" &
subpid=$!
DL_BG+=("$subpid")
dl_wait 30 dl_subs B m1 1 || fail "subscriber of m1 on B not there within 30s"
for f in "$W"/msg.*.bin; do
	dl_ctl A pub m1 --file "$f" >/dev/null 2>>"$W/A.pub.err" || fail "publishing $f: $(tail -n1 "$W/A.pub.err")"
done
if dl_wait 60 dl_gone $subpid; then
	got=$(sha256sum <"$W/B.out")
	if [ "$got" = "$want" ]; then
		pass "$TOTAL messages (${SIZES[*]} bytes) published after the drop arrived byte-identical"
	else
		fail "B's bytes differ: $(wc -c <"$W/B.out") bytes, sha256 ${got:0:16}, want ${want:0:16}"
	fi
else
	fail "B's subscriber got $(dl_sq B groups 'groups.delivered[name=m1]') of $TOTAL messages within 60s"
fi
drops=$(dl_ctl A drops)
if grep -q mtu_exceeded <<<"$drops"; then
	fail "A counted mtu_exceeded: $drops"
else
	pass "no mtu_exceeded at A (published $(dl_sq A groups 'groups.published[name=m1]'))"
fi

# One error line for the configured MTU the port no longer carries, however
# long it lasts (a rebuild failing each second would add one per second).
logA=$DL_LOGS/$DL_RUN-A.pubd.log
n=$(grep -c 'fabric.mtu 4096 is larger than the active MTU 1024' "$logA")
nb=$(grep -c 'device not back yet' "$logA")
if [ "$n" = 1 ] && [ "$nb" = 0 ]; then
	pass "A said once that fabric.mtu 4096 exceeds the port's 1024 ($(grep -m1 'is larger than the active MTU' "$logA"))"
else
	fail "A's log: $n 'larger than the active MTU' lines (want 1), $nb 'device not back yet'"
fi

# ---- 3. back to 4096 ----
dl_log "veth MTU 1500 -> 9000"
set_mtu 9000
if dl_wait 30 at_mtu "4096 4096"; then
	pass "both back at 4096 ($(dl_kv A fabric mtu_limited_by_port device_rebuilds))"
else
	fail "daemon MTUs 30s after the MTU came back: '$(mtus)', want '4096 4096'"
fi
dl_stop
