/* Time zones and date-times for schedules, with GLib's GTimeZone: IANA rules
 * from the system's tzdata, right across DST changes, without touching the
 * process's TZ. The configuration resolves every profile's zone and fixed
 * dates with these when it loads; the engine's schedule.c matches
 * recurrences at run time. */
#include <errno.h>
#include <glib.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/iso8601.h"
#include "config/schedule-tz.h"

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

/* The grammar is iso8601.c's, with the short forms operators write
 * ("2026-11-27", "08:00"); a time without an offset is local time in the
 * profile's zone, which only GLib's rules can resolve. */
int schedule_parse_datetime(const char *s, void *tz, int64_t *ret_ms)
{
	struct iso8601_fields f;
	GTimeZone *zone;
	GDateTime *dt;
	const char *p = s;

	if (!s || iso8601_parse_fields(&p, s + strlen(s), ISO8601_SHORT, &f) < 0 || *p != '\0')
		return -EINVAL;
	if (f.has_zone)
		zone = g_time_zone_new_offset((gint32)(f.offset_ms / 1000));
	else
		zone = tz ? g_time_zone_ref(tz) : g_time_zone_new_utc();
	/* g_date_time_new() refuses dates that do not exist (Feb 30), and a
	 * leap second. */
	dt = g_date_time_new(zone, f.year, f.month, f.day, f.hour, f.minute, f.second);
	g_time_zone_unref(zone);
	if (!dt)
		return -EINVAL;
	*ret_ms = g_date_time_to_unix(dt) * 1000 + f.millisecond;
	g_date_time_unref(dt);
	return 0;
}
