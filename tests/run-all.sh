#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The one test command: installs what the tests need (Debian packages),
# builds, and runs every tier. CI runs exactly this (.ci/run).
#
#   tests/run-all.sh [TIER...]    tiers: unit asan integration hostile fuzz packages softroce (default: all)
#
# Environment:
#   PUBD_SKIP_APT=1     do not apt-get (packages already there)
#   PUBD_FUZZ_SECONDS   seconds per fuzz target (default 20)
#   PUBD_JOBS           parallel build jobs (default: nproc)
#
# Prints one line per tier and a last line "N passed, N failed" (tiers);
# exits non-zero when any tier failed.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo" || exit 1
jobs=${PUBD_JOBS:-$(nproc)}
fuzz_seconds=${PUBD_FUZZ_SECONDS:-20}
tiers=("$@")
[ ${#tiers[@]} -gt 0 ] || tiers=(unit asan integration hostile fuzz packages softroce)

SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo

# Build and library packages, then what the host integration tier needs
# (network namespaces, nftables for loss) and the VM tier (qemu, the Debian
# kernel with rdma_rxe, busybox for the initramfs, rdma-core tools, perftest),
# the metrics listener (libmicrohttpd) and a real Prometheus to scrape it,
# the Python binding's tests, the man pages' lint, pubctl watch under tmux,
# and the Debian packaging (debhelper, lintian).
packages=(
	build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev clang-format
	libyaml-dev libsystemd-dev libibverbs-dev librdmacm-dev libcmocka-dev
	iproute2 nftables procps psmisc jq
	qemu-system-x86 linux-image-amd64 busybox-static kmod cpio
	rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest
	systemd
	libmicrohttpd-dev prometheus
	python3 python3-pytest
	mandoc tmux bash-completion
	debhelper dh-python python3-all fakeroot lintian
)

install_packages() {
	if [ "${PUBD_SKIP_APT:-0}" = 1 ]; then
		echo "== packages: skipped (PUBD_SKIP_APT=1)"
		return 0
	fi
	echo "== packages: apt-get update && apt-get install ${packages[*]}"
	$SUDO apt-get update -q || return 1
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${packages[@]}" || return 1
}

configure_build() { # dir, cmake args... (source: $src, default the checkout)
	local dir=$1
	shift
	mkdir -p "$dir"
	cmake -S "${src:-$repo}" -B "$dir" -G Ninja -DPUBD_REQUIRE_TESTS=ON "$@" >"$dir/configure.log" 2>&1 || {
		cat "$dir/configure.log"
		return 1
	}
	ninja -C "$dir" -j"$jobs"
}

tier_unit() {
	configure_build "$repo/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
		ctest --test-dir "$repo/build" -L unit --output-on-failure -j"$jobs"
}

tier_asan() {
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1
	export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1
	configure_build "$repo/build-asan" -DCMAKE_BUILD_TYPE=Debug -DPUBD_SANITIZE=ON &&
		ctest --test-dir "$repo/build-asan" -L 'unit|integration' --output-on-failure
}

tier_integration() {
	# Twice: libpub's default (shared-memory logs) and every message through
	# the Unix socket (PUBD_TRANSPORT=socket), so both data paths stay whole.
	configure_build "$repo/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
		ctest --test-dir "$repo/build" -L integration --output-on-failure &&
		echo "== integration again with PUBD_TRANSPORT=socket" &&
		PUBD_TRANSPORT=socket ctest --test-dir "$repo/build" -L integration --output-on-failure
}

# Hostile clients and forged datagrams against a real pubd, under ASan+UBSan
# (tests/hostile/run.sh; root for its network namespaces).
tier_hostile() {
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1
	export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1
	configure_build "$repo/build-asan" -DCMAKE_BUILD_TYPE=Debug -DPUBD_SANITIZE=ON &&
		"$repo/tests/hostile/run.sh" "$repo/build-asan"
}

tier_fuzz() {
	configure_build "$repo/build-fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPUBD_FUZZ=ON -DPUBD_TESTS=OFF \
		-DCMAKE_C_COMPILER=clang &&
		"$repo/tests/fuzz/run.sh" "$repo/build-fuzz" "$fuzz_seconds"
}

# The Debian packages (tests/packages/build.sh: dpkg-buildpackage, lintian
# without errors) into a fixed dir, which the softroce tier's systemd VM
# installs with apt-get.
debs_dir=/var/tmp/pubd-debs
tier_packages() {
	"$repo/tests/packages/build.sh" "$debs_dir"
}

tier_softroce() {
	local src=$repo # configure_build reads it

	# The VM guest shares the host's / but mounts fresh tmpfs on /tmp and
	# /run: a checkout there (a CI clone may be) runs from a copy of its
	# files that the guest can see.
	case "$repo" in
	/tmp/* | /run/*)
		src=/var/tmp/pubd-softroce
		echo "softroce: $repo is under /tmp or /run, which the VM guest replaces; running from a copy in $src"
		rm -rf "$src" && mkdir -p "$src" || return 1
		git -C "$repo" ls-files -z | tar -C "$repo" --null -T - -cf - | tar -C "$src" -xf - || return 1
		;;
	esac
	# Two VM boots: the verbs fabric and daemons on Soft-RoCE (the daemon
	# cases twice: libpub over shared memory, then over the socket), then
	# pubd under a real systemd as PID 1, installed from the packages tier's
	# .debs (postinst, socket activation, watchdog, reinstalls over a running
	# pubd, remove and purge). Two reinstalls here (each takes a minute
	# under TCG); vm-systemd.sh alone runs ten.
	configure_build "$src/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
		BUILD="$src/build" PUBD_SOFTROCE_TRANSPORTS="shm socket" "$src/tests/softroce/run.sh" &&
		PUBD_DEBS="$debs_dir" PUBD_VM_REINSTALLS="${PUBD_VM_REINSTALLS:-2}" "$src/tests/systemd/vm-systemd.sh"
}

passed=0
failed=0
failed_names=()
install_packages || {
	echo "FAILED: could not install the packages the tests need"
	echo "0 passed, 1 failed"
	exit 1
}
for t in "${tiers[@]}"; do
	echo
	echo "================ tier: $t ================"
	start=$(date +%s)
	if "tier_$t"; then
		passed=$((passed + 1))
		echo "== tier $t: PASSED in $(($(date +%s) - start)) s"
	else
		failed=$((failed + 1))
		failed_names+=("$t")
		echo "== tier $t: FAILED in $(($(date +%s) - start)) s"
	fi
done
echo
[ $failed -eq 0 ] || echo "failed tiers: ${failed_names[*]}"
echo "tiers: $passed passed, $failed failed"
[ $failed -eq 0 ]
