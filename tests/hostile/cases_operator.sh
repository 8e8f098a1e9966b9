# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Hostile cases from the operator's side (THREATS.md, "The operator"): what
# is at the config's or the socket's path is not what pubd expects. One
# function case_NAME each, run like those of cases.sh (case.sh sources this
# file; run.sh lists its cases).

# ---- a FIFO in the config's place does not hang the loop ----
# A reload reads the config on the loop's thread. A FIFO there (no writer,
# or one that never closes) blocked that read for good: no query answered,
# SIGTERM ignored, and under systemd the watchdog's restart lost every
# client. It must be refused at once, by its type.
case_c_config_fifo() {
	h_pubd d < <(h_groups)
	local conf t0 out rc ms
	conf=$(it_conf d)
	mv "$conf" "$conf.real"
	mkfifo "$conf"
	t0=$(date +%s%N)
	out=$(timeout -k 2 10 "$PUBCTL" -s "$(it_sock d)" reload 2>&1)
	rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	h_fig "pubctl reload with a FIFO at the config's path: status $rc after $ms ms: $out"
	it_check "the reload is refused at once" test "$rc" != 0 -a "$rc" != 124 -a "$ms" -lt 5000
	it_check "naming the file and what it is" grep -q "$conf: cannot read: a FIFO, not a regular file" <<<"$out"
	kill -HUP "$H_PID"
	it_wait "a SIGHUP's reload is refused and counted too" 10 it_counter_is d reload_failures 2
	it_check "pubd still answers" it_ctl d status
	rm -f "$conf"
	mv "$conf.real" "$conf"
}

# ---- an exiting pubd leaves another pubd's socket alone ----
# The socket file was removed (an operator's rm, a tmpfiles clean-up) and a
# second pubd bound the path. The first one, at its exit, unlinked the path
# by name: the second one's socket, which then nobody could reach.
case_c_socket_steal() {
	h_pubd d < <(h_groups)
	local sock
	sock=$(it_sock d)
	rm -f "$sock"
	it_conf_write e - <<-EOF
		$(h_groups)
	EOF
	sed -i "s|$(it_sock e)|$sock|; s|udp_port: .*|udp_port: 7471|" "$(it_conf e)"
	ln -s "$sock" "$(it_sock e)" # for it_ctl e; pubd e binds $sock itself
	it_pubd_start e "$H_NS" || it_die "the second pubd did not start on the freed path"
	kill -TERM "$H_PID"
	it_reap "$H_PID" 20
	h_fig "after the first pubd exited: the socket file is $(test -S "$sock" && echo there || echo gone)"
	it_check "the second pubd's socket is still there" test -S "$sock"
	it_check "and the second pubd answers on it" it_ctl e status
	# Something else in the way at start is named and left alone.
	rm -f "$(it_sock e)"
	it_conf_write f - <<-EOF
		$(h_groups)
	EOF
	sed -i "s|udp_port: .*|udp_port: 7472|" "$(it_conf f)"
	echo "not a socket" >"$(it_sock f)"
	timeout -k 2 10 ip netns exec "$H_NS" "$PUBD" -c "$(it_conf f)" >"$IT_WORK/f.log" 2>&1
	h_fig "a regular file at the socket's path: status $? ($(grep -m1 'daemon.socket' "$IT_WORK/f.log"))"
	it_check "a file in the way is named, not 'Address already in use'" \
		grep -q "the path holds a regular file, not a socket; not removing it" "$IT_WORK/f.log"
	it_eq "and left as it was" "$(cat "$(it_sock f)")" "not a socket"
}

# ---- thousands of groups: the loop answers through a start and a reload ----
# Groups were looked up by a walk over all of them, once per group at a
# reload (and once per message delivered), and every join walked them all
# again to count the joined for READY=1 and the status line: 15,000 groups
# stalled the loop 6.5 s at a reload, 30,000 19 s, past the unit's
# WatchdogSec=15s, so systemd would have killed pubd mid-reload. Now they
# are indexed by id and name and counted as they join.
h_many_groups() { # PREFIX N: N groups named PREFIX0.., each an address of its own
	awk -v p="$1" -v n="$2" 'BEGIN { print "groups:"
		for (i = 0; i < n; i++)
			printf "  - {name: %s%d, address: 239.%d.%d.%d}\n", p, i, 100 + int(i / 65536), int(i / 256) % 256, i % 256 }'
}
case_c_many_groups() {
	local n=30000 t0 ms conf
	it_host_lo h
	H_NS=$(it_ns h)
	h_many_groups ga "$n" | it_conf_write d -
	conf=$(it_conf d)
	t0=$(date +%s%N)
	it_pubd_start d "$H_NS" || it_die "pubd with $n groups did not start"
	ms=$((($(date +%s%N) - t0) / 1000000))
	h_fig "pubd with $n groups answered, every group joined, after $ms ms"
	it_check "it starts within 10 s" test "$ms" -lt 10000
	# Every group removed and as many added: a reload's worst case.
	{ sed -n '/^groups:/q;p' "$conf"; h_many_groups gb "$n"; } >"$conf.new"
	mv "$conf.new" "$conf"
	t0=$(date +%s%N)
	it_check "the reload applies" timeout -k 2 60 "$PUBCTL" -s "$(it_sock d)" reload
	ms=$((($(date +%s%N) - t0) / 1000000))
	h_fig "pubctl reload of $n groups for $n others answered after $ms ms"
	it_check "the loop is back within 3 s (the watchdog allows 15)" test "$ms" -lt 3000
	it_eq "the new groups are there" "$(it_q d status '.status[0].groups')" "$n"
	it_check "a group of the new set is found by name" it_ctl d group "gb$((n - 1))"
	it_check "and none of the old" bash -c "! $(printf '%q' "$PUBCTL") -s $(printf '%q' "$(it_sock d)") group ga0"
}
