/* `autoscaled simulate`: replay a load trace through the decision engine on
 * a virtual clock over a modelled pool, and measure cost and service against
 * the perfect-foresight oracle (DESIGN.md section 7, docs/evaluation.md).
 *
 * The model, step by step (every `step`, default the group's interval):
 *   1. each configured signal gets one sample derived from the trace over
 *      the step that just ended: utilization signals demand / (ready x
 *      capacity) x 100, average signals the demand itself (a group total);
 *   2. instances whose boot delay has passed become ready;
 *   3. engine_evaluate() runs exactly as in the daemon;
 *   4. an action launches instances (ready one boot delay later) or removes
 *      the newest ones (provisioning ones first), and is recorded with
 *      engine_record_action();
 *   5. the step is scored: demand over the coming step against the ready
 *      instances. Billing runs from launch to removal. */
#ifndef AUTOSCALED_SIMULATE_H
#define AUTOSCALED_SIMULATE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "trace.h"

struct sim_params {
	int64_t boot_ms;                /* launch to ready; default 60 s */
	double capacity;                /* demand units one instance serves; default 1 */
	int64_t step_ms;                /* evaluation step; <= 0: the group's interval */
	int64_t billing_granularity_ms; /* default 1 s (per-second billing) */
	int64_t billing_minimum_ms;     /* default 60 s */
};

/* One evaluation step, for --csv and --svg. */
struct sim_step {
	int64_t t_ms;
	double demand;   /* mean over [t, t + step); NaN = no data */
	int required;    /* ceil(demand / capacity) */
	int ready;       /* serving during the step */
	int billed;      /* alive (provisioning or ready) during the step */
	int desired;     /* the engine's final count */
	int action;      /* +1 scaled out, -1 scaled in, 0 held */
	int forecast;    /* instances the forecasts asked for (the most of any signal); -1: no forecast */
};

struct sim_metrics {
	double hours;             /* scored time (steps with data) */
	double vm_hours;
	double oracle_vm_hours;
	double cost_ratio;        /* vm_hours / oracle_vm_hours */
	double theta_u, theta_o;  /* SPEC RG accuracy, % */
	double tau_u, tau_o;      /* SPEC RG timeshare, % */
	double jitter;            /* supply changes minus demand changes, per hour */
	double unserved_fraction; /* demand above ready capacity / all demand */
	int actions_out, actions_in;
	int reversals;            /* direction changes within 10 minutes */
	int peak_ready;
	size_t steps;
};

/* Runs the group over the trace. On success returns 0, fills *m and, when
 * steps is not NULL, stores a malloc'd array of *n_steps records in *steps
 * (the caller frees it). Returns -EINVAL for bad parameters, -ENOMEM, or
 * an engine error. */
int simulate_run(const struct group_conf *g, const struct trace *t, const struct sim_params *p, struct sim_metrics *m,
		 struct sim_step **steps, size_t *n_steps);

/* `autoscaled simulate ...`: argv[0] is "simulate". Returns the exit status. */
int simulate_main(int argc, char **argv);

/* Writes the plot of a run as SVG to PATH: demand (in instances), required,
 * ready and billed instances over time, scale actions marked. Long runs
 * are downsampled (per-pixel maxima, so peaks survive). 0 or -errno. */
int svg_write_plot(const char *path, const char *title, const struct sim_step *steps, size_t n, double capacity);

#endif
