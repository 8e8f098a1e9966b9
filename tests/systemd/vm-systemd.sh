#!/bin/bash
# SPDX-License-Identifier: MIT
#
# pubd under a real systemd as PID 1: boot the Debian kernel under qemu (TCG)
# like the Soft-RoCE tier (tests/softroce/run.sh), but hand the guest to
# systemd instead of a shell, on a root of its own:
#
#   lower: the host's / over virtio-9p, exported read-only by qemu and mounted
#          read-only, so the guest sees the same binaries and build tree;
#   upper: a tmpfs inside the guest. Everything the guest writes (installed
#          units, /etc/passwd, the journal, /var) lands there and vanishes at
#          power-off: the host's own files and units are never touched.
#
# systemd boots with systemd.unit=pubd-vmtest.target, a target written into
# the upper layer that pulls only basic.target and pubd-vmtest.service, which
# runs tests/systemd/vm-guest.sh (install pubd's Debian packages with apt-get,
# check their postinst enabled and started pubd on a host without RDMA device
# or configured address, start pubd through its socket, reload, watchdog
# restart of a frozen pubd, journal priorities, verbs through pubd's sandbox,
# dpkg -i over the running pubd ten times (pubd reachable after each), then
# apt-get remove and purge). A few of the host's boot services that have
# no business in a throwaway guest are masked there (AppArmor profile loading,
# time sync, pstore). Results come back over a second, read-write 9p share.
#
#   PUBD_DEBS=/var/tmp/pubd-debs tests/systemd/vm-systemd.sh
#
# Environment:
#   PUBD_DEBS                (required) the directory of pubd's .debs from
#                            tests/packages/build.sh; the guest installs them
#                            with `apt-get install ./*.deb` (offline: no NIC)
#   PUBD_VM_WORK             initramfs cache and results (default
#                            /var/tmp/pubd-systemd-vm)
#   PUBD_VM_TIMEOUT          overall limit in seconds (default 1800: each
#                            dpkg -i of the reinstall loop takes about a
#                            minute under TCG, reading dpkg's database
#                            over 9p)
#   PUBD_VM_REINSTALLS       rounds of dpkg -i over the running pubd
#                            (default 10)
#   PUBD_VM_FABRIC           fabric.type of the guest's pubd.yaml (default verbs:
#                            pubd itself on Soft-RoCE rxa; udp for the IP fabric)
#   PUBD_SOFTROCE_KERNEL     kernel image (default: newest /boot/vmlinuz-*-amd64)
#   PUBD_VM_KEEP=1           keep the results dir of a passing run too
#
# Exit status: 0 when every check passed; 1 when one failed; 2 when the VM
# could not be built, booted or did not report (never a silent skip).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
timeout_s=${PUBD_VM_TIMEOUT:-1800}
fabric=${PUBD_VM_FABRIC:-verbs}
vm_tag=systemd-vm
# The same boot as the Soft-RoCE tier: kernel, initramfs, qemu, result marker.
# shellcheck source-path=SCRIPTDIR source=../softroce/vm-lib.sh
. "$repo/tests/softroce/vm-lib.sh"

