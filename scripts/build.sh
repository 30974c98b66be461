#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Configures (once) and builds Loom into a build folder.
#   scripts/build.sh [BUILD_DIR] [extra meson setup options...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
if [ ! -f "$dir/build.ninja" ]; then
	meson setup "$dir" "$@"
fi
ninja -C "$dir"
