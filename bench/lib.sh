# SPDX-License-Identifier: BSD-3-Clause
# Shell helpers the bench scripts share; sourced, not run.
#
#   log MSG...   a timestamped line on stderr
#   throttle     waits while $ncores or more background jobs run (set ncores first)

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

throttle() {
	while [ "$(jobs -rp | wc -l)" -ge "$ncores" ]; do
		wait -n || true
	done
}
