# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Sourced by peers/run.sh after tests/integration/lib.sh: the hosts, the
# daemons, one function per kind of case, and the tables.

PEERS_NET=91
PEERS_RUN=0   # numbers each run's multicast address and port (runs never share one)

# Hosts h1 h2 h3 on a bridge; pubd on each (udp fabric on eth0); aeronmd on each.
peers_hosts() {
	local h addr_var
	it_hosts "$PEERS_NET" h1 h2 h3
	for h in h1 h2 h3; do
		addr_var="IT_ADDR_$h"
		IT_LOG_LEVEL=warning it_conf_write "$h" "${!addr_var}" <<-EOF
			  rx_linger_us: ${PEERS_LINGER_US:-50}
			limits:
			  # a 1 MiB message is 700 datagrams, and a repair holds back
			  # what follows it: room for both, as repair.sh sets it
			  reassembly_inflight: 4096
			  reassembly_budget: 512MiB
			  subscriber_queue: 65536
			  subscriber_queue_bytes: 256MiB
			groups:
			  - {name: t, address: 239.$PEERS_NET.1.1}
			  - {name: tr, address: 239.$PEERS_NET.1.2, repair: {window: 64MiB, max_age_ms: 20000}}
			  # the throughput rows: like Aeron's fc=min, the source waits for
			  # its slowest receiver (PEERS_PUBD_GROUP=t: without)
			  - {name: tf, address: 239.$PEERS_NET.1.5, repair: {window: 8MiB, flow_control: min}}
			  - {name: ping, address: 239.$PEERS_NET.1.3}
			  - {name: pong, address: 239.$PEERS_NET.1.4}
		EOF
		it_pubd_start "$h" "$(it_ns "$h")" || return 1
		if [ -n "$AERONMD" ]; then
			AERON_DIR=/dev/shm/pit-$IT_ID-$h AERON_THREADING_MODE=SHARED AERON_DIR_DELETE_ON_START=1 \
				AERON_DIR_DELETE_ON_SHUTDOWN=1 it_bg "aeronmd-$h" "$(it_ns "$h")" "$AERONMD"
			printf -v "AERON_PID_$h" '%s' "$IT_BG_PID"
			it_wait "aeronmd on $h" 20 test -e "/dev/shm/pit-$IT_ID-$h/cnc.dat" || return 1
		fi
	done
}

# A daemon's CPU ticks (utime + stime, /proc/PID/stat) and its RSS in kB.
proc_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
proc_rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

# The daemon pid of SYSTEM on HOST (none for ZeroMQ: the library is in the clients).
daemon_pid() {
	local v
	case $1 in
	pubd*) it_pid "$2" ;;
	aeron) v="AERON_PID_$2"; echo "${!v}" ;;
	esac
}

# The peer program of SYSTEM and its channel argument for HOST.
# peer_cmd SYSTEM HOST ROLE CHANNEL_TX CHANNEL_RX ARGS...
peer_run() {
	local sys=$1 h=$2 name=$3
	shift 3
	case $sys in
	# The clients linger in pub_recv as Aeron's (peer_aeron.c) back off
	# before they sleep: PEERS_RECV_LINGER_US, default 100 (0: not at all).
	pubd*) it_bg "$name" "$(it_ns "$h")" env PUBD_RECV_LINGER_US="${PEERS_RECV_LINGER_US:-100}" \
		"$PB/peer_pubd" "$@" --socket "$(it_sock "$h")" ;;
	zmq-*) it_bg "$name" "$(it_ns "$h")" env PEER_PGM_RATE_KBIT="${PEER_PGM_RATE_KBIT:-1000000}" "$PB/peer_zmq" "$@" ;;
	aeron) it_bg "$name" "$(it_ns "$h")" env AERON_DIR="/dev/shm/pit-$IT_ID-$h" "$PB/peer_aeron" "$@" ;;
	esac
}

# channel SYSTEM N PUBLISHER? NSUBS [PUBD_GROUP] HOST: the channel of run N
# as seen from HOST. OpenPGM does not find an interface by name inside a
# network namespace (EINVAL): it gets the host's address.
channel() {
	local sys=$1 n=$2 tx=$3 nsubs=$4 a=239.92.$(($2 % 250)).1 port=$((41000 + $2 * 2)) ip_var="IT_ADDR_${6:-h1}"
	case $sys in
	pubd) echo "${5:-t}" ;;
	pubd-repair) echo tr ;;
	zmq-epgm) echo "epgm://${!ip_var};$a:$port" ;;
	zmq-norm) echo "norm://eth0;$a:$port" ;;
	aeron)
		if [ "$tx" = 1 ]; then
			echo "aeron:udp?endpoint=$a:$port|interface=10.$PEERS_NET.0.0/24|fc=min,g:/$nsubs"
		else
			echo "aeron:udp?endpoint=$a:$port|interface=10.$PEERS_NET.0.0/24"
		fi
		;;
	esac
}

ready() { grep -q '^READY' "$IT_WORK/$1.out" 2>/dev/null; }

