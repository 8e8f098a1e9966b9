#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Inside the VM that tests/systemd/vm-systemd.sh boots, run by
# pubd-vmtest.service with systemd as PID 1 and a throwaway root (the host's
# / read-only under a tmpfs). Installs pubd's Debian packages with apt-get
# (before any RDMA device exists: the postinst must enable and start pubd
# with the shipped config, which falls back to the udp fabric on loopback),
# then drives it through systemd: socket activation, reload, the watchdog
# restarting a frozen pubd, the journal's priorities, and verbs (Soft-RoCE)
# through pubd.service's own sandbox, dpkg -i of pubd's package over the
# running pubd (ten times, a client connected: pubd restarted and reachable
# each time, pubd.socket never restarted); last, apt-get remove (pubd
# stopped) and purge (/etc/pubd and the pubd user gone; its group kept for
# the member added to it). Prints PASS/FAIL lines and, last,
# one PUBD-SYSTEMD-RESULT line for the host, then powers the guest off.
# shellcheck disable=SC2001 # sed 's/^/  /' indents multi-line output
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export LANG=C.UTF-8 SYSTEMD_PAGER='' SYSTEMD_COLORS=0

R=${PUBD_RESULTS:?}
# shellcheck source=/dev/null
. "$R/env.sh"
# pass/fail/check/wait_for_file, shared with the Soft-RoCE cases.
# shellcheck source-path=SCRIPTDIR source=../softroce/lib.sh
. "$PUBD_REPO/tests/softroce/lib.sh"
exec > >(tee -a "$R/guest.log") 2>&1
tee_pid=$!

passed=0
failed=0
pass() {
	echo "PASS $*"
	passed=$((passed + 1))
}
fail() {
	echo "FAIL $*"
	failed=$((failed + 1))
}
finish() {
	echo "PUBD-SYSTEMD-RESULT: passed=$passed failed=$failed"
	# The host reads this file first: the share is cache=none, so the line
	# is on the host once echo returns, whatever the console still buffers.
	echo "PUBD-SYSTEMD-RESULT: passed=$passed failed=$failed" >"$R/result.txt"
	# Let tee finish the log, then power off at once: the root is a tmpfs
	# that is thrown away, there is nothing for a clean shutdown to save.
	exec >&- 2>&-
	wait "$tee_pid" 2>/dev/null
	systemctl poweroff --force --force
	exit 0
}
# wait_until SECONDS CMD...: retry CMD until it succeeds or the time is up.
# For states systemd changes on its own (a restart after the watchdog); every
# wait is bounded.
wait_until() {
	local end=$(($(date +%s) + $1))
	shift
	until "$@"; do
		[ "$(date +%s)" -lt $end ] || return 1
		sleep 0.2
	done
}
journal_count() { # PATTERN: how many of pubd's journal lines match
	journalctl -q -u pubd.service -o cat --no-pager | grep -c -- "$1"
}

echo "systemd-vm: guest up: kernel $(uname -r), PID 1 is $(cat /proc/1/comm), $(systemctl --version | head -n1)"
if [ "$(cat /proc/1/comm)" = systemd ]; then
	pass "systemd_is_pid1 (test started $(cut -d" " -f1 /proc/uptime) s after boot)"
else
	fail "systemd_is_pid1: PID 1 is $(cat /proc/1/comm)"
	finish
fi

