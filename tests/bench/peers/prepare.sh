# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Sourced by peers/run.sh: everything the peer benchmarks need, built or
# installed when missing. Sets AERONMD (empty when Aeron could not be built).

peers_log() { printf '%s [peers] %s\n' "$(date +%T)" "$*" >&2; }

# libzmq with PGM and NORM (Debian builds it with both).
peers_zmq() {
	if [ ! -e /usr/include/zmq.h ]; then
		peers_log "installing libzmq3-dev (apt-get)"
		DEBIAN_FRONTEND=noninteractive apt-get install -y libzmq3-dev >"$PB/apt.log" 2>&1 || {
			apt-get update >>"$PB/apt.log" 2>&1
			DEBIAN_FRONTEND=noninteractive apt-get install -y libzmq3-dev >>"$PB/apt.log" 2>&1
		} || { peers_log "apt-get install libzmq3-dev failed; see $PB/apt.log"; return 1; }
	fi
	for t in nft jq cmake ninja git; do
		command -v "$t" >/dev/null || {
			peers_log "installing $t's package"
			DEBIAN_FRONTEND=noninteractive apt-get install -y nftables jq cmake ninja-build git >>"$PB/apt.log" 2>&1
			break
		}
	done
	cat >"$PB/zmq_has.c" <<-'C'
		#include <stdio.h>
		#include <zmq.h>
		int main(void) { printf("pgm=%d norm=%d\n", zmq_has("pgm"), zmq_has("norm")); return !(zmq_has("pgm") && zmq_has("norm")); }
	C
	cc -o "$PB/zmq_has" "$PB/zmq_has.c" -lzmq && "$PB/zmq_has" >&2 ||
		{ peers_log "this libzmq lacks pgm or norm"; return 1; }
}

# Aeron's C media driver and C client, cached under $CACHE. Its CMakeLists
# asks for CMake 3.30; Debian 12 has 3.25, which builds the C parts fine,
# so the requirement is lowered in the cached copy.
peers_aeron() {
	local src=$CACHE/aeron-src bld=$CACHE/aeron-build t0
	AERONMD=
	[ "${PEERS_SKIP_AERON:-0}" = 1 ] && return 0
	if [ ! -x "$bld/binaries/aeronmd" ] || [ ! -e "$bld/lib/libaeron.so" ]; then
		mkdir -p "$CACHE"
		t0=$(date +%s)
		if [ ! -d "$src" ]; then
			peers_log "fetching Aeron $AERON_TAG from $AERON_GIT into $src"
			git clone -q --depth 1 --branch "$AERON_TAG" "$AERON_GIT" "$src" ||
				{ peers_log "git clone of Aeron failed: going on without it"; return 0; }
		fi
		sed -i -e 's/cmake_minimum_required(VERSION 3\.30/cmake_minimum_required(VERSION 3.25/' \
			-e 's/cmake_policy(VERSION 3\.30)/cmake_policy(VERSION 3.25)/' "$src/CMakeLists.txt"
		peers_log "building Aeron (C driver and client) in $bld"
		if ! { cmake -S "$src" -B "$bld" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_AERON_DRIVER=ON \
			-DBUILD_AERON_ARCHIVE_API=OFF -DAERON_TESTS=OFF -DAERON_UNIT_TESTS=OFF -DAERON_SYSTEM_TESTS=OFF \
			-DAERON_BUILD_SAMPLES=OFF -DAERON_BUILD_DOCUMENTATION=OFF -DAERON_INSTALL_TARGETS=OFF \
			>"$PB/aeron-build.log" 2>&1 && ninja -C "$bld" -j2 aeronmd aeron >>"$PB/aeron-build.log" 2>&1; }; then
			peers_log "Aeron did not build (see $PB/aeron-build.log): going on without it"
			tail -n 15 "$PB/aeron-build.log" >&2
			return 0
		fi
		peers_log "Aeron built in $(($(date +%s) - t0)) s"
	fi
	AERONMD=$bld/binaries/aeronmd
	cc -O2 -Wall -Wextra -Werror -I"$src/aeron-client/src/main/c" -o "$PB/peer_aeron" \
		"$here/peer_main.c" "$here/peer_aeron.c" -L"$bld/lib" -laeron -Wl,-rpath,"$bld/lib" ||
		{ peers_log "peer_aeron did not compile"; AERONMD=; }
}

peers_prepare() {
	peers_zmq || return 1
	peers_log "building pubd (Release) in $BUILD"
	if ! { cmake -S "$repo" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
		-DCMAKE_C_FLAGS=-Wno-error=maybe-uninitialized >"$PB/build.log" 2>&1 &&
		ninja -C "$BUILD" -j2 pubd pubctl pub itest_client >>"$PB/build.log" 2>&1; }; then
		peers_log "pubd build failed; see $PB/build.log"
		return 1
	fi
	cc -O2 -Wall -Wextra -Werror -I"$repo/libpub/include" -o "$PB/peer_pubd" "$here/peer_main.c" \
		"$here/peer_pubd.c" -L"$BUILD/libpub" -lpub -Wl,-rpath,"$BUILD/libpub" || return 1
	cc -O2 -Wall -Wextra -Werror -o "$PB/peer_zmq" "$here/peer_main.c" "$here/peer_zmq.c" -lzmq || return 1
	peers_aeron
}
