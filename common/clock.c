/* SPDX-License-Identifier: BSD-3-Clause */
#include "common/clock.h"

#include <errno.h>
#include <time.h>

static uint64_t timespec_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * LOOM_NS_PER_S + (uint64_t)ts->tv_nsec;
}

uint64_t loom_clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return timespec_ns(&ts);
}

static uint64_t real_now_ns(const struct loom_clock *clock)
{
	(void)clock;
	return loom_clock_mono_ns();
}

static const struct loom_clock real_clock = {.now_ns = real_now_ns};

const struct loom_clock *loom_clock_real(void)
{
	return &real_clock;
}

uint64_t loom_clock_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return timespec_ns(&ts);
}

static uint64_t virtual_now_ns(const struct loom_clock *clock)
{
	const struct loom_vclock *vc = (const struct loom_vclock *)clock;

	return vc->now_ns;
}

void loom_vclock_init(struct loom_vclock *vc, uint64_t start_ns)
{
	vc->clock.now_ns = virtual_now_ns;
	vc->now_ns = start_ns;
}

int loom_vclock_advance_to(struct loom_vclock *vc, uint64_t t_ns)
{
	if (t_ns < vc->now_ns)
		return -EINVAL;
	vc->now_ns = t_ns;
	return 0;
}