# ---- install the packages: apt-get, offline (the guest has no NIC) ----
mapfile -t debs < <(printf '%s\n' "$PUBD_DEBS"/*.deb)
mapfile -t pkgs < <(for d in "${debs[@]}"; do dpkg-deb -f "$d" Package; done)
if dpkg -s pubd >/dev/null 2>&1; then
	fail "packages_not_installed_before: the host's root already has pubd installed"
	finish
fi
echo "  installing ${pkgs[*]}"
# man-db's trigger would rebuild the index of every page on the host's
# root, over 9p under TCG (minutes); without this file it skips that.
rm -f /var/lib/man-db/auto-update
if DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${debs[@]}" >"$R/install.log" 2>&1; then
	pass "apt_get_install_debs: ${#debs[@]} packages"
else
	fail "apt_get_install_debs (see install.log)"
	tail -n 20 "$R/install.log"
	finish
fi
grep -E '^(Setting up|Created symlink)' "$R/install.log" | sed 's/^/  /'
if [ "$(command -v pubctl)" = /usr/bin/pubctl ] && [ -x /usr/sbin/pubd ] &&
	ldd /usr/bin/pubctl | grep -qE 'libpub.so.1 => /(usr/)?lib/'; then
	pass "installed_paths: /usr/sbin/pubd, /usr/bin/pubctl over $(ldd /usr/bin/pubctl | sed -n 's/.*libpub.so.1 => \([^ ]*\).*/\1/p')"
else
	fail "installed_paths: pubctl is $(command -v pubctl), $(ldd /usr/bin/pubctl 2>&1 | grep libpub)"
fi
unit=$(systemctl show -p FragmentPath --value pubd.service 2>/dev/null)
conf=$(sed -n 's/^ExecStart=.* -c \([^ ]*\).*/\1/p' "$unit")
echo "  unit $unit, config $conf"
if [ "$conf" = /etc/pubd/pubd.yaml ] && dpkg-query -W -f='${Conffiles}\n' pubd | grep -q ' /etc/pubd/pubd.yaml '; then
	pass "config_is_conffile: $conf"
else
	fail "config_is_conffile: unit reads '$conf'; conffiles: $(dpkg-query -W -f='${Conffiles}' pubd)"
fi
check "sysusers_created_pubd" id pubd
# The postinst (dh_installsystemd) enabled both units and started pubd, with
# the shipped config, on a host with no RDMA device and no fabric.address.
if [ "$(systemctl is-enabled pubd.service pubd.socket | tr '\n' ' ')" = "enabled enabled " ]; then
	pass "postinst_enabled_units: pubd.service pubd.socket"
else
	fail "postinst_enabled_units: $(systemctl is-enabled pubd.service pubd.socket | tr '\n' ' ')"
fi
if wait_until 60 systemctl -q is-active pubd.service &&
	wait_until 60 grep -q '^ready: ' <(journalctl -q -u pubd.service -o cat --no-pager); then
	pass "postinst_started_pubd: $(systemctl show -p StatusText --value pubd.service)"
else
	fail "postinst_started_pubd: $(systemctl is-active pubd.service)"
	journalctl -q -u pubd.service -o cat --no-pager | tail -n 10 | sed 's/^/  /'
fi
if line=$(journalctl -q -u pubd.service -o cat --no-pager | grep -m1 'falling back to the udp fabric'); then
	pass "no_rdma_no_address_falls_back_to_udp: $line"
else
	fail "no_rdma_no_address_falls_back_to_udp: no such line in pubd's journal"
fi
if out=$(timeout 30 pubctl status 2>&1); then
	pass "installed_pubctl_talks_to_installed_pubd"
else
	fail "installed_pubctl_talks_to_installed_pubd: $out"
fi
# The postinst starts pubd.socket before pubd.service, which takes its
# socket (both in one systemctl call, pubd could start first, bind the path
# itself, and systemd refused to start pubd.socket under it).
first=$(journalctl -q -u pubd.service -o cat --no-pager | grep -m1 'listening on')
if systemctl -q is-active pubd.socket && [[ "$first" == "listening on the socket passed by systemd"* ]]; then
	pass "postinst_started_socket_then_pubd: pubd.socket active, pubd: $first"
else
	fail "postinst_started_socket_then_pubd: pubd.socket $(systemctl is-active pubd.socket), pubd: $first"
fi
# python3-pub: the installed module over the installed libpub.so.1, one
# client subscribed, another publishing, through the packaged pubd.
if out=$(timeout 60 python3 -c '
import pub
with pub.Client() as sub, pub.Client() as p:
    sub.subscribe("telemetry")
    p.publish("telemetry", b"from python3-pub")
    m = sub.recv(timeout=20)
    assert m is not None and bytes(m.data) == b"from python3-pub", m
    print(pub.__file__, m.group, m.seq)
' 2>&1); then
	pass "python3_pub_publishes_and_receives: $out"
else
	fail "python3_pub_publishes_and_receives: $out"
fi
# The subscriber above was on shared memory: pubd, in its sandbox as user
# pubd, made the group's log and handed it over as a read-only file (a
# memfd opened again through /proc/self/fd): without that it would have
# fallen back to copies, and said so only in the journal.
glog=$(pubctl --json groups 2>&1 | jq -r '.groups[] | select(.name == "telemetry") | .group_log' 2>&1)
if [ "${glog:-0}" -gt 0 ] 2>/dev/null && ! journalctl -q -u pubd.service -o cat --no-pager | grep -q 'cannot make its group log'; then
	pass "sandbox_makes_group_logs: telemetry's group log is $glog bytes"
else
	fail "sandbox_makes_group_logs: group_log '$glog'; $(journalctl -q -u pubd.service -o cat --no-pager | grep -m1 'group log')"
fi
# The man pages went to the packages that own them (man -w when man-db is there).
pages="/usr/share/man/man8/pubd.8.gz /usr/share/man/man5/pubd.yaml.5.gz /usr/share/man/man1/pubctl.1.gz /usr/share/man/man3/pub_connect.3.gz"
# shellcheck disable=SC2086 # $pages: a list of plain paths
if ls $pages >/dev/null 2>&1 && { ! command -v man >/dev/null || man -w pubd >/dev/null; }; then
	pass "man_pages_installed: $(dpkg -S $pages | cut -d: -f1 | sort -u | tr '\n' ' ')"
else
	fail "man_pages_installed: $(ls $pages 2>&1 | tr '\n' ' ')"
fi
# The cases below start from a stopped pubd (socket activation first).
systemctl stop pubd.service pubd.socket

# ---- Soft-RoCE: rxa on va 192.168.77.1, rxb on vb 192.168.77.2 ----
if "$PUBD_REPO/tests/softroce/guest-setup.sh" >"$R/setup.log" 2>&1; then
	pass "softroce_setup: $(sed -n 's/^fabric: //p' "$R/setup.log")"
else
	fail "softroce_setup (see setup.log)"
	tail -n 20 "$R/setup.log"
fi
{
	ls -l /dev/infiniband
	grep -E 'infiniband|misc' /proc/devices
} >"$R/devices.txt" 2>&1
sed 's/^/  /' "$R/devices.txt"

write_config() {
	cat >"$conf" <<EOF
daemon:
  socket: /run/pubd/pubd.sock
  log_level: info
fabric:
  type: $PUBD_VM_FABRIC
  address: 192.168.77.1
groups:
  - name: telemetry
    address: 239.1.1.1
  - name: orders
    address: 239.1.1.2
EOF
}
write_config
systemctl daemon-reload
if out=$(systemd-analyze verify pubd.service pubd.socket 2>&1) && [ -z "$out" ]; then
	pass "systemd_analyze_verify_in_guest"
else
	fail "systemd_analyze_verify_in_guest: $out"
fi
systemd-analyze security pubd.service --no-pager >"$R/security.txt" 2>&1
pass "exposure: $(sed -n 's/.*Overall exposure level for pubd.service: //p' "$R/security.txt")"

# ---- verbs through pubd.service's sandbox ----
# The [Service] settings that confine pubd, as systemd-run properties; the
# lifecycle ones (Type, Exec*, watchdog, restart, runtime dir) stay out.
sandbox_props() {
	sed -n '/^\[Service\]/,/^\[/p' "$unit" | grep -E '^[A-Za-z]+=' |
		grep -vE '^(Type|NotifyAccess|Exec[A-Za-z]*|WatchdogSec|Restart|RestartSec|TimeoutStopSec|RuntimeDirectory[A-Za-z]*)=' |
		grep -vE "$1" | sed 's/^/-p\n/'
}
mapfile -t props < <(sandbox_props '^$')
mapfile -t props_nodev < <(sandbox_props '^DeviceAllow=/|^DeviceAllow=char-infiniband')
echo "  sandbox: ${#props[@]} systemd-run arguments from $unit"
if out=$(timeout 60 systemd-run --wait --pipe --quiet --unit=pubd-probe-devinfo "${props[@]}" \
	ibv_devinfo -d rxb 2>&1) && echo "$out" | grep -q PORT_ACTIVE; then
	pass "sandbox_opens_uverbs (ibv_devinfo -d rxb as user pubd, DevicePolicy=closed + DeviceAllow)"
else
	fail "sandbox_opens_uverbs: $out"
fi
if out=$(timeout 60 systemd-run --wait --pipe --quiet --unit=pubd-probe-nodev "${props_nodev[@]}" \
	ibv_devinfo -d rxb 2>&1); then
	fail "sandbox_without_deviceallow_is_refused: ibv_devinfo worked without the DeviceAllow= lines"
else
	pass "sandbox_without_deviceallow_is_refused: $(echo "$out" | grep -m1 -iE 'fail|denied|not permitted' || echo "$out" | tail -n1)"
fi
# mckey: the receiver (rdma_cm join, UD QP, verbs receive) inside the sandbox
# on rxb, a plain sender on rxa once the receiver has joined.
rm -f "$R/mckey-recv.log"
timeout 90 systemd-run --wait --pipe --quiet --unit=pubd-probe-mckey "${props[@]}" \
	stdbuf -oL mckey -m 239.1.1.9 -b 192.168.77.2 -C 5 >"$R/mckey-recv.log" 2>&1 &
recv=$!
if wait_for_file "$R/mckey-recv.log" 'joined dgid' 60; then
	timeout 30 mckey -s -m 239.1.1.9 -b 192.168.77.1 -C 5 >"$R/mckey-send.log" 2>&1
fi
if wait "$recv" && grep -q 'data transfers complete' "$R/mckey-recv.log"; then
	pass "sandbox_receives_verbs_multicast (mckey receiver as user pubd under pubd.service's sandbox)"
else
	fail "sandbox_receives_verbs_multicast: $(tail -n 3 "$R/mckey-recv.log" | tr '\n' ' ')"
fi

# PrivateDevices=: a /dev of pseudo devices, with /dev/infiniband bound in.
if out=$(timeout 60 systemd-run --wait --pipe --quiet --unit=pubd-probe-dev "${props[@]}" ls /dev /dev/infiniband 2>&1) &&
	echo "$out" | grep -qx 'uverbs0' && echo "$out" | grep -qx 'rdma_cm' && ! echo "$out" | grep -qx 'ttyS0'; then
	pass "sandbox_dev_is_private_with_rdma_nodes: $(echo "$out" | sed -n '/^\/dev:$/,/^$/p' | grep -v '^/dev:' | tr '\n' ' ')"
else
	fail "sandbox_dev_is_private_with_rdma_nodes: $out"
fi

# ---- socket activation ----
systemctl start pubd.socket
check "socket_listening" systemctl -q is-active pubd.socket
if systemctl -q is-active pubd.service; then
	fail "pubd_not_started_before_a_client: pubd.service is already running"
else
	pass "pubd_not_started_before_a_client"
fi
stat -c '  %A %U %G %n' /run/pubd/pubd.sock
if [ "$(stat -c '%a %U %G' /run/pubd/pubd.sock)" = "660 root pubd" ]; then
	pass "socket_mode_0660_group_pubd"
else
	fail "socket_mode_0660_group_pubd: $(stat -c '%a %U %G' /run/pubd/pubd.sock)"
fi
useradd -M -N -g users -G pubd pubdclient
useradd -M -N -g users outsider
if out=$(timeout 60 runuser -u pubdclient -- pubctl status 2>&1); then
	pass "client_in_group_pubd_served_by_activated_pubd"
	echo "$out" | sed 's/^/  /'
else
	fail "client_in_group_pubd_served_by_activated_pubd: $out"
fi
check "pubd_service_active_after_client" systemctl -q is-active pubd.service
if grep -q 'listening on the socket passed by systemd' <(journalctl -q -u pubd.service -o cat --no-pager); then
	pass "pubd_took_the_socket_from_systemd"
else
	fail "pubd_took_the_socket_from_systemd"
fi
if out=$(timeout 30 runuser -u outsider -- pubctl status 2>&1); then
	fail "client_outside_group_pubd_refused: served"
else
	pass "client_outside_group_pubd_refused: $(echo "$out" | head -n1)"
fi
st=$(systemctl show -p StatusText --value pubd.service)
case "$st" in *"groups 2/2 joined"*) pass "status_text: $st" ;; *) fail "status_text: '$st'" ;; esac
main_pid() { systemctl show -p MainPID --value pubd.service; }
pid=$(main_pid)
if [ "${pid:-0}" != 0 ] && [ "$(ps -o user= -p "$pid")" = pubd ]; then
	pass "runs_as_user_pubd"
