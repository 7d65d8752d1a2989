/* The perfect-foresight oracle: see oracle.h. */
#include <errno.h>
#include <stdlib.h>

#include "oracle.h"

int64_t oracle_bill_ms(int64_t lifetime_ms, int64_t granularity_ms, int64_t minimum_ms)
{
	int64_t b = lifetime_ms < 0 ? 0 : lifetime_ms;

	if (granularity_ms > 0)
		b = (b + granularity_ms - 1) / granularity_ms * granularity_ms;
	if (minimum_ms > 0 && b < minimum_ms)
		b = minimum_ms;
	return b;
}

struct layer {
	int64_t launch_ms;
	int64_t idle_since_ms; /* -1 while busy or never started */
	int started;
};

int oracle_plan(const int *need, size_t n, const struct oracle_params *p, struct oracle_result *ret)
{
	struct oracle_result res = {0};
	struct layer *layers;
	int64_t billed_ms = 0;
	int peak = 0, prev = 0;

	if (!need || !p || !ret || p->step_ms <= 0 || p->boot_ms < 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (need[i] < 0)
			return -EINVAL;
		if (need[i] > peak)
			peak = need[i];
	}
	layers = calloc((size_t)peak + 1, sizeof(*layers));
	if (!layers)
		return -ENOMEM;
	/* One more pass than there are steps: at the end every layer goes idle. */
	for (size_t i = 0; i <= n; i++) {
		int cur = i < n ? need[i] : 0;
		int64_t t = p->start_ms + (int64_t)i * p->step_ms;

		for (int j = prev; j < cur; j++) {
			struct layer *l = &layers[j];

			if (l->started && t - l->idle_since_ms < p->boot_ms) {
				l->idle_since_ms = -1; /* kept through the gap */
				continue;
			}
			if (l->started)
				billed_ms += oracle_bill_ms(l->idle_since_ms - l->launch_ms, p->billing_granularity_ms,
							    p->billing_minimum_ms);
			l->started = 1;
			l->idle_since_ms = -1;
			if (i == 0) {
				l->launch_ms = t;
			} else {
				l->launch_ms = t - p->boot_ms;
				res.launches++;
			}
		}
		for (int j = cur; j < prev; j++)
			layers[j].idle_since_ms = t;
		prev = cur;
	}
	for (int j = 0; j < peak; j++)
		if (layers[j].started)
			billed_ms += oracle_bill_ms(layers[j].idle_since_ms - layers[j].launch_ms,
						    p->billing_granularity_ms, p->billing_minimum_ms);
	free(layers);
	res.vm_hours = (double)billed_ms / 3.6e6;
	res.peak = peak;
	*ret = res;
	return 0;
}
