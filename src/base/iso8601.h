/* ISO 8601 times, read and written in one place.
 *
 * Every time the project exchanges as text goes through here: the decision
 * records and the admin API, the state a driver tags its members with, the
 * times a cloud API returns and is asked about, and the timestamps of load
 * traces. The daemon and the driver plugins both link this module (a plugin
 * sees only the ABI, so it is compiled into each), which is why it depends
 * on nothing but libc.
 *
 * What is read: "YYYY-MM-DD", then "T" (or "t", or a space), then
 * "HH:MM:SS" (with ISO8601_SHORT also "HH:MM", or the date alone for
 * midnight), an optional fraction (a dot and any number of digits:
 * milliseconds are kept, further digits dropped), then an optional zone:
 * "Z" (or "z"), or an offset "+hh", "+hh:mm" or "+hhmm" (or with "-"). The
 * date and the time must exist (no February 30th, no hour 24); a leap
 * second (:60) is read as the next second's start, as POSIX does. Only a
 * dot starts a fraction: the formats that carry times are comma-separated,
 * and there "08:00:00,5" is a time and the next field.
 *
 * Times are milliseconds since the epoch, UTC. A time in a named zone (a
 * schedule's "Europe/Berlin") needs the zone's rules: the schedule reads the
 * fields here and resolves them with GLib. */
#ifndef AUTOSCALED_ISO8601_H
#define AUTOSCALED_ISO8601_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Flags of the parsers. */
enum {
	/* A time without a zone is UTC. Without this flag it is refused
	 * (-EINVAL): an operator's "12:00" has no single meaning. */
	ISO8601_UTC_DEFAULT = 1 << 0,
	/* The date alone (midnight) and a time without seconds are read
	 * too, as a configuration's "2026-11-27" or "08:00" wants. */
	ISO8601_SHORT = 1 << 1,
};

/* A time as written. */
struct iso8601_fields {
	int year, month, day, hour, minute, second, millisecond;
	bool has_zone;     /* "Z" or an offset was given */
	int64_t offset_ms; /* east of UTC, when has_zone */
};

/* Reads the fields of a time at *p, not past `end`, and advances *p past
 * it; the date and the time of day are checked (they exist), the zone is not
 * required (ISO8601_UTC_DEFAULT does not apply). Returns 0, or -EINVAL with
 * *p and *ret untouched. */
int iso8601_parse_fields(const char **p, const char *end, unsigned flags, struct iso8601_fields *ret);

/* Reads a time at *p, not past `end`, and advances *p past it: for times
 * inside a larger text (a CSV field). Returns 0, or -EINVAL with *p and
 * *ret_ms untouched. */
int iso8601_parse_prefix(const char **p, const char *end, unsigned flags, int64_t *ret_ms);

/* Reads a time that is the whole of the string s. Returns 0, or -EINVAL
 * (also for NULL, and for anything after the time) with *ret_ms untouched. */
int iso8601_parse(const char *s, unsigned flags, int64_t *ret_ms);

/* How many digits of the second are written. */
enum iso8601_precision {
	ISO8601_SECONDS,       /* "2026-03-01T08:00:00Z": truncated to the second */
	ISO8601_MILLIS,        /* "2026-03-01T08:00:00.000Z" */
	ISO8601_MILLIS_IF_ANY, /* milliseconds only when there are some */
};

/* Writes `ms` as UTC ("...Z") into buf (at most len bytes, NUL included;
 * 32 always suffice). Returns 0, or -ERANGE with buf empty when the time
 * cannot be shown or does not fit. */
int iso8601_format(int64_t ms, enum iso8601_precision precision, char *buf, size_t len);

#endif
