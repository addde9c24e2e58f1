// SPDX-License-Identifier: GPL-2.0
/* Growable arrays; see array.h. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"

int array__grow(void **array, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 64;
	void *p;

	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return -ENOMEM;
		n *= 2;
	}
	if (elem && n > SIZE_MAX / elem)
		return -ENOMEM;
	p = realloc(*array, n * elem);
	if (!p)
		return -ENOMEM;
	*array = p;
	*cap = n;
	return 0;
}

int array__grow_zeroed(void **array, size_t *cap, size_t need, size_t elem)
{
	size_t old = *cap;
	int err = array__grow(array, cap, need, elem);

	if (!err && *cap > old)
		memset((char *)*array + old * elem, 0, (*cap - old) * elem);
	return err;
}
