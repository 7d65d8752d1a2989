/* The perfect-foresight oracle: see oracle.h.
 *
 * First the demand is cut into layers and each layer into its busy
 * intervals. Then, per layer, the intervals are grouped into instance
 * lifetimes: a lifetime covers consecutive intervals, launched one boot
 * delay before the first and removed at the end of the last. With
 * per-second billing the best grouping bridges exactly the gaps shorter
 * than the boot delay; with a coarse granularity or a minimum, bridging a
 * longer gap can be cheaper, so the grouping is found by dynamic
 * programming. A gap of at least boot + 2 x (granularity + minimum) is never
 * worth bridging (relaunching costs at most the boot delay plus one
 * rounding and one minimum per side), which cuts each layer into short,
 * independent segments. */
#include <errno.h>
#include <stdlib.h>

#include "oracle.h"

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

struct interval {
	int64_t start, end;
};

struct layer {
	struct interval *v;
	size_t n, cap;
};

static int layer_push(struct layer *l, int64_t start)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct interval *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n].start = start;
	l->v[l->n].end = start;
	l->n++;
	return 0;
}

static int64_t launch_of(const struct interval *iv, const struct oracle_params *p)
{
	/* Instances busy at the first step are running when the trace starts. */
	return iv->start == p->start_ms ? p->start_ms : iv->start - p->boot_ms;
}

/* Cheapest grouping of v[0..n) into lifetimes; adds its cost and launches. */
static int plan_segment(const struct interval *v, size_t n, const struct oracle_params *p, int64_t *billed,
			int64_t *launches)
{
	int64_t *best = malloc((n + 1) * sizeof(*best));
	size_t *from = malloc((n + 1) * sizeof(*from));

	if (!best || !from) {
		free(best);
		free(from);
		return -ENOMEM;
	}
	best[0] = 0;
	for (size_t j = 0; j < n; j++) {
		size_t lo = j + 1 > ORACLE_LOOKBACK ? j + 1 - ORACLE_LOOKBACK : 0;

		best[j + 1] = INT64_MAX;
		for (size_t i = j + 1; i-- > lo;) {
			int64_t c = best[i] + oracle_bill_ms(v[j].end - launch_of(&v[i], p), p->billing_granularity_ms,
							      p->billing_minimum_ms);

			if (c < best[j + 1]) {
				best[j + 1] = c;
				from[j + 1] = i;
			}
		}
	}
	*billed += best[n];
	for (size_t j = n; j > 0; j = from[j])
		*launches += v[from[j]].start != p->start_ms;
	free(best);
	free(from);
	return 0;
}

int oracle_plan(const int *need, size_t n, const struct oracle_params *p, struct oracle_result *ret)
{
	struct oracle_result res = {0};
	struct layer *layers;
	int64_t billed_ms = 0, never_bridge, end_ms;
	int peak = 0, prev = 0, r = 0;

	if (!need || !p || !ret || p->step_ms <= 0 || p->boot_ms < 0)
		return -EINVAL;
	end_ms = p->start_ms + (int64_t)n * p->step_ms;
	if (p->end_ms != 0) {
		if (n == 0 || p->end_ms <= end_ms - p->step_ms || p->end_ms > end_ms)
			return -EINVAL;
		end_ms = p->end_ms;
	}
	for (size_t i = 0; i < n; i++) {
		if (need[i] < 0)
			return -EINVAL;
		if (need[i] > peak)
			peak = need[i];
	}
	layers = calloc((size_t)peak + 1, sizeof(*layers));
	if (!layers)
		return -ENOMEM;
	/* One more pass than there are steps: at the end of the series every
	 * layer goes idle. */
	for (size_t i = 0; i <= n && r == 0; i++) {
		int cur = i < n ? need[i] : 0;
		int64_t t = i < n ? p->start_ms + (int64_t)i * p->step_ms : end_ms;

		for (int j = prev; j < cur && r == 0; j++)
			r = layer_push(&layers[j], t);
		for (int j = cur; j < prev; j++)
			layers[j].v[layers[j].n - 1].end = t;
		prev = cur;
	}
	never_bridge = p->boot_ms + 2 * ((p->billing_granularity_ms > 0 ? p->billing_granularity_ms : 0) +
					 (p->billing_minimum_ms > 0 ? p->billing_minimum_ms : 0));
	for (int j = 0; j < peak && r == 0; j++) {
		const struct layer *l = &layers[j];
		size_t a = 0;

		for (size_t b = 1; b <= l->n && r == 0; b++) {
			if (b < l->n && l->v[b].start - l->v[b - 1].end < never_bridge)
				continue;
			r = plan_segment(&l->v[a], b - a, p, &billed_ms, &res.launches);
			a = b;
		}
	}
	for (int j = 0; j <= peak; j++)
		free(layers[j].v);
	free(layers);
	if (r < 0)
		return r;
	res.vm_hours = (double)billed_ms / 3.6e6;
	res.peak = peak;
	*ret = res;
	return 0;
}
