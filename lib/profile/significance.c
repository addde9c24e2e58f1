// SPDX-License-Identifier: GPL-2.0
/* The two-proportion z-test and Holm's correction; see significance.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "profile/significance.h"

bool significance__defined(double x1, double n1, double x2, double n2)
{
	double pooled;

	if (n1 <= 0 || n2 <= 0)
		return false;
	pooled = (x1 + x2) / (n1 + n2);
	return pooled > 0 && pooled < 1;
}

double significance__z(double x1, double n1, double x2, double n2)
{
	double pooled, se;

	if (!significance__defined(x1, n1, x2, n2))
		return 0;
	pooled = (x1 + x2) / (n1 + n2);
	se = sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2));
	return (x2 / n2 - x1 / n1) / se;
}

double significance__p_value(double z)
{
	return erfc(fabs(z) / M_SQRT2);
}

double significance__critical_z(double alpha)
{
	double low = 0, high = 40;

	if (!(alpha > 0 && alpha < 1))
		return alpha >= 1 ? 0 : INFINITY;
	/* p_value() falls as z grows; bisection to the last bit is plenty
	 * fast for one call per diff. */
	for (int i = 0; i < 200 && low < high; i++) {
		double mid = (low + high) / 2;

		if (mid == low || mid == high)
			break;
		if (significance__p_value(mid) > alpha)
			low = mid;
		else
			high = mid;
	}
	return high;
}

double significance__noise_floor(double share, double n1, double n2, double z_critical)
{
	if (n1 <= 0 || n2 <= 0)
		return INFINITY;
	return 100 * z_critical * sqrt(share * (1 - share) * (1 / n1 + 1 / n2));
}

static const double *holm_p; /* qsort has no context argument */

static int compare_p(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	if (holm_p[x] != holm_p[y])
		return holm_p[x] < holm_p[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

int significance__holm(const double *p, size_t n, double alpha, bool *significant)
{
	size_t *order = malloc((n ? n : 1) * sizeof(*order));

	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		order[i] = i;
		significant[i] = false;
	}
	holm_p = p;
	qsort(order, n, sizeof(*order), compare_p);
	for (size_t k = 0; k < n; k++) {
		if (!(p[order[k]] <= alpha / (n - k)))
			break;
		significant[order[k]] = true;
	}
	free(order);
	return 0;
}
