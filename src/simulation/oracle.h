/* The perfect-foresight oracle for `autoscaled simulate`: the fewest
 * VM-hours that serve a whole demand series with a given boot delay,
 * knowing the future. It is the physical limit a reactive policy is
 * measured against (cost_ratio = policy VM-hours / oracle VM-hours).
 *
 * Model: the series is cut into steps; step i needs need[i] instances
 * (the caller applies ceil(demand / capacity) and the group's minimum).
 * Instances are stacked in layers: layer j is busy while need >= j + 1, and
 * one instance serves each layer. An instance is launched one boot delay
 * before its layer becomes busy. When the layer goes idle it is removed,
 * unless keeping it through the idle gap is cheaper than removing it and
 * launching another: with per-second billing exactly when the gap is
 * shorter than the boot delay; with a coarse billing granularity or a
 * minimum, whenever the rounded bills say so (oracle.c finds the cheapest
 * grouping). Instances needed at the first step are already running at
 * its start. Lifetimes are billed like the simulated pool's, and all end
 * with the series: a last step that the series covers only in part is
 * billed for that part, not for a whole step.
 */
#ifndef AUTOSCALED_ORACLE_H
#define AUTOSCALED_ORACLE_H

#include <stddef.h>
#include <stdint.h>

struct oracle_params {
	int64_t start_ms;               /* time of step 0 */
	int64_t step_ms;                /* > 0 */
	int64_t boot_ms;                /* >= 0 */
	int64_t billing_granularity_ms; /* <= 0: bill by the millisecond */
	int64_t billing_minimum_ms;     /* <= 0: no minimum */
	/* End of the series: the last step is cut short there when the series
	 * is not a whole number of steps long (it must lie after the last
	 * step's start and at most one step past it). 0: start_ms + n x step_ms. */
	int64_t end_ms;
	/* A warm pool of warm_size members (0: none): a launch that finds a
	 * member available takes it and is ready restore_ms later instead of
	 * boot_ms; the member is replaced, available refill_ms after it was
	 * taken. The oracle takes a member only for a busy interval a
	 * relaunch may serve (the layer's first, or one after an idle gap of
	 * at least the restore delay), so it never counts on a member twice. */
	int warm_size;
	int64_t restore_ms;
	int64_t refill_ms;
};

struct oracle_result {
	double vm_hours;      /* billed */
	int64_t launches;     /* instances launched after the first step */
	int64_t warm_launches; /* of those, taken from the warm pool */
	int peak;             /* the largest need */
};

/* The billed length of one instance lifetime: rounded up to the granularity,
 * at least the minimum. */
int64_t oracle_bill_ms(int64_t lifetime_ms, int64_t granularity_ms, int64_t minimum_ms);

/* Plans the oracle over need[0..n). Returns 0, -EINVAL for a bad parameter
 * or a negative need, or -ENOMEM. */
int oracle_plan(const int *need, size_t n, const struct oracle_params *p, struct oracle_result *ret);

/* The same, one step at a time, in memory that grows with the peak need
 * and not with the number of steps: oracle_new() (p->end_ms is not used),
 * oracle_push() for each step's need in order, then oracle_finish() with
 * the series' end as oracle_params.end_ms describes it. Each returns 0 or
 * a negative errno as oracle_plan() does. */
struct oracle;
int oracle_new(const struct oracle_params *p, struct oracle **ret);
int oracle_push(struct oracle *o, int need);
int oracle_finish(struct oracle *o, int64_t end_ms, struct oracle_result *ret);
void oracle_free(struct oracle *o);

#endif