[ "$(id -u)" = 0 ] || die "needs root (9p passthrough export of /)"
[ -n "${PUBD_DEBS:-}" ] || die "PUBD_DEBS is not set: the .deb dir (tests/packages/build.sh /var/tmp/pubd-debs)"
[ -d "$PUBD_DEBS" ] || die "no directory $PUBD_DEBS: build the packages first (tests/packages/build.sh $PUBD_DEBS)"
debs=$(cd "$PUBD_DEBS" && pwd)
compgen -G "$debs/pubd_*.deb" >/dev/null || die "no pubd_*.deb in $debs: build the packages first (tests/packages/build.sh $debs)"
case "$debs" in /tmp/* | /run/*) die "$debs is under /tmp or /run, which the guest replaces" ;; esac
vm_kernel
for tool in qemu-system-x86_64 modprobe cpio /lib/systemd/systemd apt-get; do
	command -v $tool >/dev/null || die "$tool not found (packages: qemu-system-x86 kmod cpio systemd apt)"
done
busybox=$(command -v busybox || true)
# The initramfs has no libraries: the busybox must be the static one.
if [ -z "$busybox" ] || ldd "$busybox" >/dev/null 2>&1; then
	die "need a static busybox (package busybox-static)"
fi
case "$repo" in /tmp/* | /run/*) die "the repo lives under /tmp or /run, which the guest replaces" ;; esac

vm_results_dir "${PUBD_VM_WORK:-/var/tmp/pubd-systemd-vm}"

# ---- initramfs: static busybox, virtio + 9p + overlay modules, /init ----
vm_modules virtio_pci 9pnet_virtio 9p overlay
vm_initramfs "$here/vm-systemd.sh" lower rw newroot <<'INIT'
#!/bin/busybox sh
# Stage 1: the host's / read-only under a tmpfs upper layer, then systemd.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
boot_failed() {
	echo "PUBD-SYSTEMD-RESULT: boot-failed ($*)"
	poweroff -f
}
for m in $(cat /modules.order); do
	insmod /lib/modules/$m || echo "pubd-systemd-vm: insmod $m failed"
done
mount -t 9p -o ro,trans=virtio,version=9p2000.L,msize=262144,cache=loose hostroot /lower || boot_failed "9p mount of /"
mount -t tmpfs -o mode=0755,size=1536m tmpfs /rw || boot_failed "tmpfs"
mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work /newroot ||
	boot_failed "overlay of 9p and tmpfs"
mkdir -p /newroot/mnt/pubd-results
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=none results /newroot/mnt/pubd-results ||
	boot_failed "9p mount of the results dir"

# The guest's own configuration, in the upper layer only.
n=/newroot
echo pubd-vm >$n/etc/hostname
# The host's / carries /.dockerenv: systemd would take the guest for a
# container and ignore the kernel command line (systemd.unit=).
rm -f $n/.dockerenv
# A container image's policy-rc.d (exit 101) forbids maintainer scripts to
# start or stop services; the guest is a booted system, where the packages'
# postinst and prerm must do both.
rm -f $n/usr/sbin/policy-rc.d
# No host mounts: only a private /tmp.
echo 'tmpfs /tmp tmpfs mode=1777,nosuid,nodev 0 0' >$n/etc/fstab
for u in apparmor.service systemd-timesyncd.service systemd-pstore.service; do
	ln -sf /dev/null $n/etc/systemd/system/$u
done
cat >$n/etc/systemd/system/pubd-vmtest.target <<EOF
[Unit]
Description=pubd systemd test (VM)
Requires=basic.target pubd-vmtest.service
After=basic.target
AllowIsolate=yes
EOF
cat >$n/etc/systemd/system/pubd-vmtest.service <<EOF
[Unit]
Description=pubd systemd test (VM)
After=basic.target
[Service]
Type=oneshot
ExecStart=/bin/bash $pubd_vmtest
Environment=PUBD_RESULTS=/mnt/pubd-results
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=$pubd_vmtimeout
FailureAction=poweroff-immediate
EOF
mount --move /proc /newroot/proc
mount --move /sys /newroot/sys
mount --move /dev /newroot/dev
exec switch_root /newroot /lib/systemd/systemd
INIT

{
	printf 'PUBD_REPO=%q\n' "$repo"
	printf 'PUBD_DEBS=%q\n' "$debs"
	printf 'PUBD_VM_FABRIC=%q\n' "$fabric"
	printf 'PUBD_VM_REINSTALLS=%q\n' "${PUBD_VM_REINSTALLS:-10}"
} >"$results/env.sh"

echo "systemd-vm: kernel $kernel, qemu TCG -smp 2 -m 2048, systemd $(/lib/systemd/systemd --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p') as PID 1"
echo "systemd-vm: results in $results, packages from $debs: $(cd "$debs" && echo *.deb)"
guest_timeout=$((timeout_s > 120 ? timeout_s - 60 : timeout_s))
start=$(date +%s)
# The guest's output reaches the console through journald as
# "[  12.345] bash[190]: PASS ...": drop that prefix too.
vm_qemu '^(systemd-vm|PASS|FAIL|PUBD-SYSTEMD|Kernel panic)|^  [^ ]' 's/^\[ *[0-9.]*\] bash\[[0-9]*\]: //' \
	-virtfs local,path=/,mount_tag=hostroot,security_model=passthrough,id=hr,multidevs=remap,readonly=on \
	-virtfs local,path="$results",mount_tag=results,security_model=passthrough,id=res \
	-append "console=ttyS0 loglevel=4 panic=-1 rdinit=/init systemd.unit=pubd-vmtest.target systemd.show_status=error pubd_vmtest=$here/vm-guest.sh pubd_vmtimeout=$guest_timeout"
echo "systemd-vm: VM wall time $(($(date +%s) - start)) s (boot + checks + poweroff), qemu exit $rc"

# The guest writes the result to the (cache=none) share before it powers off;
# the console copy may lose its last lines to the power-off.
vm_result "$(cat "$results/result.txt" 2>/dev/null || grep -a '^PUBD-SYSTEMD-RESULT:' "$results/console.log" | tail -n1 || true)"
if [ -f "$results/systemctl-status.txt" ]; then
	echo "systemd-vm: systemctl status pubd (in the guest):"
	sed 's/^/  | /' "$results/systemctl-status.txt"
fi
if [ "${failed:-1}" -ne 0 ]; then
	vm_finish 1
fi
vm_finish 0 "${PUBD_VM_KEEP:-0}"
