/* `autoscaled simulate`: replay a load trace through the decision engine on
 * a virtual clock over a modelled pool, and measure cost and service against
 * the perfect-foresight oracle (DESIGN.md section 7, docs/evaluation.md).
 *
 * The model, step by step (every `step`, default the group's interval):
 *   1. each configured signal gets one sample derived from the trace over
 *      the step that just ended: utilization signals demand / (ready x
 *      capacity) x 100, average signals the demand itself (a group total);
 *   2. instances whose boot delay (or, taken from a warm pool, restore
 *      delay: struct sim_warm_pool) has passed become ready;
 *   3. engine_evaluate() runs exactly as in the daemon, with the agent's
 *      inputs (a pause, a pin, a partial observation, a busy driver) the
 *      run is given (sim_params.events);
 *   4. an action launches instances (ready one boot or restore delay later) or removes
 *      the newest ones (provisioning ones first), and is recorded with
 *      engine_record_action();
 *   5. the step is scored: demand over the coming step against the ready
 *      instances. Billing runs from launch to removal. */
#ifndef AUTOSCALED_SIMULATE_H
#define AUTOSCALED_SIMULATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "engine/engine.h"
#include "simulation/trace.h"

/* What the agent knows about itself, from a given time on (an offset from
 * the trace's start): the engine inputs of DESIGN.md section 2 that the
 * daemon gets from an operator and its driver, so that a run can replay
 * the daemon's pauses, pins, partial observations and busy driver. */
enum sim_agent_kind {
	SIM_PAUSE,
	SIM_RESUME,
	SIM_PIN,       /* count, forced */
	SIM_UNPIN,
	SIM_PARTIAL,
	SIM_FULL,
	SIM_IN_FLIGHT, /* dir; DIR_NONE: the driver is idle again */
};

/* Bounds what an agent-inputs file makes simulate allocate. */
#define SIM_MAX_AGENT_EVENTS (1024 * 1024)
/* A pin beyond this is no count (the engine's own limit on counts is higher). */
#define SIM_MAX_PIN 1000000

struct sim_agent_event {
	int64_t at_ms;
	enum sim_agent_kind kind;
	int count;
	bool forced;
	enum scale_direction dir;
};

/* Reads agent inputs from `path`: one "SECONDS WORD [ARGS]" per line, the
 * seconds counted from the trace's start and not decreasing; WORD is pause,
 * resume, pin N [forced], unpin, partial, full or in-flight out|in|none.
 * '#' starts a comment. Returns 0 with a malloc'd array, or a negative
 * errno after logging the file and line. */
int sim_agent_events_load(const char *path, struct sim_agent_event **ret, size_t *n);

/* What a warm pool member is kept as (issue 17, the libvirt driver's
 * warm_pool.state): `paused` booted and suspended, holding its memory;
 * `saved` booted and managed-saved, holding disk only; `stopped` defined
 * with its disk prepared, holding disk only and cold-booting on use. */
enum sim_warm_state {
	SIM_WARM_PAUSED,
	SIM_WARM_SAVED,
	SIM_WARM_STOPPED,
};

/* A warm pool of stand-by instances beside the group. Members are never
 * capacity: they serve nothing and the engine does not see them. A
 * scale-out of k takes min(k, available members), each ready one restore
 * delay later, and launches the rest cold (one boot delay). Each member
 * taken is replaced at once in the background: a `paused` or `saved`
 * replacement boots before it is suspended or saved, so it is available
 * one boot delay after it was started; a `stopped` one only needs its disk
 * and is available at the next step. The pool is full when the trace
 * starts. */
struct sim_warm_pool {
	int size;                  /* members; 0: no pool */
	enum sim_warm_state state;
	int64_t restore_ms;        /* taken member to ready, at most the boot delay
				    * (sim_warm_default_restore_ms()) */
};

/* Bounds the warm pool a run can be given. */
#define SIM_MAX_WARM 10000

/* "paused", "saved" or "stopped": 0 or -EINVAL. */
int sim_warm_state_parse(const char *s, enum sim_warm_state *ret);
const char *sim_warm_state_name(enum sim_warm_state s);

/* The restore delay a member in STATE takes when none is given: resuming a
 * paused guest is a vCPU restart (1 s, readiness included); restoring a
 * managed save reads the guest's RAM image back from disk (5 s: libvirt
 * with QEMU's mapped-ram restores a 32 GiB idle guest in 1.2 s, 4.4 s
 * without it, plus the readiness check); a stopped member cold-boots from
 * its prepared disk (BOOT_MS). */
int64_t sim_warm_default_restore_ms(enum sim_warm_state state, int64_t boot_ms);

/* The horizon the forecasters predict for, which is also the engine's
 * cost of a relaunch (observation.boot_ms). */
enum sim_horizon {
	/* As the daemon: the launch-to-ready time its own scale-outs measure
	 * (forecast_boot_horizon()), the group's boot_time until one has. A
	 * scale-out the warm pool serves measures the restore delay, one that
	 * also launches cold the boot delay, which counts at once. */
	SIM_HORIZON_MEASURED,
	/* The group's configured boot_time, always. */
	SIM_HORIZON_BOOT_TIME,
	/* The restore delay while the warm pool has a member available, else
	 * as measured. */
	SIM_HORIZON_WARM_RESTORE,
};

