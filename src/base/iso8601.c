/* ISO 8601 times; see iso8601.h. Written on plain arithmetic rather than
 * strptime() and timegm(): those read the process's locale and time zone,
 * refuse more than one fractional digit in some libcs, and are not what a
 * plugin may rely on. */
#include "base/iso8601.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define MS_PER_DAY INT64_C(86400000)

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * days_from_civil), so no time zone or libc state is involved. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

/* The inverse of days_from_civil (Hinnant's civil_from_days). */
static void civil_from_days(int64_t z, int64_t *ret_y, unsigned *ret_m, unsigned *ret_d)
{
	int64_t era;
	unsigned doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (unsigned)(z - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*ret_d = doy - (153 * mp + 2) / 5 + 1;
	*ret_m = mp < 10 ? mp + 3 : mp - 9;
	*ret_y = (int64_t)yoe + era * 400 + (*ret_m <= 2);
}

static unsigned days_in_month(int y, int m)
{
	static const unsigned days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : days[m - 1];
}

/* Reads exactly `digits` decimal digits. */
static int read_fixed(const char **p, const char *end, int digits, int *ret)
{
	int v = 0;

	for (int i = 0; i < digits; i++) {
		if (*p >= end || !is_digit(**p))
			return -EINVAL;
		v = v * 10 + (**p - '0');
		(*p)++;
	}
	*ret = v;
	return 0;
}

static bool take(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return false;
	(*p)++;
	return true;
}

/* Reads "Z" or an offset into *ret_ms (east of UTC positive); 1 when there
 * was none, 0 when read, -EINVAL when malformed. */
static int read_zone(const char **p, const char *end, int64_t *ret_ms)
{
	const char *q = *p;
	int oh, om = 0, sign;

	if (q >= end)
		return 1;
	if (*q == 'Z' || *q == 'z') {
		*p = q + 1;
		*ret_ms = 0;
		return 0;
	}
	if (*q != '+' && *q != '-')
		return 1;
	sign = *q++ == '-' ? -1 : 1;
	if (read_fixed(&q, end, 2, &oh) < 0)
		return -EINVAL;
	if (take(&q, end, ':')) {
		if (read_fixed(&q, end, 2, &om) < 0)
			return -EINVAL;
	} else if (q < end && is_digit(*q) && read_fixed(&q, end, 2, &om) < 0) {
		return -EINVAL;
	}
	if (oh > 23 || om > 59)
		return -EINVAL;
	*p = q;
	*ret_ms = sign * (oh * 60 + om) * INT64_C(60000);
	return 0;
}

int iso8601_parse_fields(const char **p, const char *end, unsigned flags, struct iso8601_fields *ret)
{
	struct iso8601_fields f = {0};
	int64_t scale = 100;
	const char *q = *p;
	int z;

	if (read_fixed(&q, end, 4, &f.year) < 0 || !take(&q, end, '-') || read_fixed(&q, end, 2, &f.month) < 0 ||
	    !take(&q, end, '-') || read_fixed(&q, end, 2, &f.day) < 0)
		return -EINVAL;
	if (take(&q, end, 'T') || take(&q, end, 't') || take(&q, end, ' ')) {
		if (read_fixed(&q, end, 2, &f.hour) < 0 || !take(&q, end, ':') || read_fixed(&q, end, 2, &f.minute) < 0)
			return -EINVAL;
		if (take(&q, end, ':')) {
			if (read_fixed(&q, end, 2, &f.second) < 0)
				return -EINVAL;
			if (take(&q, end, '.')) {
				if (q >= end || !is_digit(*q))
					return -EINVAL;
				/* Milliseconds are kept; further digits are
				 * read and dropped. */
				for (; q < end && is_digit(*q); q++, scale /= 10)
					f.millisecond += (int)scale * (*q - '0');
			}
		} else if (!(flags & ISO8601_SHORT)) {
			return -EINVAL;
		}
	} else if (!(flags & ISO8601_SHORT)) {
		return -EINVAL;
	}
	if (f.month < 1 || f.month > 12 || f.day < 1 || (unsigned)f.day > days_in_month(f.year, f.month) ||
	    f.hour > 23 || f.minute > 59 || f.second > 60)
		return -EINVAL;
	z = read_zone(&q, end, &f.offset_ms);
	if (z < 0)
		return -EINVAL;
	f.has_zone = z == 0;
	*p = q;
	*ret = f;
	return 0;
}

int iso8601_parse_prefix(const char **p, const char *end, unsigned flags, int64_t *ret_ms)
{
	struct iso8601_fields f;
	const char *q = *p;

	if (iso8601_parse_fields(&q, end, flags, &f) < 0 || (!f.has_zone && !(flags & ISO8601_UTC_DEFAULT)))
		return -EINVAL;
	*p = q;
	*ret_ms = days_from_civil(f.year, (unsigned)f.month, (unsigned)f.day) * MS_PER_DAY +
		  ((f.hour * 60 + f.minute) * INT64_C(60) + f.second) * INT64_C(1000) + f.millisecond -
		  (f.has_zone ? f.offset_ms : 0);
	return 0;
}

int iso8601_parse(const char *s, unsigned flags, int64_t *ret_ms)
{
	const char *p = s, *end;
	int64_t ms;

	if (!s)
		return -EINVAL;
	end = s + strlen(s);
	if (iso8601_parse_prefix(&p, end, flags, &ms) < 0 || p != end)
		return -EINVAL;
	*ret_ms = ms;
	return 0;
}

int iso8601_format(int64_t ms, enum iso8601_precision precision, char *buf, size_t len)
{
	/* Floor division: a time before the epoch is in the day before. The
	 * time of day comes from the remainder, not from days * MS_PER_DAY,
	 * which overflows for the extreme times a corrupt file can hold. */
	int64_t in_day = ms % MS_PER_DAY, y;
	int64_t days = ms / MS_PER_DAY - (in_day < 0);
	unsigned m, d;
	int sec, frac, n;

	if (in_day < 0)
		in_day += MS_PER_DAY;
	sec = (int)(in_day / 1000);
	frac = (int)(in_day % 1000);
	if (len)
		buf[0] = '\0';
	civil_from_days(days, &y, &m, &d);
	if (y < 0 || y > 9999)
		return -ERANGE;
	if (precision == ISO8601_MILLIS || (precision == ISO8601_MILLIS_IF_ANY && frac))
		n = snprintf(buf, len, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", (int)y, m, d, sec / 3600,
			     sec / 60 % 60, sec % 60, frac);
	else
		n = snprintf(buf, len, "%04d-%02u-%02uT%02d:%02d:%02dZ", (int)y, m, d, sec / 3600, sec / 60 % 60,
			     sec % 60);
	if (n < 0 || (size_t)n >= len) {
		if (len)
			buf[0] = '\0';
		return -ERANGE;
	}
	return 0;
}
