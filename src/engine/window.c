/* Windows: a bounded ring of timestamped samples per signal, aggregated over
 * a duration (see window.h). Samples arrive in time order, so the ring is
 * sorted by time and an aggregate walks back from the newest sample until it
 * leaves the window. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "engine/window.h"

size_t window_capacity_for(int64_t longest_ms, int64_t poll_ms)
{
	int64_t n;

	if (poll_ms <= 0)
		poll_ms = MS_PER_SEC;
	if (longest_ms < 0)
		longest_ms = 0;
	/* Twice the samples the longest window can hold: polls may come early
	 * (a retry, a reload), and a window must never lose its oldest sample
	 * to a burst of them. */
	n = longest_ms / poll_ms;
	if (n > WINDOW_MAX_CAPACITY)
		return WINDOW_MAX_CAPACITY;
	n = 2 * n + 4;
	if (n < 8)
		n = 8;
	if (n > WINDOW_MAX_CAPACITY)
		n = WINDOW_MAX_CAPACITY;
	return (size_t)n;
}

int window_init(struct window *w, size_t cap)
{
	if (cap == 0 || cap > WINDOW_MAX_CAPACITY)
		return -EINVAL;
	memset(w, 0, sizeof(*w));
	w->buf = calloc(cap, sizeof(*w->buf));
	if (!w->buf)
		return -ENOMEM;
	w->cap = w->max_cap = (uint32_t)cap;
	return 0;
}

int window_init_span(struct window *w, size_t cap, int64_t span_ms)
{
	size_t start = cap < WINDOW_START_CAPACITY ? cap : WINDOW_START_CAPACITY;
	int r;

	if (span_ms <= 0)
		return -EINVAL;
	if (cap == 0 || cap > WINDOW_MAX_CAPACITY)
		return -EINVAL;
	r = window_init(w, start);
	if (r < 0)
		return r;
	w->max_cap = (uint32_t)cap;
	w->span_ms = span_ms;
	return 0;
}

/* Doubles the ring (up to max_cap), its samples oldest first from index 0;
 * false on ENOMEM, with the ring as it was. */
static bool grow(struct window *w)
{
	uint32_t cap = w->cap * 2 < w->max_cap ? w->cap * 2 : w->max_cap;
	struct sample *buf = malloc(cap * sizeof(*buf));

	if (!buf)
		return false;
	for (uint32_t i = 0; i < w->n; i++)
		buf[i] = w->buf[(w->head + i) % w->cap];
	free(w->buf);
	w->buf = buf;
	w->cap = cap;
	w->head = 0;
	return true;
}

void window_destroy(struct window *w)
{
	if (!w)
		return;
	free(w->buf);
	memset(w, 0, sizeof(*w));
}

void window_clear(struct window *w)
{
	w->head = 0;
	w->n = 0;
}

/* The i-th sample counted from the oldest. */
static const struct sample *sample_at(const struct window *w, size_t i)
{
	return &w->buf[(w->head + i) % w->cap];
}

const struct sample *window_newest(const struct window *w)
{
	if (!w || w->n == 0)
		return NULL;
	return sample_at(w, w->n - 1);
}

int window_push(struct window *w, int64_t t_ms, double v)
{
	const struct sample *newest = window_newest(w);

	if (!isfinite(v))
		return -EDOM;
	if (newest && t_ms < newest->t_ms)
		return -ERANGE;
	/* A ring that may grow does while its oldest sample is still within
	 * the span (t_ms - oldest cannot overflow: both are stamps in order).
	 * Without the memory it goes on as a full ring: the oldest goes. */
	if (w->n == w->cap &&
	    !(w->cap < w->max_cap && t_ms - w->buf[w->head].t_ms < w->span_ms && grow(w))) {
		w->buf[w->head] = (struct sample){ .t_ms = t_ms, .v = v };
		w->head = (w->head + 1) % w->cap;
		return 0;
	}
	w->buf[(w->head + w->n) % w->cap] = (struct sample){ .t_ms = t_ms, .v = v };
	w->n++;
	return 0;
}

void window_reexpress(struct window *w, int *over, int n)
{
	if (*over > 0 && n > 0 && *over != n) {
		double k = (double)*over / (double)n;

		for (uint32_t i = 0; i < w->n; i++)
			w->buf[(w->head + i) % w->cap].v *= k;
	}
	*over = n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int window_aggregate(const struct window *w, int64_t now_ms, int64_t duration_ms, enum aggregation agg,
		     int64_t staleness_ms, double *ret, const char **reason)
{
	double vals[WINDOW_MAX_CAPACITY];
	double sum = 0, lo = INFINITY, hi = -INFINITY, last = 0;
	size_t k, n = 0, idx;
	int64_t newest_t = INT64_MIN;

	if (!w || w->n == 0) {
		if (reason)
			*reason = "no samples";
		return -ENODATA;
	}
	/* Walk back from the newest sample; samples stamped after now (a clock
	 * that was ahead) are not part of any window yet. The index steps down
	 * and wraps by hand: this loop is most of an evaluation's cost. */
	idx = (w->head + w->n - 1) % w->cap;
	for (k = 0; k < w->n; k++, idx = idx == 0 ? w->cap - 1 : idx - 1) {
		const struct sample *s = &w->buf[idx];

		if (s->t_ms > now_ms)
			continue;
		if (newest_t == INT64_MIN)
			newest_t = s->t_ms;
		if (s->t_ms <= now_ms - duration_ms)
			break;
		if (n == 0)
			last = s->v;
		if (agg == AGG_P95)
			vals[n] = s->v;
		n++;
		sum += s->v;
		if (s->v < lo)
			lo = s->v;
		if (s->v > hi)
			hi = s->v;
	}
	if (newest_t != INT64_MIN && staleness_ms > 0 && newest_t < now_ms - staleness_ms) {
		if (reason)
			*reason = "stale: no sample within the staleness limit";
		return -ENODATA;
	}
	if (n == 0) {
		if (reason)
			*reason = "no sample in the window";
		return -ENODATA;
	}
	switch (agg) {
	case AGG_AVG:
		*ret = sum / (double)n;
		break;
	case AGG_MIN:
		*ret = lo;
		break;
	case AGG_MAX:
		*ret = hi;
		break;
	case AGG_LAST:
		*ret = last;
		break;
	case AGG_P95: {
		/* Nearest rank: the smallest sample with at least 95 % of the
		 * samples at or below it. */
		size_t rank = (size_t)ceil(0.95 * (double)n);

		if (rank < 1)
			rank = 1;
		qsort(vals, n, sizeof(vals[0]), cmp_double);
		*ret = vals[rank - 1];
		break;
	}
	default:
		if (reason)
			*reason = "unknown aggregation";
		return -EINVAL;
	}
	return 0;
}
