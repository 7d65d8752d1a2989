/* Time zones and date-times of schedules (schedule-tz.c): the configuration
 * resolves each profile's zone and fixed dates when it loads; the engine's
 * schedule.c matches recurrences in these zones at run time. */
#ifndef AUTOSCALED_CONFIG_SCHEDULE_TZ_H
#define AUTOSCALED_CONFIG_SCHEDULE_TZ_H

#include <stdint.h>

/* Resolves an IANA zone name for profile_conf.tz. Returns 0 and stores an
 * owned handle in *ret, or -ENOENT for an unknown zone. */
int schedule_tz_open(const char *name, void **ret);
void schedule_tz_close(void *tz);

/* Parses an ISO 8601 date-time ("2026-11-27T08:00:00", optionally with "Z" or
 * "+01:00"); a time without an offset is read in zone `tz` (NULL = UTC).
 * Returns 0 or -EINVAL. */
int schedule_parse_datetime(const char *s, void *tz, int64_t *ret_ms);

#endif