loss_on() { # PERCENT: that share of every UDP datagram arriving at h2 from elsewhere
	local ns
	ns=$(it_ns h2)
	ip netns exec "$ns" nft add table inet peersloss
	ip netns exec "$ns" nft add chain inet peersloss in '{ type filter hook input priority 0; }'
	ip netns exec "$ns" nft add rule inet peersloss in ip saddr != "$IT_ADDR_h2" meta l4proto udp \
		numgen random mod 100 '<' "$1" counter drop
}
loss_off() { ip netns exec "$(it_ns h2)" nft delete table inet peersloss 2>/dev/null; }

count_for() { # SIZE LOSS
	local n
	case $1 in
	64) n=200000 ;;
	1024) n=100000 ;;
	65536) n=3000 ;;
	*) n=200 ;;
	esac
	[ "$2" != 0 ] && n=$((n / 2))
	[ "$quick" = 1 ] && n=$((n / 10))
	echo "$n"
}

# tput_case SYSTEM SIZE NSUBS LOSS: one run; appends a "run" JSON line to $PB/runs.jsonl.
tput_case() {
	local sys=$1 size=$2 nsubs=$3 loss=$4 n count hosts=(h2) h i t0 tk0 tk1 pids=() subs=() pubn dpid rss=0 grp=t
	PEERS_RUN=$((PEERS_RUN + 1))
	n=$PEERS_RUN
	count=$(count_for "$size" "$loss")
	[ "$nsubs" = 2 ] && hosts=(h2 h3)
	[ "$loss" != 0 ] && loss_on "$loss"
	# pubd's throughput runs go on a flow-controlled group, as Aeron's do
	# (fc=min); its loss runs on t (no repair) and tr (repair).
	[ "$loss" = 0 ] && [ "$sys" = pubd ] && grp=${PEERS_PUBD_GROUP:-tf}
	for h in "${hosts[@]}"; do
		peer_run "$sys" "$h" "sub-$n-$h" sub --rx "$(channel "$sys" "$n" 0 "$nsubs" "$grp" "$h")" --size "$size" --count "$count"
		subs+=("$IT_BG_PID")
	done
	for h in "${hosts[@]}"; do
		it_wait "subscriber $sys on $h" 30 ready "sub-$n-$h" || { cat "$IT_WORK/sub-$n-$h.out" >&2; }
		case $sys in pubd*) it_wait "pubd $h has the subscriber" 30 it_subscribers_at_least "$h" \
			"$(channel "$sys" "$n" 0 1 "$grp")" 1 ;; esac
	done
	tk0=0
	for h in h1 "${hosts[@]}"; do
		dpid=$(daemon_pid "$sys" "$h")
		[ -n "$dpid" ] && tk0=$((tk0 + $(proc_ticks "$dpid")))
	done
	t0=$(date +%s.%N)
	peer_run "$sys" h1 "pub-$n" pub --tx "$(channel "$sys" "$n" 1 "$nsubs" "$grp")" --size "$size" --count "$count"
	pubn=$IT_BG_PID
	# A publisher that cannot finish (NORM's congestion control can stall it) is
	# stopped after PEERS_PUB_LIMIT s; its subscribers show what arrived.
	it_reap "$pubn" "${PEERS_PUB_LIMIT:-30}"
	for i in "${!subs[@]}"; do
		it_reap "${subs[$i]}" 30 # ends 3 s after its last message; one that got none is stopped
	done
	tk1=0
	for h in h1 "${hosts[@]}"; do
		dpid=$(daemon_pid "$sys" "$h")
		if [ -n "$dpid" ]; then
			tk1=$((tk1 + $(proc_ticks "$dpid")))
			rss=$((rss > $(proc_rss_kb "$dpid") ? rss : $(proc_rss_kb "$dpid")))
		fi
	done
	[ "$loss" != 0 ] && loss_off
	# What pubd counted where a fraction is missing: the reasons, per host.
	case $sys in pubd*)
		for h in "${hosts[@]}"; do
			it_log "$sys run $n on $h: $(it_ctl "$h" --json drops | jq -c '[.drops[] | select(.scope == "group" or .scope == "group-subscribers") | {(.scope + " " + .name + " " + .reason): .count}] | add // {}')"
		done
		[ "$sys" = pubd-repair ] && for h in h1 "${hosts[@]}"; do
			it_log "$sys run $n on $h: $(it_ctl "$h" --json groups | jq -c '.groups[] | select(.name == "tr") |
				with_entries(select(.key | test("nak|repair|gone|unrecovered")))')"
		done
		[ "$grp" = tf ] && for h in h1 "${hosts[@]}"; do
			it_log "$sys run $n on $h: $(it_ctl "$h" --json groups | jq -c '.groups[] | select(.name == "tf") |
				with_entries(select(.key | test("flow|status")))')"
		done
		;;
	esac
	local files=("$IT_WORK/pub-$n.out")
	for h in "${hosts[@]}"; do files+=("$IT_WORK/sub-$n-$h.out"); done
	grep -h '^{' "${files[@]}" | jq -sc --arg sys "$sys" --argjson size "$size" --argjson subs "$nsubs" \
		--argjson loss "$loss" --argjson count "$count" --argjson dcpu "$(echo "$tk1 $tk0" | awk -v hz="$(getconf CLK_TCK)" '{print ($1 - $2) / hz}')" \
		--argjson drss "$rss" --argjson wall "$(echo "$(date +%s.%N) $t0" | awk '{print $1 - $2}')" '
		  (map(select(.role == "pub")) | .[0] // {}) as $p | map(select(.role == "sub")) as $s |
		  {measure: (if $loss > 0 then "loss" else "tput" end), system: $sys, size: $size, subs: $subs,
		   loss_pct: $loss, count: $count, published: ($p.published // 0), wall_s: $wall,
		   subs_seen: ($s | length),
		   delivered_frac: (if ($s | length) < $subs then 0 else ([$s[] | (.received - .backwards) / $count] | min) end),
		   in_order: (([$s[] | .backwards] | add // 0) == 0),
		   wrong: ([$s[] | .wrong_size + .wrong_content] | add // 0),
		   msgs_per_s: ([$s[] | .msgs_per_s] | min // 0),
		   bytes_per_s: ([$s[] | .bytes_per_s] | min // 0),
		   cpu_pub_client_s: ($p.cpu_s // 0), cpu_sub_clients_s: ([$s[] | .cpu_s] | add // 0),
		   cpu_daemons_s: $dcpu,
		   cpu_s_per_M: ((($p.cpu_s // 0) + ([$s[] | .cpu_s] | add // 0) + $dcpu) / $count * 1e6),
		   rss_clients_max_kb: ([$p.maxrss_kb // 0, $s[].maxrss_kb] | max), rss_daemon_kb: $drss}' |
		tee -a "$PB/runs.jsonl" >&2
}

# A process's voluntary context switches (sleeps) so far.
proc_sleeps() { awk '/^voluntary_ctxt_switches/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

# The daemons' sleeps on h1 and h2 (pubd, aeronmd; none for ZeroMQ).
daemon_sleeps() {
	local h dpid t=0
	for h in h1 h2; do
		dpid=$(daemon_pid "$1" "$h")
		[ -n "$dpid" ] && t=$((t + $(proc_sleeps "$dpid")))
	done
	echo "$t"
}

# lat_case SYSTEM: 64 B ping-pong h1 <-> h2. With the figures, the sleeps
# (voluntary context switches) per round trip of the two clients and of
# the daemons: each is a wakeup the round trip waits for.
lat_case() {
	local sys=$1 n ping pong ping2 pong2 count=5000 pongpid pingpid ds0 ds1
	[ "$quick" = 1 ] && count=1000
	PEERS_RUN=$((PEERS_RUN + 2))
	n=$PEERS_RUN
	ping=$(channel "$sys" "$n" 1 1 ping h1)
	pong=$(channel "$sys" $((n - 1)) 1 1 pong h1)
	ping2=$(channel "$sys" "$n" 1 1 ping h2)
	pong2=$(channel "$sys" $((n - 1)) 1 1 pong h2)
	case $sys in aeron)
		ping=${ping%|fc=*} ping2=${ping2%|fc=*}
		pong=${pong%|fc=*} pong2=${pong2%|fc=*}
		;;
	esac
	peer_run "$sys" h2 "pong-$n" pong --rx "$ping2" --tx "$pong2" --size 64
	pongpid=$IT_BG_PID
	it_wait "pong $sys" 30 ready "pong-$n"
	case $sys in pubd*) it_wait "pubd h2 has the ping subscriber" 30 it_subscribers_at_least h2 ping 1 ;; esac
	ds0=$(daemon_sleeps "$sys")
	peer_run "$sys" h1 "ping-$n" ping --tx "$ping" --rx "$pong" --size 64 --count "$count" --warmup 500
	pingpid=$IT_BG_PID
	it_reap "$pingpid" 600
	ds1=$(daemon_sleeps "$sys")
	it_reap "$pongpid" 30
	grep -h '^{' "$IT_WORK/ping-$n.out" "$IT_WORK/pong-$n.out" | jq -sc --arg sys "$sys" --argjson ds $((ds1 - ds0)) \
		--argjson rts $((count + 500)) \
		'(map(select(.role == "ping")) | .[0]) as $p | (map(select(.role == "pong")) | .[0] // {}) as $q |
		 {measure: "lat", system: $sys, size: 64, samples: $p.samples, lost: $p.lost, p50_us: $p.oneway_p50_us,
		  p99_us: $p.oneway_p99_us, min_us: $p.oneway_min_us, cpu_ping_client_s: $p.cpu_s,
		  client_sleeps_per_rt: ((($p.sleeps // 0) + ($q.sleeps // 0)) / $rts),
		  daemon_sleeps_per_rt: ($ds / $rts)}' | tee -a "$PB/runs.jsonl" >&2
}

peers_tables() {
	python3 "$here/tables.py" "$PB/runs.jsonl" "$1" "${systems[*]}"
}