else
	fail "runs_as_user_pubd: MainPID ${pid:-none}"
fi

# ---- reload ----
before=$(journal_count 'reload applied')
if systemctl reload pubd.service; then
	if wait_until 30 test "$(journal_count 'reload applied')" -gt "$before"; then
		pass "systemctl_reload_applies"
	else
		fail "systemctl_reload_applies: no new 'reload applied' line"
	fi
else
	fail "systemctl_reload_applies: systemctl reload failed"
fi
pid=$(main_pid)
echo "bogus_key: 1" >>"$conf"
if systemctl reload pubd.service 2>"$R/bad-reload.txt"; then
	fail "broken_config_fails_reload: systemctl reload succeeded"
elif [ "$(main_pid)" = "$pid" ] && systemctl -q is-active pubd.service; then
	pass "broken_config_fails_reload: pubd keeps running with the old config"
else
	fail "broken_config_fails_reload: pubd did not survive"
fi
write_config

# ---- watchdog: a frozen loop is killed and restarted ----
pid=$(main_pid)
restarts=$(systemctl show -p NRestarts --value pubd.service)
wdog=$(systemctl show -p WatchdogUSec --value pubd.service)
# shellcheck disable=SC2317 # called through wait_until
new_main_pid() {
	local p
	p=$(main_pid)
	[ "$p" != 0 ] && [ "$p" != "$pid" ] && systemctl -q is-active pubd.service
}
# MainPID 0 would make "kill -STOP 0" stop this script's own process group.
if [ "${pid:-0}" = 0 ]; then
	fail "watchdog_restarts_frozen_pubd: pubd is not running"
