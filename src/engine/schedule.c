/* Schedules: which profile is active at an instant (see schedule.h).
 *
 * A recurrence profile is matched on the local wall clock of its own zone.
 * The local time comes from GLib's GTimeZone: the UTC instant is located in
 * the zone's list of intervals (each with its own offset and DST flag), so a
 * change of offset is applied exactly at its instant and the process's TZ
 * is never read. Looking up the interval allocates nothing, which keeps the
 * engine fast for many groups.
 *
 * On a day the clocks go forward the skipped local times never occur: a span
 * 08:00-19:00 still starts at 08:00 local, seven hours after midnight
 * instead of eight; a span that starts inside the skipped hour (02:30 in
 * Berlin on the last Sunday of March) starts at the first local time past
 * its start, 03:00. On a day the clocks go back a local time occurs twice
 * and matches both times. */
#include <glib.h>

#include "engine/schedule.h"

#define MINUTES_PER_DAY 1440
#define SECONDS_PER_DAY INT64_C(86400)

/* Floor division, for instants before the epoch. */
static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	if ((a % b != 0) && ((a < 0) != (b < 0)))
		q--;
	return q;
}

/* The local day number (days since 1970-01-01 in the zone), the weekday
 * (0 = Monday) and the minute of the local day at now_ms. */
static void local_time(GTimeZone *tz, int64_t now_ms, int64_t *day, int *weekday, int *minute)
{
	int64_t secs = floor_div(now_ms, MS_PER_SEC);
	int64_t local = secs;

	if (tz) {
		gint interval = g_time_zone_find_interval(tz, G_TIME_TYPE_UNIVERSAL, secs);

		if (interval >= 0)
			local += g_time_zone_get_offset(tz, interval);
	}
	*day = floor_div(local, SECONDS_PER_DAY);
	/* 1970-01-01 was a Thursday, weekday 3 counted from Monday. */
	*weekday = (int)(((*day % 7) + 7 + 3) % 7);
	*minute = (int)((local - *day * SECONDS_PER_DAY) / 60);
}

static bool day_in_mask(unsigned days, int weekday)
{
	return (days >> weekday) & 1u;
}

bool schedule_recurrence_matches(const struct profile_conf *p, int64_t now_ms)
{
	int64_t day;
	int weekday, minute;

	if (!p || p->kind != PROFILE_RECURRENCE)
		return false;
	local_time(p->tz, now_ms, &day, &weekday, &minute);
	if (p->start_minute < p->end_minute)
		return day_in_mask(p->days, weekday) && minute >= p->start_minute && minute < p->end_minute;
	/* The span crosses midnight: its days are the days it starts on, so
	 * the part after midnight belongs to the previous day. */
	if (minute >= p->start_minute)
		return day_in_mask(p->days, weekday);
	if (minute < p->end_minute)
		return day_in_mask(p->days, (weekday + 6) % 7);
	return false;
}

int schedule_active_profile(const struct group_conf *g, int64_t now_ms)
{
	int def = -1;
	size_t i;

	for (i = 0; i < g->n_profiles; i++) {
		const struct profile_conf *p = &g->profiles[i];

		if (p->kind == PROFILE_FIXED && now_ms >= p->start_ms && now_ms < p->end_ms)
			return (int)i;
	}
	for (i = 0; i < g->n_profiles; i++) {
		const struct profile_conf *p = &g->profiles[i];

		if (p->kind == PROFILE_RECURRENCE && schedule_recurrence_matches(p, now_ms))
			return (int)i;
		if (p->kind == PROFILE_DEFAULT && def < 0)
			def = (int)i;
	}
	return def;
}
