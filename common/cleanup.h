/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * common/cleanup: scope-bound cleanup helpers for host code (GCC/clang
 * cleanup attribute), as systemd does. A variable declared
 * `_cleanup_free_ char *p = NULL;` is freed when it leaves scope; hand
 * ownership out with TAKE_PTR(p).
 */
#ifndef LOOM_COMMON_CLEANUP_H
#define LOOM_COMMON_CLEANUP_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void loom_freep(void *p)
{
	free(*(void **)p);
}

static inline void loom_fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

static inline void loom_closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}

#define _cleanup_free_   _cleanup_(loom_freep)
#define _cleanup_fclose_ _cleanup_(loom_fclosep)
#define _cleanup_close_  _cleanup_(loom_closep)

/* Returns the pointer and sets the variable to NULL so cleanup skips it. */
#define TAKE_PTR(p)                                                                                \
	({                                                                                         \
		__typeof__(p) _p_ = (p);                                                           \
		(p) = NULL;                                                                        \
		_p_;                                                                               \
	})

/* Defines type_freep() for a type whose destructor is type_free(). */
#define LOOM_DEFINE_FREEP(type, func)                                                              \
	static inline void func##p(type **p)                                                       \
	{                                                                                          \
		if (*p)                                                                            \
			func(*p);                                                                  \
	}

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