else
	t0=$(date +%s)
	kill -STOP "$pid"
	if wait_until 120 new_main_pid; then
		pass "watchdog_restarts_frozen_pubd: WatchdogSec=$wdog, pid $pid -> $(main_pid) in $(($(date +%s) - t0)) s, NRestarts $restarts -> $(systemctl show -p NRestarts --value pubd.service)"
	else
		fail "watchdog_restarts_frozen_pubd: no new pubd within 120 s"
		kill -CONT "$pid"
	fi
fi
if journalctl -q -u pubd.service --no-pager | grep -q 'Watchdog timeout'; then
	pass "journal_shows_watchdog_timeout: $(journalctl -q -u pubd.service --no-pager -o cat | grep -m1 'Watchdog timeout')"
else
	fail "journal_shows_watchdog_timeout"
fi
if out=$(timeout 60 runuser -u pubdclient -- pubctl status 2>&1); then
	pass "socket_survives_restart: client served by the restarted pubd"
else
	fail "socket_survives_restart: $out"
fi

# ---- the journal: priorities from the "<N>" prefixes ----
# journald turns each stderr line's prefix into PRIORITY= and strips it.
if journalctl -q -u pubd.service -p notice..notice -o cat --no-pager | grep -q '^ready: ' &&
	journalctl -q -u pubd.service -p info..info -o cat --no-pager | grep -q '): joined$' &&
	! journalctl -q -u pubd.service -o cat --no-pager | grep -q '^<[0-7]>'; then
	pass "journal_priorities: 'ready:' at notice, 'joined' at info, no raw <N> prefixes"
