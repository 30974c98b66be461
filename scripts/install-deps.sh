#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Install what Loom needs to build and test, from Debian's packages only.
# Idempotent: packages already present are not reinstalled, and apt is not
# touched at all when nothing is missing. Run as root (or with sudo).
set -euo pipefail

# Required to build and test the core (simulator, policies, tools) and the
# live control plane (loomd, libloom, loomctl).
required=(
	build-essential meson ninja-build pkg-config
	libjansson-dev libcmocka-dev
	gnuplot-nox clang-format
	libprotobuf-c-dev protobuf-c-compiler
	libevent-dev libsqlite3-dev libmicrohttpd-dev
	# TLS on the control plane (meson option tls): libssl-dev; libevent-dev
	# above carries libevent_openssl.pc; openssl (the CLI) makes the certificates
	# of tests/e2e/test_tls.c
	libssl-dev openssl
	# the lint scripts and the Python bindings with their tests (tests/python/);
	# meson needs it anyway, named here because the tests use it themselves
	python3
)
# Optional features (meson options default to auto): installed when the
# distribution has them so that CI exercises them too.
optional=(
	libopenblas-dev
	libglpk-dev # the LP bound of loom-replay (meson option lp)
	libdpdk-dev dpdk-dev # dpdk-dev: dpdk-testpmd, the baseline of bench/dpdk.sh
	libbpf-dev libnl-route-3-dev bpftool clang llvm
	iproute2 ethtool
	libopenmpi-dev openmpi-bin # loom-train --mpi and libloom_mpi.so (meson option mpi), their tests
	prometheus # tests/e2e/test_prometheus.c scrapes loomd with it (the Grafana dashboard's queries)
	chromium # the ui suite: loomd's web UI in headless Chromium (tests/ui/)
)

missing=()
for p in "${required[@]}" "${optional[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: everything is already installed"
	exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	SUDO="sudo"
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
# Required packages must install; optional ones are tried one by one so a
# missing optional package never blocks the build.
req_missing=()
for p in "${required[@]}"; do
	for m in "${missing[@]}"; do [ "$p" = "$m" ] && req_missing+=("$p"); done
done
if [ ${#req_missing[@]} -gt 0 ]; then
	$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${req_missing[@]}"
fi
for p in "${optional[@]}"; do
	for m in "${missing[@]}"; do
		if [ "$p" = "$m" ]; then
			$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "$p" ||
				echo "install-deps: optional package $p not available; its feature is skipped"
		fi
	done
done
