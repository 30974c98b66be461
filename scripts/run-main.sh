#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Loom's main job on bundled data: installs what is missing, builds, then
# replays the Facebook coflow trace and a generated multi-stage (TPC-H
# shaped) workload under every policy, in ideal-order and 8-class modes,
# printing the comparison tables and writing CSV + plots under out/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh build-release -Dbuildtype=release
bin=build-release/controlplane/sim

echo
echo "== Facebook coflow benchmark (FB2010): 526 coflows, 706,397 flows, 150 ports at 1 Gbit/s =="
"$bin/loom-replay" --trace data/fb2010/FB2010-1Hr-150-0.txt --mode both --out out/fb2010

echo
echo "== Multi-stage jobs: 50 TPC-H-shaped DAGs, FB2010-sampled coflows, load 0.7, 150 hosts =="
mkdir -p out/tpch
"$bin/loom-gen" --out out/tpch/jobs-l0.7-s1.loom --jobs 50 --load 0.7 --seed 1
"$bin/loom-replay" --trace out/tpch/jobs-l0.7-s1.loom --mode both --out out/tpch

echo
echo "Tables above; CSV files and plots (PNG, SVG) in out/fb2010 and out/tpch."