else
	fail "journal_priorities"
fi
journalctl -q -u pubd.service -o short-monotonic --no-pager >"$R/journal-pubd.txt"
journalctl -q -u pubd.service -o json --no-pager |
	sed -n 's/.*"PRIORITY":"\([0-7]\)".*"MESSAGE":"\([^"]*\)".*/\1 \2/p; s/.*"MESSAGE":"\([^"]*\)".*"PRIORITY":"\([0-7]\)".*/\2 \1/p' \
		>"$R/journal-priorities.txt"

SYSTEMD_COLORS=0 systemctl status pubd.service --no-pager -l -n 12 >"$R/systemctl-status.txt" 2>&1
if grep -q 'Active: active (running)' "$R/systemctl-status.txt"; then
	pass "systemctl_status_running"
else
	fail "systemctl_status_running"
fi

# ---- upgrade and reinstall over a running, socket-activated pubd ----
# The postinst restarts pubd.service only: pubd.socket is never stopped or
# restarted by it (one "restart pubd.service pubd.socket" is two jobs
# enqueued in turn: a pubd that exits fast is already running on the old
# socket when the socket's restart stops it; systemd refuses to start the
# socket again while pubd runs, and its RemoveOnStop= took the path).
postinst=/var/lib/dpkg/info/pubd.postinst
socket_invokes=$(grep -E '^[^#]*deb-systemd-invoke .*pubd\.socket' "$postinst")
if [ -n "$socket_invokes" ] && ! echo "$socket_invokes" | grep -vqE "deb-systemd-invoke start 'pubd\.socket' "; then
	pass "postinst_never_restarts_socket: $(echo "$socket_invokes" | sed 's/^[[:space:]]*//' | tr '\n' ';')"
