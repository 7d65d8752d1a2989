/* The perfect-foresight oracle: see oracle.h.
 *
 * The demand is cut into layers and each layer into its busy intervals.
 * Per layer, the intervals are grouped into instance lifetimes: a lifetime
 * covers consecutive intervals, launched one boot delay before the first
 * and removed at the end of the last. With per-second billing the best
 * grouping bridges exactly the gaps shorter than the boot delay; with a
 * coarse granularity or a minimum, bridging a longer gap can be cheaper, so
 * the grouping is found by dynamic programming. A gap of at least boot + 2
 * x (granularity + minimum) is never worth bridging (relaunching costs at
 * most the boot delay plus one rounding and one minimum per side), which
 * cuts each layer into independent segments.
 *
 * The plan is built as the needs arrive, one step at a time: each layer
 * keeps its open interval and, of the last ORACLE_LOOKBACK lifetime starts
 * of its current segment, those that can still be the cheapest, so memory
 * grows with the peak need, not with the length of the series. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "simulation/oracle.h"

/* Lifetimes considered per interval: bounds the work of one segment when
 * billing is coarse and a layer is busy in many short bursts. */
#define ORACLE_LOOKBACK 512

int64_t oracle_bill_ms(int64_t lifetime_ms, int64_t granularity_ms, int64_t minimum_ms)
{
	int64_t b = lifetime_ms < 0 ? 0 : lifetime_ms;

	if (granularity_ms > 0)
		b = (b + granularity_ms - 1) / granularity_ms * granularity_ms;
	if (minimum_ms > 0 && b < minimum_ms)
		b = minimum_ms;
	return b;
}

/* One busy interval of the current segment, as a possible first interval
 * of a lifetime: when an instance for it would launch, and the cheapest
 * cost (and its launches) of the segment's intervals before it. */
struct candidate {
	int64_t launch_ms;
	int64_t best_before;
	int64_t launches_before;
	uint64_t seq;  /* its place in the segment: the look-back counts these */
	bool at_start; /* busy at the first step: no launch */
	bool warm;     /* launched from the warm pool */
	int64_t warm_before;
};

struct layer {
	/* The segment's candidates still worth a look, oldest first: only
	 * the last ORACLE_LOOKBACK of the segment count, and one that can no
	 * longer be the cheapest (see layer_close) is dropped. */
	struct candidate *ring;
	size_t ring_n, ring_cap;
	uint64_t next_seq;
	int64_t busy_since; /* start of the open interval */
	int64_t last_end;   /* end of the last closed one */
	bool busy, any;
	int64_t seg_best, seg_launches, seg_warm; /* the segment's intervals so far */
};

struct oracle {
	struct oracle_params p;
	struct layer *layers;
	size_t n_layers; /* allocated; busy ones are [0, prev) */
	int prev, peak;
	size_t n;
	int64_t never_bridge, billed_ms, launches, warm_launches;
	/* When each warm pool member is available: taken members are
	 * replaced at once, so the pool always has warm_size of them. */
	int64_t *warm_avail;
};

int oracle_new(const struct oracle_params *p, struct oracle **ret)
{
	struct oracle *o;

	if (!p || !ret || p->step_ms <= 0 || p->boot_ms < 0 || p->warm_size < 0 || p->restore_ms < 0 ||
	    p->refill_ms < 0 || (p->warm_size > 0 && p->restore_ms > p->boot_ms))
		return -EINVAL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->p = *p;
	if (p->warm_size > 0) {
		/* The pool is full when the series starts. */
		o->warm_avail = calloc((size_t)p->warm_size, sizeof(*o->warm_avail));
		if (!o->warm_avail) {
			free(o);
			return -ENOMEM;
		}
		for (int i = 0; i < p->warm_size; i++)
			o->warm_avail[i] = INT64_MIN;
	}
	o->never_bridge = p->boot_ms + 2 * ((p->billing_granularity_ms > 0 ? p->billing_granularity_ms : 0) +
					    (p->billing_minimum_ms > 0 ? p->billing_minimum_ms : 0));
	*ret = o;
	return 0;
}

