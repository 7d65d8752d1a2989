/* Time zones and date-times for schedules, with GLib's GTimeZone: IANA rules
 * from the system's tzdata, right across DST changes, without touching the
 * process's TZ. The configuration resolves every profile's zone and fixed
 * dates with these when it loads; schedule.c matches recurrences at run time.
 */
#include <errno.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "schedule.h"

int schedule_tz_open(const char *name, void **ret)
{
	GTimeZone *tz;

	/* GLib reads /usr/share/zoneinfo/NAME; refuse anything that is not a
	 * plain zone name, so a configuration cannot point it at other files. */
	if (!name || !*name || name[0] == '/' || strstr(name, ".."))
		return -ENOENT;
	tz = g_time_zone_new_identifier(name);
	if (!tz)
		return -ENOENT;
	*ret = tz;
	return 0;
}

void schedule_tz_close(void *tz)
{
	if (tz)
		g_time_zone_unref(tz);
}

/* Reads exactly N digits as a number, or returns -1. */
static int digits(const char *s, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* Accepts YYYY-MM-DD, then optionally T (or a space) HH:MM[:SS], then
 * optionally Z or +HH:MM / -HH:MM / +HHMM. GLib's own ISO 8601 parser wants
 * seconds, which operators often leave out. */
int schedule_parse_datetime(const char *s, void *tz, int64_t *ret_ms)
{
	int year, month, day, hour = 0, minute = 0, second = 0, off = 0;
	bool has_offset = false;
	GTimeZone *zone;
	GDateTime *dt;
	const char *p;

	if (!s || strlen(s) < 10 || s[4] != '-' || s[7] != '-')
		return -EINVAL;
	year = digits(s, 4);
	month = digits(s + 5, 2);
	day = digits(s + 8, 2);
	p = s + 10;
	if (year < 0 || month < 0 || day < 0)
		return -EINVAL;
	/* Each step checks its digits before looking past them, so a short
	 * string never reads beyond its end. */
	if (*p == 'T' || *p == ' ') {
		if ((hour = digits(p + 1, 2)) < 0 || p[3] != ':' || (minute = digits(p + 4, 2)) < 0)
			return -EINVAL;
		p += 6;
		if (*p == ':') {
			if ((second = digits(p + 1, 2)) < 0)
				return -EINVAL;
			p += 3;
		}
	}
	if (*p == 'Z') {
		has_offset = true;
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p == '-' ? -1 : 1, oh, om;

		if ((oh = digits(p + 1, 2)) < 0)
			return -EINVAL;
		p += 3;
		if (*p == ':')
			p++;
		if ((om = digits(p, 2)) < 0 || oh > 23 || om > 59)
			return -EINVAL;
		p += 2;
		off = sign * (oh * 3600 + om * 60);
		has_offset = true;
	}
	if (*p != '\0' || hour > 23 || minute > 59 || second > 59)
		return -EINVAL;
	if (has_offset)
		zone = g_time_zone_new_offset(off);
	else
		zone = tz ? g_time_zone_ref(tz) : g_time_zone_new_utc();
	/* g_date_time_new() refuses dates that do not exist (Feb 30). */
	dt = g_date_time_new(zone, year, month, day, hour, minute, second);
	g_time_zone_unref(zone);
	if (!dt)
		return -EINVAL;
	*ret_ms = g_date_time_to_unix(dt) * 1000;
	g_date_time_unref(dt);
	return 0;
}
