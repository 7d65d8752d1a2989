/* Load traces for `autoscaled simulate`: a recorded demand series read from
 * one of a few public trace formats into one uniform, regularly spaced series.
 *
 * Formats (docs/evaluation.md describes each with its quirks):
 *   nasa       one line of space-separated per-second request counts;
 *              an hour or more of zeros is an outage (no data)
 *   azure-llm  CSV of request arrivals (TIMESTAMP,ContextTokens,...),
 *              aggregated to requests per second
 *   bitbrains  GWA-T-12 per-VM CSV (";\t"-separated, 5-minute rows);
 *              demand = "CPU usage [MHZ]"
 *   csv        "time,value" rows; time in seconds or ISO 8601
 *
 * A value is NaN where the trace has no data (a gap too long to bridge);
 * simulate treats such steps as "the source failed". */
#ifndef AUTOSCALED_TRACE_H
#define AUTOSCALED_TRACE_H

#include <stddef.h>
#include <stdint.h>

/* Upper bound on the points of one series, which bounds the memory a trace
 * file controls (at 8 bytes a point). */
#define TRACE_MAX_POINTS (64u * 1024 * 1024)

/* Gaps in bitbrains and csv traces up to this long are bridged by linear
 * interpolation; longer ones are left as NaN. */
#define TRACE_MAX_BRIDGED_GAP_MS (3600 * INT64_C(1000))

/* In a nasa trace, this many consecutive seconds without a request are an
 * outage (NaN), not zero demand. */
#define TRACE_NASA_OUTAGE_POINTS 3600

enum trace_format {
	TRACE_NASA,
	TRACE_AZURE_LLM,
	TRACE_BITBRAINS,
	TRACE_CSV,
};

/* Point i holds the demand over [start_ms + i * res_ms, start_ms + (i+1) * res_ms). */
struct trace {
	int64_t start_ms; /* UTC epoch milliseconds of point 0 */
	int64_t res_ms;   /* spacing of the points, > 0 */
	double *v;        /* owned; NaN = no data */
	size_t n;
};

/* "nasa", "azure-llm", "bitbrains", "csv" -> the format. 0 or -EINVAL. */
int trace_format_parse(const char *name, enum trace_format *ret);
const char *trace_format_name(enum trace_format f);

/* Reads PATH in format FMT. On success returns 0 and fills *ret (free with
 * trace_free). On failure returns a negative errno (-EINVAL for content that
 * is not the format, -E2BIG beyond TRACE_MAX_POINTS), logs once why with the
 * file name and line, and leaves *ret untouched. */
int trace_load(const char *path, enum trace_format fmt, struct trace *ret);

/* The same, from a buffer in memory (for tests); `name` is used in messages. */
int trace_parse(const char *buf, size_t len, enum trace_format fmt, const char *name, struct trace *ret);

void trace_free(struct trace *t);

/* Mean demand over [from_ms, to_ms), weighting points by overlap and leaving
 * out NaN points; NaN when the interval holds no data. */
double trace_mean(const struct trace *t, int64_t from_ms, int64_t to_ms);

/* End of the last point. */
int64_t trace_end_ms(const struct trace *t);

#endif
