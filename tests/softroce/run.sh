#!/bin/bash
# SPDX-License-Identifier: MIT
#
# pubd's Soft-RoCE tier: boot the distribution kernel under qemu (TCG), with
# the host's own / shared read-write over virtio-9p as the guest's root, set
# up two rxe devices on a veth pair (guest-setup.sh) and run every case script
# inside that one boot. See /work/shared/softroce.md for why it is built so.
#
#   tests/softroce/run.sh [CASE_SCRIPT...]     (default: tests/softroce/cases/*.sh)
#
# Environment:
#   BUILD                      pubd's CMake build dir (default: <repo>/build); cases find
#                              pubd, pubctl and the test programs there
#   PUBD_SOFTROCE_TIMEOUT      overall limit in seconds (default 900)
#   PUBD_SOFTROCE_CASE_TIMEOUT per-case limit in seconds inside the guest (default 300)
#   PUBD_SOFTROCE_KERNEL       kernel image (default: newest /boot/vmlinuz-*-amd64)
#   PUBD_SOFTROCE_KEEP=1       keep the results dir of a passing run too
#   PUBD_TRACE=1               run the case scripts with bash -x
#   PUBD_SOFTROCE_TRANSPORTS="shm socket"
#                              run each daemon case once per libpub transport
#                              (PUBD_TRANSPORT for its clients; default: once,
#                              with libpub's default)
#   ASAN_OPTIONS, UBSAN_OPTIONS, LSAN_OPTIONS, PUBD_DEBUG, FABRIC_PROBE_DEBUG pass into the guest
#
# Exit status: 0 when every case passed; 1 when a case failed; 2 when the VM
# could not be built, booted or did not report (never a silent skip).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$repo/build}
BUILD=$(mkdir -p "$BUILD" && cd "$BUILD" && pwd)
timeout_s=${PUBD_SOFTROCE_TIMEOUT:-900}
case_timeout=${PUBD_SOFTROCE_CASE_TIMEOUT:-300}
vm_tag=softroce
# The qemu boot that tests/systemd/vm-systemd.sh shares: kernel, initramfs,
# qemu, result marker.
# shellcheck source-path=SCRIPTDIR source=vm-lib.sh
. "$here/vm-lib.sh"

vm_kernel
for tool in qemu-system-x86_64 modprobe cpio; do
	command -v $tool >/dev/null || die "$tool not found (packages: qemu-system-x86 kmod cpio)"
done
busybox=$(command -v busybox || true)
[ -n "$busybox" ] || die "busybox not found (package busybox-static)"
# The initramfs has no libraries: the busybox must be the static one.
if ldd "$busybox" >/dev/null 2>&1; then
	die "$busybox is dynamically linked; install busybox-static"
fi

# Cases: absolute paths on the host, which the guest sees at the same paths.
cases=()
if [ $# -gt 0 ]; then
	for c in "$@"; do
		[ -f "$c" ] || die "no case script $c"
		# The guest mounts fresh tmpfs there: it would not see the script.
		case "$(realpath "$c")" in /tmp/* | /run/*) die "case $c lives under /tmp or /run, which the guest cannot see" ;; esac
		cases+=("$(cd "$(dirname "$c")" && pwd)/$(basename "$c")")
	done
else
	for c in "$here"/cases/*.sh; do
		[ -f "$c" ] && cases+=("$c")
	done
fi
[ ${#cases[@]} -gt 0 ] || die "no cases to run"

vm_results_dir "$BUILD/softroce"

# ---- initramfs: static busybox, the virtio/9p modules, /init ----
vm_modules virtio_pci 9pnet_virtio 9p
[ ${#mods[@]} -ge 4 ] || die "could not resolve the 9p/virtio modules for $kver"
vm_initramfs "$here/run.sh" newroot <<'INIT'
#!/bin/busybox sh
# Stage 1 (initramfs): load virtio + 9p, mount the host's / and switch_root.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in $(cat /modules.order); do
	insmod /lib/modules/$m || echo "pubd-softroce: insmod $m failed"
done
if ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=none hostroot /newroot; then
	echo "PUBD-SOFTROCE-RESULT: boot-failed (9p mount)"
	poweroff -f
fi
mount --move /proc /newroot/proc
mount --move /sys /newroot/sys
mount --move /dev /newroot/dev
exec switch_root /newroot /bin/sh -c 'exec "$pubd_vmcmd"'
INIT

# ---- what the guest reads: cases and settings, on the host fs (not tmpfs) ----
printf '%s\n' "${cases[@]}" >"$results/cases.list"
{
	printf 'PUBD_REPO=%q\n' "$repo"
	printf 'BUILD=%q\n' "$BUILD"
	printf 'PUBD_RESULTS=%q\n' "$results"
	printf 'PUBD_CASE_TIMEOUT=%q\n' "$case_timeout"
	# Settings for the cases and the programs they run pass through.
	while IFS='=' read -r name _; do
		case "$name" in
		PUBD_TRACE | PUBD_DEBUG | ASAN_OPTIONS | UBSAN_OPTIONS | LSAN_OPTIONS | FABRIC_PROBE_DEBUG | \
			PUBD_TRANSPORT | PUBD_BUSY_POLL | PUBD_SOFTROCE_TRANSPORTS)
			printf 'export %s=%q\n' "$name" "${!name}"
			;;
		esac
	done < <(env)
} >"$results/env.sh"

echo "softroce: kernel $kernel ($kver), qemu TCG -smp 2 -m 2048"
echo "softroce: ${#cases[@]} case(s); results in $results"

start=$(date +%s.%N)
vm_qemu '^(softroce|PASS|FAIL|PUBD-SOFTROCE|Kernel panic)|^  ' '' \
	-virtfs local,path=/,mount_tag=hostroot,security_model=passthrough,id=hr,multidevs=remap \
	-append "console=ttyS0 quiet loglevel=4 panic=-1 rdinit=/init pubd_vmcmd=$here/guest-run.sh pubd_results=$results"
end=$(date +%s.%N)
wall=$(echo "$end - $start" | bc 2>/dev/null || awk "BEGIN{print $end-$start}")
echo "softroce: VM wall time ${wall}s (boot + cases + poweroff), qemu exit $rc"

vm_result "$(grep -a '^PUBD-SOFTROCE-RESULT:' "$results/console.log" | tail -n1 || true)"
if [ "${failed:-1}" -ne 0 ] || [ "$rc" -eq 124 ]; then
	for log in "$results"/*.log; do
		[ "$log" = "$results/console.log" ] && continue
		grep -q '^FAIL' "$log" 2>/dev/null || continue
		echo "---- $log (tail)"
		tail -n 30 "$log"
	done
	vm_finish 1
fi
vm_finish 0 "${PUBD_SOFTROCE_KEEP:-0}"
