/* SPDX-License-Identifier: GPL-2.0 */
/* Growable arrays: the one growth policy the library uses. */
#ifndef LLMPROF_ARRAY_H
#define LLMPROF_ARRAY_H

#include <stddef.h>

/* Makes room for need elements of elem bytes in *array (capacity *cap),
 * doubling; 0 or -ENOMEM (the array is unchanged then). */
int array__grow(void **array, size_t *cap, size_t need, size_t elem);
/* The same, with the new elements zeroed. */
int array__grow_zeroed(void **array, size_t *cap, size_t need, size_t elem);

#endif /* LLMPROF_ARRAY_H */
