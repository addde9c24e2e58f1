/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Whether a change of share is more than sampling noise: the two-proportion
 * z-test of one share in two profiles, its two-sided p-value, the critical
 * value for a confidence level, and Holm's step-down correction over many
 * such tests.  Shares here are fractions (0 to 1) of sample counts.
 */
#ifndef LLMPROF_SIGNIFICANCE_H
#define LLMPROF_SIGNIFICANCE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * z of x2/n2 against x1/n1 with the pooled proportion's standard error,
 * positive when the second share is larger.  0 when it is undefined: an
 * empty side, or a pooled share of 0 or 1 (no variance, so no change).
 */
double significance__z(double x1, double n1, double x2, double n2);
/* True when the test is defined for these counts (see significance__z). */
bool significance__defined(double x1, double n1, double x2, double n2);
/* The two-sided p-value of a standard normal z: P(|Z| >= |z|). */
double significance__p_value(double z);
/* The z whose two-sided p-value is alpha (0 < alpha < 1): 2.5758 for 0.01. */
double significance__critical_z(double alpha);
/*
 * The smallest change, in percentage points, that z_critical calls
 * significant for a pooled share (a fraction) over n1 and n2 samples.
 */
double significance__noise_floor(double share, double n1, double n2, double z_critical);
/*
 * Holm's step-down over n p-values at family-wise level alpha: sorted
 * ascending, the k-th smallest (from 0) is rejected while it is at most
 * alpha / (n - k).  Sets significant[i]; returns 0 or -ENOMEM.
 */
int significance__holm(const double *p, size_t n, double alpha, bool *significant);

#endif /* LLMPROF_SIGNIFICANCE_H */
