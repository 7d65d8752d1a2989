/* Windows: a signal's timestamped samples in a bounded ring, aggregated over
 * a duration. A window with no sample newer than the staleness limit is
 * invalid, never zero. Pure computation: no clock reads, no I/O.
 *
 * The ring is allocated by window_init() at its capacity, or by
 * window_init_span() small, growing up to its capacity only while the
 * samples it holds are all within the span some aggregate may read. When
 * it is full (and cannot grow) the oldest sample is overwritten. */
#ifndef AUTOSCALED_WINDOW_H
#define AUTOSCALED_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

#define WINDOW_MAX_CAPACITY 4096

struct sample {
	/* The daemon stamps samples with monotonic time (clock.h), which never
	 * goes back: a wall-clock step can neither drop a reading as out of
	 * order nor age a window at once. */
	int64_t t_ms;
	double v;
};

struct window {
	struct sample *buf; /* owned */
	uint32_t cap;       /* samples buf holds */
	uint32_t max_cap;   /* what it may grow to */
	uint32_t head;      /* index of the oldest sample */
	uint32_t n;
	/* window_init_span(): the longest duration aggregated over; 0 with
	 * window_init(), whose ring never grows. */
	int64_t span_ms;
};

/* Capacity needed to hold `longest_ms` of samples taken every `poll_ms`,
 * with slack, clamped to [8, WINDOW_MAX_CAPACITY]. */
size_t window_capacity_for(int64_t longest_ms, int64_t poll_ms);

/* 0 or -ENOMEM (-EINVAL for a capacity out of [1, WINDOW_MAX_CAPACITY]). */
int window_init(struct window *w, size_t cap);
/* The same for a window that no aggregate reads over more than SPAN_MS
 * (> 0): its ring starts at WINDOW_START_CAPACITY (or CAP when smaller)
 * and doubles, up to CAP, when it is full and its oldest sample is less
 * than SPAN_MS older than the one pushed. What it aggregates is what a
 * ring of CAP would, in a fraction of the memory when the samples come at
 * the pace the capacity was sized for with slack (window_capacity_for()):
 * 30,000 signals hold 64 bytes each instead of 128 or more. */
#define WINDOW_START_CAPACITY 4
int window_init_span(struct window *w, size_t cap, int64_t span_ms);
void window_destroy(struct window *w);
void window_clear(struct window *w);

/* Appends a sample. A sample older than the newest one is dropped (returns
 * -ERANGE); NaN and infinities are refused (-EDOM): a bad reading is never
 * stored. */
int window_push(struct window *w, int64_t t_ms, double v);

/* Aggregates the samples with t in (now - duration, now]. Returns 0 and sets
 * *ret, or -ENODATA when there is no sample in the window or the newest
 * sample is older than now - staleness_ms (staleness_ms <= 0: no limit); then
 * *reason (if not NULL) says which, as a static string. */
int window_aggregate(const struct window *w, int64_t now_ms, int64_t duration_ms, enum aggregation agg,
		     int64_t staleness_ms, double *ret, const char **reason);

/* A utilization window's samples re-expressed over the instances ready
 * now. Each sample is a mean over the instances that were ready when it
 * was taken, *OVER of them for every sample in the window (0: not known);
 * the load it measured, spread over N instances, reads v x *OVER / N. A
 * window aggregated over a minute would otherwise multiply a reading taken
 * with 7 instances ready at 285 % by the 20 ready after a scale-out (57
 * instances asked for where 20 carry the load), and after a scale-in
 * read the fewer instances as idle as the many were. Samples taken over
 * an unknown count (*OVER or N 0 or less) are left as they are; *OVER
 * becomes N. */
void window_reexpress(struct window *w, int *over, int n);

/* The newest sample, or NULL when empty. */
const struct sample *window_newest(const struct window *w);

#endif