else
	fail "postinst_never_restarts_socket: $(grep -E 'deb-systemd-invoke' "$postinst" | sed 's/^[[:space:]]*//' | tr '\n' ';')"
fi
# reachable WHAT: pubd.service and pubd.socket active, the socket path
# there, and pubctl served through it; says what is not.
reachable() {
	local what=$1 out
	if ! wait_until 60 systemctl -q is-active pubd.service; then
		echo "$what: pubd.service $(systemctl is-active pubd.service)"
		return 1
	fi
	if ! systemctl -q is-active pubd.socket; then
		echo "$what: pubd.socket $(systemctl is-active pubd.socket) ($(journalctl -q -u pubd.socket -o cat --no-pager | tail -n1))"
		return 1
	fi
	if [ ! -S /run/pubd/pubd.sock ]; then
		echo "$what: no /run/pubd/pubd.sock ($(ls -A /run/pubd 2>&1 | tr '\n' ' '))"
		return 1
	fi
	if ! out=$(timeout 30 runuser -u pubdclient -- pubctl status 2>&1); then
		echo "$what: pubctl status: $(echo "$out" | head -n1)"
		return 1
	fi
}
# A client stays connected throughout (pubctl watch reconnects on its own).
runuser -u pubdclient -- pubctl watch --interval 0.5 >"$R/watch.log" 2>&1 &
watch_pid=$!
pkg_pubd=$(printf '%s\n' "${debs[@]}" | grep '/pubd_[^/]*\.deb$')
reinstalls=${PUBD_VM_REINSTALLS:-10}
bad=0
pids=$(main_pid)
for i in $(seq 1 $reinstalls); do
	pid=$(main_pid)
	if ! DEBIAN_FRONTEND=noninteractive dpkg -i "$pkg_pubd" >"$R/reinstall-$i.log" 2>&1; then
		fail "reinstall_keeps_pubd_reachable: dpkg -i failed at $i/$reinstalls (see reinstall-$i.log)"
		bad=$((bad + 1))
	elif grep -qiE 'could not execute|refusing|failed' "$R/reinstall-$i.log"; then
		fail "reinstall_keeps_pubd_reachable: at $i/$reinstalls: $(grep -iE 'could not execute|refusing|failed' "$R/reinstall-$i.log" | tr '\n' ' ')"
		bad=$((bad + 1))
	elif ! wait_until 60 new_main_pid; then
		fail "reinstall_keeps_pubd_reachable: pubd (pid $pid) not restarted at $i/$reinstalls"
		bad=$((bad + 1))
	elif ! why=$(reachable "at $i/$reinstalls"); then
		fail "reinstall_keeps_pubd_reachable: $why"
		bad=$((bad + 1))
	fi
	pids="$pids -> $(main_pid)"
	# Back to a state the next round can use.
	if [ $bad -gt 0 ] && ! systemctl -q is-active pubd.socket; then
		systemctl stop pubd.service
		systemctl reset-failed pubd.socket
		systemctl start pubd.socket pubd.service
	fi
	# Under systemd's start limit (5 starts in 10 s), which a real upgrade
	# never meets.
	sleep 2