/* "measured", "boot-time" or "warm-restore": 0 or -EINVAL. */
int sim_horizon_parse(const char *s, enum sim_horizon *ret);
const char *sim_horizon_name(enum sim_horizon h);

struct sim_params {
	int64_t boot_ms;                /* launch to ready; default 60 s */
	double capacity;                /* demand units one instance serves; default 1 */
	int64_t step_ms;                /* evaluation step; <= 0: the group's interval */
	int64_t billing_granularity_ms; /* default 1 s (per-second billing) */
	int64_t billing_minimum_ms;     /* default 60 s */
	const struct sim_agent_event *events; /* agent inputs, in time order; may be NULL */
	size_t n_events;
	/* The trace's first warmup_ms only feed the policy (samples, windows,
	 * state, actions); scoring, billing and the oracle start at the first
	 * step at or after it. 0: everything is scored. */
	int64_t warmup_ms;
	/* Instances running when the trace starts; < 0: sized from the demand
	 * of the trace's first boot delay (at least one step), the one look
	 * ahead simulate takes, and reported as sim_metrics.initial. */
	int initial;
	struct sim_warm_pool warm;      /* size 0: no warm pool */
	double instance_memory_mib;     /* one instance's memory, for memory-hours; 0: not counted */
	enum sim_horizon horizon;       /* default: as the daemon measures it */
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
	enum hold_reason hold; /* the engine's reason, as in the decision record */
	bool scored;     /* false during the warm-up */
	int forecast;    /* instances the forecasts asked for (the most of any signal); -1: no forecast */
	int min, max;    /* the active profile's bounds */
	int oracle;      /* what the oracle must serve: required, at least min; -1 in the warm-up */
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
	size_t steps;             /* scored steps */
	int initial;              /* instances at the trace's start */
	int64_t start_ms;         /* the trace's start */
	int64_t scored_from_ms;   /* the first scored step */
	size_t warmup_steps;
	/* The warm pool (all 0 without one), over the scored time. */
	double warm_vm_hours;         /* members in the pool, available or being refilled */
	double warm_memory_gib_hours; /* of those, the memory held (paused members, refills booting) */
	double memory_gib_hours;      /* billed instances' memory plus warm_memory_gib_hours */
	int warm_taken;               /* instances a scale-out took from the pool */
	int cold_launches;            /* instances a scale-out launched cold */
	int64_t oracle_warm_taken;    /* instances the oracle took from its pool */
};

/* Called with each step once it is scored (or, in the warm-up, run);
 * a negative return stops the run with that error. */
typedef int (*sim_step_fn)(void *userdata, const struct sim_step *st);

/* Runs the group over the trace, which it reads as far as the end of the
 * step being scored and no further (the initial pool aside, see
 * sim_params.initial): a decision never depends on later demand. Memory is
 * that of the windows, the pool and the oracle's layers, none of which
 * grows with the trace's length. Returns
 * 0 and fills *m, -EINVAL for bad parameters, -ENODATA when no step is
 * left to score, -E2BIG beyond SIM_MAX_STEPS, the reader's or the
 * engine's error, or on_step's. */
int simulate_run(const struct group_conf *g, struct trace_reader *t, const struct sim_params *p, struct sim_metrics *m,
		 sim_step_fn on_step, void *userdata);

/* The largest mean demand of one step over the whole trace, on the grid
 * simulate_run() uses (steps of STEP_MS from the trace's start), NaN when
 * the trace has no data: setup that reads the whole trace, for sizing the
 * capacity per instance from the peak (--peak-instances). 0 or the
 * reader's error. */
int simulate_peak_demand(struct trace_reader *t, int64_t step_ms, double *ret);

/* Bounds the steps of one run (a trace's span controls it). */
#define SIM_MAX_STEPS (64u * 1024 * 1024)

/* `autoscaled simulate ...`: argv[0] is "simulate". Returns the exit status. */
int simulate_main(int argc, char **argv);

/* What a plot shows besides the steps. */
struct svg_plot {
	const char *title;
	double capacity;      /* demand units one instance serves (> 0) */
	const char *unit;     /* the demand's unit for its axis; NULL: "demand units" */
	int64_t step_ms;      /* the run's step (> 0) */
	int64_t boot_ms;      /* the run's boot delay, for the oracle's launches */
	void *tz;             /* the zone of the time axis (schedule_tz_open); NULL: UTC */
	const char *tz_name;  /* its name, for the axis; NULL: "UTC" */
	int64_t from_ms, to_ms; /* the time range shown; INT64_MIN / INT64_MAX: the run's */
	const struct sim_metrics *metrics; /* the run's figures for the metrics box; may be NULL */
	int ymax;             /* instances at the top of the plot; 0: fitted to the data */
};

/* Writes the plot of a run as SVG to PATH: time in the plot's zone on the x
 * axis; instances on the left axis (ready, billed, the oracle's, the
 * profile's bounds, the forecast band) and demand in its own units on the
 * right one, scaled so that demand meets the ready line where it fills the
 * ready instances; under-provisioned steps shaded; scale actions counted
 * per few pixel columns; the run's metrics in a box. A long range is
 * reduced to one column per pixel (minima and maxima, so dips and peaks
 * survive). 0, -EINVAL for bad parameters, -ENODATA when no step lies in
 * the range, or -errno. */
int svg_write_plot(const char *path, const struct svg_plot *p, const struct sim_step *steps, size_t n);

#endif
