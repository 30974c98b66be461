/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * common/clock: one interface for time, two implementations.
 *
 * The real clock reads CLOCK_MONOTONIC (and CLOCK_REALTIME for wall time);
 * the virtual clock only moves when its owner advances it, which is how the
 * simulator and tests drive time-dependent code deterministically. Virtual
 * time never goes backwards: loom_vclock_advance_to() refuses to.
 */
#ifndef LOOM_COMMON_CLOCK_H
#define LOOM_COMMON_CLOCK_H

#include <stdint.h>

#define LOOM_NS_PER_US 1000ULL
#define LOOM_NS_PER_MS 1000000ULL
#define LOOM_NS_PER_S  1000000000ULL

struct loom_clock {
	/* Returns the current time in nanoseconds on this clock. */
	uint64_t (*now_ns)(const struct loom_clock *clock);
};

static inline uint64_t loom_clock_now_ns(const struct loom_clock *clock)
{
	return clock->now_ns(clock);
}

/* Returns the process-wide monotonic real clock (static storage; never freed). */
const struct loom_clock *loom_clock_real(void);

/*
 * Returns CLOCK_MONOTONIC in nanoseconds (what loom_clock_real() reads), for
 * timeouts, deadlines and durations measured in the process itself.
 */
uint64_t loom_clock_mono_ns(void);

/* Returns CLOCK_REALTIME in nanoseconds since the epoch (for logs and file names). */
uint64_t loom_clock_wall_ns(void);

struct loom_vclock {
	struct loom_clock clock; /* must stay first: &vc->clock is the interface */
	uint64_t now_ns;
};

void loom_vclock_init(struct loom_vclock *vc, uint64_t start_ns);

/* Moves virtual time forward to t_ns; returns 0, or -EINVAL if t_ns < now. */
int loom_vclock_advance_to(struct loom_vclock *vc, uint64_t t_ns);

#endif