done
if [ $bad -eq 0 ]; then
	pass "reinstall_keeps_pubd_reachable: dpkg -i $(basename "$pkg_pubd") x$reinstalls over a running pubd with a client connected, pubd restarted each time (pids $pids), pubd.socket active, pubctl served"
fi
if kill -0 "$watch_pid" 2>/dev/null; then
	pass "client_connected_through_reinstalls: pubctl watch still running"
else
	fail "client_connected_through_reinstalls: pubctl watch exited: $(tail -n 3 "$R/watch.log" | tr '\n' ' ')"
fi
kill "$watch_pid" 2>/dev/null
wait "$watch_pid" 2>/dev/null

# What the old postinst did in the bad order, forced: the service's restart
# done before the socket's begins. systemd refuses to start pubd.socket under
# the running pubd (the restart fails), but the path pubd serves must stay.
pid=$(main_pid)
systemctl restart pubd.service
wait_until 60 new_main_pid
if systemctl restart pubd.socket 2>"$R/restart-socket.txt"; then
	echo "  systemctl restart pubd.socket under a running pubd succeeded"
else
	echo "  systemctl restart pubd.socket under a running pubd: $(head -n1 "$R/restart-socket.txt") ($(journalctl -q -u pubd.socket -o cat --no-pager | grep -m1 refusing))"
fi
out=
if [ -S /run/pubd/pubd.sock ] && out=$(timeout 30 runuser -u pubdclient -- pubctl status 2>&1); then
	pass "socket_restart_under_running_pubd_keeps_path: pubd.socket $(systemctl is-active pubd.socket), /run/pubd/pubd.sock kept, pubctl served"
else
	fail "socket_restart_under_running_pubd_keeps_path: pubd.socket $(systemctl is-active pubd.socket), /run/pubd: $(ls -A /run/pubd | tr '\n' ' '), pubctl: ${out:-not run (no socket)}"
fi
# Both units back, in their order.
systemctl stop pubd.service
systemctl reset-failed pubd.socket 2>/dev/null
systemctl start pubd.socket pubd.service
if why=$(reachable "after stop pubd.service; start pubd.socket pubd.service"); then
	pass "units_recover_after_stop_and_start"
