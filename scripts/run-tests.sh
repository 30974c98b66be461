#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs what is missing, builds with warnings as errors, and runs every
# test suite; then rebuilds with AddressSanitizer + UBSan and runs the unit
# and fuzz suites again under them.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh

bash scripts/build.sh build-ci -Dwerror=true -Dbuildtype=debugoptimized
meson test -C build-ci --print-errorlogs

bash scripts/build.sh build-asan -Dwerror=true -Dbuildtype=debug \
	-Db_sanitize=address,undefined -Db_lundef=false
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	meson test -C build-asan --suite unit --suite fuzz --print-errorlogs
