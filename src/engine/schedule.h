/* Schedules: which profile of a group is active at a given instant.
 *
 * Precedence: the first fixed-date profile whose [start, end) contains now;
 * else the first recurrence profile matching now in its own IANA time zone
 * (GLib's GTimeZone, so DST changes are right and the process TZ is never
 * touched); else the default profile. Pure: `now` comes in as an argument. */
#ifndef AUTOSCALED_SCHEDULE_H
#define AUTOSCALED_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"

/* Whether a recurrence profile covers now_ms (UTC epoch milliseconds). */
bool schedule_recurrence_matches(const struct profile_conf *p, int64_t now_ms);

/* Index into g->profiles of the profile active at now_ms. */
int schedule_active_profile(const struct group_conf *g, int64_t now_ms);

#endif
