/* Pure parsing helpers of the signal sources: no I/O, no clock, so the unit
 * tests cover them directly. Each returns 0 or a negative errno and, on
 * failure, writes a human reason into ERR. */
#ifndef AUTOSCALED_SOURCES_PARSE_H
#define AUTOSCALED_SOURCES_PARSE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

enum reduce {
	REDUCE_NONE,  /* several series are an error */
	REDUCE_SUM,
	REDUCE_AVG,
	REDUCE_MAX,
	REDUCE_MIN,
};

/* "sum", "avg", "max", "min" or "none" -> enum; -EINVAL otherwise. */
int parse_reduce(const char *s, enum reduce *ret);

/* A whole string as a finite or non-finite double: leading and trailing
 * blanks allowed, nothing else. -EINVAL when it is not a number. */
int parse_number(const char *s, double *ret);

/* The last number in TEXT (LEN bytes), e.g. "queue depth: 42\n" -> 42,
 * "1.5e3 items" -> 1500. -ENODATA when there is none. */
int parse_last_number(const char *text, size_t len, double *ret);

/* Parses a JSON document of LEN bytes after checking its nesting depth
 * is at most MAX_DEPTH (cJSON itself allows 1000). The result is freed
 * with cJSON_Delete(). -EBADMSG for invalid JSON, -E2BIG when too deep. */
int json_parse_bounded(const char *text, size_t len, int max_depth, cJSON **ret, char *err, size_t errlen);

/* Resolves an RFC 6901 JSON pointer ("" is the whole document, "/a/0/b~1c"
 * is member "b/c" of element 0 of member "a"). -ENOENT when absent,
 * -EINVAL for a malformed pointer. */
int json_pointer_get(cJSON *root, const char *pointer, cJSON **ret, char *err, size_t errlen);

/* A JSON number, or a string holding one, as a double. -EINVAL otherwise. */
int json_number(const cJSON *item, double *ret, char *err, size_t errlen);

/* An instant-query reply of the Prometheus HTTP API, reduced to one value.
 * -EREMOTEIO for "status":"error" (ERR holds Prometheus's errorType and
 * error), -ENODATA for an empty vector, -ENOTUNIQ for several series
 * without a reduction, -EBADMSG for anything else unexpected. Scalars are
 * accepted as one value. */
int prometheus_parse(const char *body, size_t len, enum reduce reduce, double *ret, char *err, size_t errlen);

/* HAProxy's stats CSV ("# pxname,svname,..." then one row per proxy,
 * server, FRONTEND and BACKEND). Picks the row whose pxname is PROXY and
 * whose svname is SERVER (when SERVER is NULL: FRONTEND, or BACKEND if the
 * proxy has no frontend), and reads column COLUMN by its header name.
 * -ENOENT for an absent proxy, row or column, -ENODATA for an empty field,
 * -EBADMSG for a malformed table. */
int haproxy_csv_value(const char *csv, size_t len, const char *proxy, const char *server, const char *column,
		      double *ret, char *err, size_t errlen);

/* True when COLUMN is a cumulative counter of the stats CSV (stot,
 * req_tot, bin, ...), whose useful reading is its per-second rate. */
bool haproxy_column_cumulative(const char *column);

/* Per-second rate from two readings of a cumulative counter. A counter
 * that went down was reset (HAProxy restarted or cleared its counters):
 * the new reading is then the increase since the reset, as Prometheus's
 * rate() does. -EINVAL when DT_MS <= 0. */
int counter_rate(double prev, double cur, double dt_ms, double *ret);

/* A replayed series: times in seconds from the first row, values scaled. */
struct series {
	double *t;
	double *v;
	size_t n;
};

/* Reads "time,value" CSV text: an optional header row, then rows of
 * numbers separated by commas, semicolons or blanks. COLUMN selects the
 * value column by header name or 1-based index ("2" by default); time is
 * always the first column and must not decrease. -EBADMSG with the line
 * number for a bad row, -ENODATA for no rows. */
int series_parse(const char *text, size_t len, const char *column, double scale, struct series *ret, char *err,
		 size_t errlen);
void series_clear(struct series *s);

/* The value of S at ELAPSED seconds, stepwise (the last row at or before),
 * looping over the series' span (from the first time to one step past the
 * last). */
double series_at(const struct series *s, double elapsed);

#endif