void oracle_free(struct oracle *o)
{
	if (!o)
		return;
	for (size_t j = 0; j < o->n_layers; j++)
		free(o->layers[j].ring);
	free(o->layers);
	free(o->warm_avail);
	free(o);
}

static void commit_segment(struct oracle *o, struct layer *l)
{
	o->billed_ms += l->seg_best;
	o->launches += l->seg_launches;
	o->warm_launches += l->seg_warm;
	l->seg_best = l->seg_launches = l->seg_warm = 0;
	l->ring_n = 0;
	l->next_seq = 0;
}

/* Takes a warm pool member available at LAUNCH_MS, if there is one, and
 * starts its replacement. Launches come in time order (each restore_ms
 * before the interval it serves), so the member available longest is as
 * good as any. */
static bool warm_take(struct oracle *o, int64_t launch_ms)
{
	int best = -1;

	for (int i = 0; i < o->p.warm_size; i++)
		if (o->warm_avail[i] <= launch_ms && (best < 0 || o->warm_avail[i] < o->warm_avail[best]))
			best = i;
	if (best < 0)
		return false;
	/* A refill that takes no time still serves only later launches. */
	o->warm_avail[best] = launch_ms + (o->p.refill_ms > 0 ? o->p.refill_ms : 1);
	return true;
}

