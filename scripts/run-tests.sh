#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs what is missing, builds with warnings as errors, and runs every
# test suite; then rebuilds with AddressSanitizer + UBSan and runs the unit,
# gnn, learn, fuzz, e2e, dpdk and ebpf suites and the small simulator tests again under
# them (the full FB2010 replay takes minutes at -O0 under ASan; it runs in the
# first pass). The e2e tests run loomd itself under ASan: a leak or an error
# report makes its exit status non-zero, which they check.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh

bash scripts/build.sh build-ci -Dwerror=true -Dbuildtype=debugoptimized
meson test -C build-ci --print-errorlogs

bash scripts/build.sh build-asan -Dwerror=true -Dbuildtype=debug \
	-Db_sanitize=address,undefined -Db_lundef=false
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
meson test -C build-asan --suite unit --suite gnn --suite learn --suite fuzz --suite e2e \
	--suite dpdk --suite ebpf --print-errorlogs
meson test -C build-asan golden replay_cli --print-errorlogs
