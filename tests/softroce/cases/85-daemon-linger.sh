#!/bin/bash
# SPDX-License-Identifier: MIT
# fabric.rx_linger_us over real verbs: after a completion, B polls its CQ on
# for the linger time instead of sleeping on the completion channel, so a
# train of datagrams costs a few CQ events, not one per datagram or two.
# Here B lingers 10 ms, longer than any gap in a 1 MiB message's 1075
# fragments under emulation. When the train is over B must re-arm the CQ
# and sleep: it then uses no CPU, and the next datagram still wakes it.
. "$PUBD_REPO/tests/softroce/lib.sh"
. "$PUBD_REPO/tests/softroce/daemon-lib.sh"
dl_init

# A heartbeats once a second: B lingers 10 ms after each datagram, heartbeats too.
dl_conf A 192.168.77.1 <<EOF
  heartbeat_ms: 1000
groups:
  - {name: lg, address: 239.77.85.1}
EOF
dl_conf B 192.168.77.2 <<EOF
  rx_linger_us: 10000
  srq_depth: 4096
limits:
  reassembly_timeout_ms: 10000
groups:
  - {name: lg, address: 239.77.85.1}
EOF
dl_start_ab

# cpu_ticks PID: user + system time of a process, in clock ticks.
cpu_ticks() {
	local stat
	read -r stat </proc/"$1"/stat
	stat=${stat##*) }
	read -r -a f <<<"$stat"
	echo $((f[11] + f[12]))
}
ev_dg() { dl_sq B status 'fabric.value[key=cq_events]' 'fabric.value[key=rx_datagrams]' | paste -sd' '; }
delivered_is() { [ "$(dl_stream B "$SRC_A" lg | awk '{ print $3 }')" = "$1" ]; }

dl_ctl B sub lg --count 2 >"$W/B.list" 2>"$W/B.err" &
SUB=$!
DL_BG+=("$SUB")
dl_wait 30 dl_subs B lg 1 || fail "B's subscriber not there within 30s"

read -r ev0 dg0 <<<"$(ev_dg)"
head -c 1048576 /dev/urandom >"$W/big.bin"
dl_ctl A pub lg --file "$W/big.bin" >/dev/null || fail "publish 1 MiB on A"
dl_wait 60 delivered_is 1 || fail "B did not deliver the 1 MiB message: $(dl_stream B "$SRC_A" lg)"
read -r ev1 dg1 <<<"$(ev_dg)"
ev=$((ev1 - ev0))
dg=$((dg1 - dg0))
if [ "$dg" -ge 1075 ] && [ "$ev" -le 30 ]; then
	pass "B took $dg datagrams with $ev CQ events (lingering between them)"
else
	fail "B took $dg datagrams (want >= 1075) with $ev CQ events (want <= 30)"
fi

# Then B sleeps: a second with no traffic but a heartbeat or two costs it
# little CPU (polling on would take all 100%).
pid=${DL_PID[B]}
t0=$(cpu_ticks "$pid")
read -r -t 1 -u "$DL_TICK" # a measuring window, not a synchronisation
t1=$(cpu_ticks "$pid")
hz=$(getconf CLK_TCK)
if [ $((t1 - t0)) -le $((hz / 4)) ]; then
	pass "B idle after the train: $((t1 - t0)) ticks of CPU in 1 s (CQ re-armed, asleep)"
else
	fail "B used $((t1 - t0)) of $hz ticks of CPU in an idle second: still polling?"
fi
# ... and the next datagram wakes it.
dl_ctl A pub lg "after the train" >/dev/null || fail "publish a short message on A"
if dl_wait 30 dl_gone "$SUB" && wait "$SUB"; then
	pass "the message after the train woke B and reached its subscriber"
else
	fail "B's subscriber did not get the message sent after the train: $(cat "$W/B.err")"
fi
dl_expect "B delivered both of A's messages, dropped none" "$(dl_stream B "$SRC_A" lg | awk '{ print $3, $4 }')" "2 0"
dl_stop
