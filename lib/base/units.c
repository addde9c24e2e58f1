// SPDX-License-Identifier: GPL-2.0
/* The names of weight units (see units.h). */
#include "base/units.h"

const char *unit__name(enum profile_unit unit, const char *count_name)
{
	switch (unit) {
	case UNIT_MICROSECONDS:
		return "microseconds";
	case UNIT_NANOSECONDS:
		return "nanoseconds";
	case UNIT_BYTES:
		return "bytes";
	default:
		return count_name;
	}
}
