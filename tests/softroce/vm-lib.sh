# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# shellcheck disable=SC2154 # vm_tag, busybox, timeout_s: the caller sets them
#
# The qemu VM boot that the Soft-RoCE tier (tests/softroce/run.sh) and the
# systemd tier (tests/systemd/vm-systemd.sh) share: the distribution kernel
# under qemu (TCG), started from a busybox initramfs whose /init each caller
# writes (what the guest runs differs, how it is booted does not). Sourced,
# not run; the caller sets vm_tag (the prefix of its messages), busybox
# (a static one), timeout_s (the overall limit in seconds) and then calls:
#
#   die MSG...                print "$vm_tag: FATAL: MSG" and exit 2
#   vm_kernel                 set kernel ($PUBD_SOFTROCE_KERNEL, or the newest
#                             /boot/vmlinuz-*-amd64) and kver; die without a
#                             readable image or its /lib/modules/$kver
#   vm_results_dir WORK       set work=WORK and results to a new run dir
#                             under WORK/results
#   vm_modules MODULE...      set mods to the module files that load
#                             MODULE... into $kver, dependencies first
#   vm_initramfs STAMP DIR... < INIT
#                             set initrd to $work/initramfs-$kver.cpio:
#                             $busybox, $mods (load order in /modules.order),
#                             the empty dirs DIR... and INIT as /init; built
#                             again when missing or older than STAMP
#   vm_qemu SHOW SED QEMU_ARG...
#                             boot $kernel + $initrd with QEMU_ARG... under
#                             timeout_s; the console, cleaned of \r and
#                             escapes (and by the sed script SED unless
#                             empty), goes to $results/console.log and its
#                             lines matching the ERE SHOW to stdout; set rc
#   vm_result MARKER          die unless MARKER is the guest's
#                             "...passed=N failed=M" line (after the console's
#                             tail); set passed and failed
#   vm_finish STATUS [KEEP]   keep $results (STATUS not 0, or KEEP=1) or
#                             remove it, print the counts, exit STATUS
#
# Exit status of what dies here: 2 (the VM could not be built, booted or did
# not report), as both tiers document.

# This file writes the initramfs too: a change here must rebuild it.
vm_lib=${BASH_SOURCE[0]}

die() {
	echo "$vm_tag: FATAL: $*" >&2
	exit 2
}

vm_kernel() {
	kernel=${PUBD_SOFTROCE_KERNEL:-$(printf '%s\n' /boot/vmlinuz-*-amd64 | sort -V | tail -n1)}
	# Without a match the glob stays literal, which is not readable either.
	if [ ! -r "$kernel" ]; then
		die "no readable kernel image (/boot/vmlinuz-*-amd64; apt-get install linux-image-amd64)"
	fi
	kver=${kernel##*/vmlinuz-}
	[ -d "/lib/modules/$kver" ] || die "no /lib/modules/$kver for $kernel"
}

vm_results_dir() {
	work=$1
	mkdir -p "$work/results"
	results=$(mktemp -d "$work/results/run-$(date +%Y%m%d-%H%M%S)-XXXX")
}

vm_modules() {
	local m verb path
	mods=()
	for m in "$@"; do
		while read -r verb path _; do
			[ "$verb" = insmod ] || continue
			case " ${mods[*]-} " in *" $path "*) ;; *) mods+=("$path") ;; esac
		done < <(modprobe -S "$kver" --show-depends "$m" 2>/dev/null) ||
			die "modprobe -S $kver --show-depends $m failed"
	done
}

vm_initramfs() {
	local stamp=$1 stage p b d
	shift
	initrd=$work/initramfs-$kver.cpio
	stage=$work/initramfs-$kver.d
	if [ -s "$initrd" ] && ! [ "$stamp" -nt "$initrd" ] && ! [ "$vm_lib" -nt "$initrd" ]; then
		return 0
	fi
	rm -rf "$stage"
	mkdir -p "$stage"/{bin,dev,proc,sys,lib/modules}
	for d in "$@"; do
		mkdir -p "$stage/$d"
	done
	cp "$busybox" "$stage/bin/busybox"
	: >"$stage/modules.order"
	for p in "${mods[@]}"; do
		b=$(basename "$p")
		case "$p" in
		*.ko) cp "$p" "$stage/lib/modules/$b" ;;
		*.ko.xz) xz -dc "$p" >"$stage/lib/modules/${b%.xz}" ;;
		*.ko.zst) zstd -qdc "$p" >"$stage/lib/modules/${b%.zst}" ;;
		*.ko.gz) gzip -dc "$p" >"$stage/lib/modules/${b%.gz}" ;;
		*) die "unknown module format $p" ;;
		esac
		b=${b%.xz}; b=${b%.zst}; b=${b%.gz}
		echo "$b" >>"$stage/modules.order"
	done
	cat >"$stage/init"
	chmod +x "$stage/init"
	(cd "$stage" && find . | cpio -o -H newc --quiet) >"$initrd.tmp" || die "cpio failed"
	mv "$initrd.tmp" "$initrd"
}

vm_qemu() {
	local show=$1 sed_extra=$2
	shift 2
	# qemu's exit status is the result here, not a reason to stop.
	set +e
	timeout --foreground -k 10 "$timeout_s" qemu-system-x86_64 \
		-machine q35,accel=tcg -cpu max -m 2048 -smp 2 -nographic -no-reboot -nic none \
		-kernel "$kernel" -initrd "$initrd" "$@" \
		</dev/null 2>&1 |
		sed -u -e 's/\r//g; s/\x1bc//g; s/\x1b\[[0-9;?]*[a-zA-Z]//g' ${sed_extra:+-e "$sed_extra"} |
		tee "$results/console.log" |
		grep --line-buffered -E "$show"
	rc=${PIPESTATUS[0]}
	set -e
}

vm_result() {
	local marker=$1
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "$vm_tag: FATAL: the VM hit the overall timeout of ${timeout_s}s" >&2
	fi
	if [ -z "$marker" ] || ! echo "$marker" | grep -q 'passed='; then
		echo "$vm_tag: FATAL: the VM did not report a result (${marker:-no marker}); console tail:" >&2
		tail -n 40 "$results/console.log" >&2
		echo "$vm_tag: logs kept in $results" >&2
		exit 2
	fi
	passed=$(echo "$marker" | sed -n 's/.*passed=\([0-9]*\).*/\1/p')
	failed=$(echo "$marker" | sed -n 's/.*failed=\([0-9]*\).*/\1/p')
}

vm_finish() {
	# A failed run keeps its logs for the post-mortem.
	if [ "$1" -ne 0 ] || [ "${2:-0}" = 1 ]; then
		echo "$vm_tag: logs kept in $results"
	else
		rm -rf "$results"
	fi
	echo "$passed passed, $failed failed"
	exit "$1"
}
