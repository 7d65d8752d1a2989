/* Load traces for `autoscaled simulate`: a recorded demand series read from
 * one of a few trace formats, streamed as piecewise-constant segments.
 *
 * Formats (docs/traces.md describes each with its quirks):
 *   nasa       one line of space-separated per-second request counts;
 *              an hour or more of zeros is an outage (no data)
 *   azure-llm  CSV of request arrivals (TIMESTAMP,ContextTokens,...),
 *              aggregated to requests per second
 *   bitbrains  GWA-T-12 per-VM CSV (";\t"-separated, 5-minute rows);
 *              demand = "CPU usage [MHZ]"
 *   csv        "time,value" rows; time in epoch seconds or milliseconds,
 *              or ISO 8601
 *   swf        Standard Workload Format (Parallel Workloads Archive);
 *              demand = processors of the jobs running
 *   requests   "time,duration" request log; demand = requests in service
 *
 * Any of them may be compressed with gzip, bzip2 or xz: the reader tells
 * by the first bytes, not by the name, and decompresses as it reads.
 *
 * Every reader streams: it holds a bounded read buffer plus what the
 * format needs to settle the demand at one instant (the jobs or requests
 * in flight), never the whole file or series. A segment is emitted once
 * nothing later in the file can change it, so a consumer that reads up
 * to time t has seen nothing about the demand after t, with one bounded
 * exception: whether a run of zeros in a nasa trace is an outage is
 * known only at the end of the run (at most TRACE_NASA_OUTAGE_POINTS
 * seconds later). Time not covered by a segment has no data; simulate
 * treats it as "the source failed". */
#ifndef AUTOSCALED_TRACE_H
#define AUTOSCALED_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* enum trace_format and its names: the configuration names the formats
 * too (a forecast's seed_format). */
#include "config/config.h"

/* A csv or bitbrains row's value holds until the next row, for at most
 * this long; a longer silence is a gap (no data) after it. */
#define TRACE_MAX_HOLD_MS (3600 * INT64_C(1000))

/* In a nasa trace, this many consecutive seconds without a request are an
 * outage (no data), not zero demand. */
#define TRACE_NASA_OUTAGE_POINTS 3600

/* Longest line (or nasa token) a reader takes; longer is an error. */
#define TRACE_MAX_LINE 65536

/* Jobs or requests that may be in flight at once (swf, requests); more
 * is refused, which bounds the memory a file controls. */
#define TRACE_MAX_IN_FLIGHT (4u * 1024 * 1024)

/* Demand v (>= 0, finite) over [start_ms, end_ms), UTC epoch milliseconds.
 * A reader's segments are ordered and do not overlap. */
struct trace_seg {
	int64_t start_ms;
	int64_t end_ms;
	double v;
};

struct trace_reader;

/* Opens PATH in format FMT (compressed or not). 0 or a negative errno,
 * logged with the file name. */
int trace_open(const char *path, enum trace_format fmt, struct trace_reader **ret);

/* The same over a buffer in memory that outlives the reader (tests,
 * fuzzing); `name` is used in messages and must outlive it too. */
int trace_open_buffer(const void *buf, size_t len, enum trace_format fmt, const char *name,
		      struct trace_reader **ret);

/* A regular series in memory (tests, benchmarks): point i is v[i] over
 * [start_ms + i x res_ms, + res_ms); NaN is no data. v must outlive the
 * reader. */
int trace_open_series(int64_t start_ms, int64_t res_ms, const double *v, size_t n, struct trace_reader **ret);

/* The next segment: 1 and *ret, 0 at the end of the trace, or a negative
 * errno (-EINVAL for content that is not the format, -EIO for a corrupt
 * compressed stream), logged once with the file name and line. After an
 * error or the end, it keeps returning the same. */
int trace_next(struct trace_reader *r, struct trace_seg *ret);

void trace_close(struct trace_reader *r);

/* Windowed means over a reader, for a consumer that moves forward in time:
 * keeps the segments read since the last trace_cursor_drop. */
struct trace_cursor {
	struct trace_reader *r;
	struct trace_seg *q;
	size_t head, n, cap;
	int64_t end_ms; /* end of the last segment read */
	bool eof;
	int err;
};

void trace_cursor_init(struct trace_cursor *c, struct trace_reader *r);
void trace_cursor_destroy(struct trace_cursor *c);

/* Start of the first segment: 0 and *ret, -ENODATA for an empty trace, or
 * the reader's error. */
int trace_cursor_start(struct trace_cursor *c, int64_t *ret);

/* Mean demand over [from_ms, to_ms), weighting segments by overlap; NaN
 * when the interval holds no data (FROM must not lie before a time given
 * to trace_cursor_drop). 0 or the reader's error. Reads the trace up to to_ms and no further. */
int trace_cursor_mean(struct trace_cursor *c, int64_t from_ms, int64_t to_ms, double *ret);

/* Forgets the segments that end at or before T: later calls must not ask
 * about time before it. */
void trace_cursor_drop(struct trace_cursor *c, int64_t t_ms);

/* Whether the trace has data at or after T: 1, 0, or the reader's error. */
int trace_cursor_more(struct trace_cursor *c, int64_t t_ms);

#endif