else
	fail "units_recover_after_stop_and_start: $why"
fi

# ---- stop: a clean exit ----
systemctl stop pubd.service pubd.socket
res=$(systemctl show -p Result --value pubd.service)
code=$(systemctl show -p ExecMainStatus --value pubd.service)
if [ "$res" = success ] && [ "$code" = 0 ]; then
	pass "stop_exits_zero"
else
	fail "stop_exits_zero: Result=$res ExecMainStatus=$code"
fi

# ---- apt-get remove: the prerm stops pubd; config and user stay ----
systemctl start pubd.socket pubd.service
check "running_before_remove" systemctl -q is-active pubd.service
if DEBIAN_FRONTEND=noninteractive apt-get remove -y -q "${pkgs[@]}" >"$R/remove.log" 2>&1; then
	pass "apt_get_remove"
else
	fail "apt_get_remove (see remove.log)"
	tail -n 20 "$R/remove.log"
fi
state="service $(systemctl is-active pubd.service), socket $(systemctl is-active pubd.socket)"
if ! systemctl -q is-active pubd.service && ! systemctl -q is-active pubd.socket && ! pgrep -x pubd >/dev/null; then
	pass "remove_stopped_pubd: $state"
else
	fail "remove_stopped_pubd: $state, pubd pids $(pgrep -x pubd | tr '\n' ' ')"
fi
if [ ! -e /usr/sbin/pubd ] && [ -f /etc/pubd/pubd.yaml ] && id pubd >/dev/null 2>&1; then
	pass "remove_keeps_config_and_user: /usr/sbin/pubd gone, /etc/pubd/pubd.yaml and user pubd kept"
else
	fail "remove_keeps_config_and_user: $(ls -d /usr/sbin/pubd /etc/pubd/pubd.yaml 2>&1 | tr '\n' ' ') $(id pubd 2>&1)"
fi

# ---- apt-get purge: user, group, config and unit links gone ----
# apt knows a removed package only while dpkg keeps its conffiles ("rc"):
# purge those (pubd); the others left nothing behind.
mapfile -t rc_pkgs < <(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "${pkgs[@]}" 2>/dev/null | sed -n 's/^rc *//p')
echo "  purging ${rc_pkgs[*]}"
if [ ${#rc_pkgs[@]} -gt 0 ] &&
	DEBIAN_FRONTEND=noninteractive apt-get purge -y -q "${rc_pkgs[@]}" >"$R/purge.log" 2>&1; then
	pass "apt_get_purge: ${rc_pkgs[*]}"
else
	fail "apt_get_purge (see purge.log)"
	tail -n 20 "$R/purge.log"
fi
left=$(
	ls -d /etc/pubd /run/pubd /etc/systemd/system/*.wants/pubd.* 2>/dev/null
	dpkg -l "${pkgs[@]}" 2>/dev/null | grep -E '^[a-z][a-z] ' | grep -v '^un '
)
if [ -z "$left" ]; then
	pass "purge_removes_config: no /etc/pubd, no /run/pubd, no unit links, no package state"
else
	fail "purge_removes_config: left: $(echo "$left" | tr '\n' ';')"
fi
# The system user goes (issue 14: purge removes the user and the config);
# its group stays, with its members, since an admin added one (pubdclient),
# and userdel says so (without members it would go with the user).
if ! getent passwd pubd >/dev/null && getent group pubd | grep -qE '[:,]pubdclient(,|$)' &&
	grep -q 'group pubd not removed because it has other members' "$R/purge.log" &&
	! grep -q 'pubd: could not' "$R/purge.log"; then
	pass "purge_removes_user_keeps_group_with_members: user gone, group $(getent group pubd), said so"
else
	fail "purge_removes_user_keeps_group_with_members: $(getent passwd pubd) / $(getent group pubd) / $(grep -iE 'userdel|groupdel|pubd: could not' "$R/purge.log" | tr '\n' ' ')"
fi
finish