/* Layer L becomes busy at T. */
static int layer_open(struct oracle *o, struct layer *l, int64_t t)
{
	struct candidate *c;

	if (l->any && t - l->last_end >= o->never_bridge)
		commit_segment(o, l);
	if (l->ring_n == l->ring_cap) {
		size_t cap = l->ring_cap ? 2 * l->ring_cap : 4;
		struct candidate *v;

		/* At most ORACLE_LOOKBACK are kept (layer_close drops older
		 * ones), so the buffer stops growing there. */
		v = realloc(l->ring, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->ring = v;
		l->ring_cap = cap;
	}
	c = &l->ring[l->ring_n++];
	c->seq = l->next_seq++;
	/* Instances busy at the first step are running when the series starts. */
	c->at_start = t == o->p.start_ms;
	c->launch_ms = c->at_start ? t : t - o->p.boot_ms;
	/* A gap shorter than the restore delay is bridged whatever the
	 * billing (keeping the instance costs less than the restore): no
	 * member is taken for it. */
	c->warm = !c->at_start && o->p.warm_size > 0 && (!l->any || t - l->last_end >= o->p.restore_ms) &&
		  warm_take(o, t - o->p.restore_ms);
	if (c->warm)
		c->launch_ms = t - o->p.restore_ms;
	c->best_before = l->seg_best;
	c->launches_before = l->seg_launches;
	c->warm_before = l->seg_warm;
	l->busy = true;
	l->busy_since = t;
	return 0;
}

static int64_t bill(const struct oracle *o, int64_t lifetime_ms)
{
	int64_t b = lifetime_ms < 0 ? 0 : lifetime_ms, g = o->p.billing_granularity_ms;

	if (g > 1)
		b = (b + g - 1) / g * g;
	return b < o->p.billing_minimum_ms ? o->p.billing_minimum_ms : b;
}

/* Layer L goes idle at T: the cheapest grouping of the segment up to here
 * ends a lifetime at T, started at one of the last ORACLE_LOOKBACK
 * candidates (the latest of the cheapest ones).
 *
 * Candidates that can never be the cheapest again are dropped, which keeps
 * the scan short. With K = best_before - launch_ms, an older candidate i
 * costs B_i + bill(T - L_i) against a newer j's B_j + bill(T - L_j). Once
 * j's lifetime has reached the billing minimum, bill(x) lies in
 * [x, x + g - 1] for both (g the granularity, at least 1 ms), so i costs
 * at least K_i - K_j - g + 1 more than j, now and at every later T: when
 * K_i >= K_j + g, i is never the cheapest again. Candidates that left the
 * look-back are dropped too. */
static void layer_close(struct oracle *o, struct layer *l, int64_t t)
{
	struct candidate *v = l->ring;
	size_t n = l->ring_n, w;
	uint64_t lo = l->next_seq > ORACLE_LOOKBACK ? l->next_seq - ORACLE_LOOKBACK : 0;
	int64_t best = INT64_MAX, launches = 0, warm = 0, min_k = INT64_MAX;
	int64_t g = o->p.billing_granularity_ms > 1 ? o->p.billing_granularity_ms : 1;

	for (size_t k = n; k-- > 0;) {
		int64_t key = v[k].best_before - v[k].launch_ms, cost;

		if (v[k].seq < lo || (min_k != INT64_MAX && key - g >= min_k)) {
			v[k].seq = UINT64_MAX; /* dropped below */
			continue;
		}
		cost = v[k].best_before + bill(o, t - v[k].launch_ms);
		if (cost < best) {
			best = cost;
			launches = v[k].launches_before + !v[k].at_start;
			warm = v[k].warm_before + v[k].warm;
		}
		if (t - v[k].launch_ms >= o->p.billing_minimum_ms && key < min_k)
			min_k = key;
	}
	for (size_t k = w = 0; k < n; k++)
		if (v[k].seq != UINT64_MAX)
			v[w++] = v[k];
	l->ring_n = w;
	l->seg_best = best;
	l->seg_launches = launches;
	l->seg_warm = warm;
	l->busy = false;
	l->any = true;
	l->last_end = t;
}

int oracle_push(struct oracle *o, int need)
{
	int64_t t;
	int r;

	if (need < 0)
		return -EINVAL;
	t = o->p.start_ms + (int64_t)o->n * o->p.step_ms;
	if ((size_t)need > o->n_layers) {
		size_t cap = o->n_layers ? o->n_layers : 16;
		struct layer *v;

		while (cap < (size_t)need)
			cap *= 2;
		v = realloc(o->layers, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		for (size_t j = o->n_layers; j < cap; j++)
			v[j] = (struct layer){0};
		o->layers = v;
		o->n_layers = cap;
	}
	for (int j = o->prev; j < need; j++) {
		r = layer_open(o, &o->layers[j], t);
		if (r < 0)
			return r;
	}
	for (int j = need; j < o->prev; j++)
		layer_close(o, &o->layers[j], t);
	o->prev = need;
	if (need > o->peak)
		o->peak = need;
	o->n++;
	return 0;
}

int oracle_finish(struct oracle *o, int64_t series_end_ms, struct oracle_result *ret)
{
	int64_t end_ms = o->p.start_ms + (int64_t)o->n * o->p.step_ms;

	if (series_end_ms != 0) {
		if (o->n == 0 || series_end_ms <= end_ms - o->p.step_ms || series_end_ms > end_ms)
			return -EINVAL;
		end_ms = series_end_ms;
	}
	/* At the end of the series every layer goes idle. */
	for (int j = 0; j < o->prev; j++)
		layer_close(o, &o->layers[j], end_ms);
	o->prev = 0;
	for (size_t j = 0; j < o->n_layers; j++)
		if (o->layers[j].any)
			commit_segment(o, &o->layers[j]);
	ret->vm_hours = (double)o->billed_ms / 3.6e6;
	ret->launches = o->launches;
	ret->warm_launches = o->warm_launches;
	ret->peak = o->peak;
	return 0;
}

int oracle_plan(const int *need, size_t n, const struct oracle_params *p, struct oracle_result *ret)
{
	struct oracle *o = NULL;
	int r;

	if (!need || !ret)
		return -EINVAL;
	r = oracle_new(p, &o);
	for (size_t i = 0; r == 0 && i < n; i++)
		r = oracle_push(o, need[i]);
	if (r == 0)
		r = oracle_finish(o, p->end_ms, ret);
	oracle_free(o);
	return r;
}
