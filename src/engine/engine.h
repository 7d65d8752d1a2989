/* The decision engine: DESIGN.md section 3, as one pure function.
 *
 * engine_evaluate() takes a group's configuration, the time, the driver's
 * observation, each signal's window and the group's prior state, and returns
 * the decision record and the new state. It does no I/O, reads no clock and
 * keeps no globals; the daemon, `autoscaled explain` and `autoscaled simulate`
 * all call it the same way.
 *
 * Ownership: everything passed in is borrowed for the call. The decision
 * holds pointers into the group_conf (names) and static strings, so it is
 * valid while the configuration is. Engine state is a plain value (no
 * pointers), so it can be copied, persisted and restored byte for byte.
 */
#ifndef AUTOSCALED_ENGINE_H
#define AUTOSCALED_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"
#include "config/config.h"
#include "engine/window.h"

enum instance_state {
	INSTANCE_PROVISIONING, /* being created or booting: not serving */
	INSTANCE_RUNNING,
	INSTANCE_STOPPING,     /* being removed: not counted */
};

struct instance_obs {
	const char *id;
	/* Where it lives, as the driver says (libvirt: its host's URI; the
	 * clouds: the zone), or NULL; shown to operators, never decided on. */
	const char *location;
	int64_t created_ms;       /* wall clock; 0 if unknown */
	int64_t running_since_ms; /* wall clock, as the driver reports it; 0 if unknown or not running */
	/* The same instant on the monotonic clock, which the initialization
	 * period is measured on; the caller maps it (group.c keeps each
	 * instance's mapping from when it was first seen running). */
	int64_t running_since_mono_ms;
	/* created_ms on the monotonic clock, mapped the same way; 0 if not
	 * mapped. The initialization period runs from it when it is known. */
	int64_t created_mono_ms;
	/* The two small fields last, side by side: 56 bytes a member where
	 * their padding made 64 (every group keeps its members). */
	enum instance_state state;
	bool ready;               /* the driver's own readiness (e.g. a port check) */
};

/* What the driver and the actuator know about the group right now. */
struct observation {
	int current;             /* the group's target size */
	const struct instance_obs *instances; /* may be NULL: then `current` instances, all ready */
	size_t n_instances;
	bool stable;             /* driver: nothing changing or scheduled */
	enum scale_direction in_flight; /* actuator: an action in this direction is pending */
	/* What the agent knows about itself (DESIGN.md section 2): each of
	 * these holds with its own reason, so nothing changes the engine's
	 * answer afterwards. */
	bool partial;            /* driver: some members could not be observed: no scale-in */
	/* driver: the group's hosts can take host_room more instances (the
	 * libvirt driver with memory_overcommit or cpu_overcommit); without
	 * host_bounded nothing is known of them and nothing is capped. */
	bool host_bounded;
	int host_room;
	bool busy;               /* actuator: a driver call (or a drain) is running: no new action */
	bool paused;             /* operator: evaluate, never act */
	bool not_owner;          /* cluster mode: this agent may not act on the group: evaluate, never act */
	bool pinned;             /* operator: pin_count decides the final count */
	int pin_count;
	bool pin_forced;         /* the pin may leave the profile's [min, max] */
	/* Launch to ready as measured (forecast_boot_horizon()); 0: the
	 * configured boot_time. The lazy scale-in's cost of a relaunch. */
	int64_t boot_ms;
};

/* One signal's input: its window and, if the newest poll failed, why. */
struct engine_signal_input {
	const struct window *window;  /* NULL: no samples at all */
	const char *error;            /* last source error, used as the invalid reason */
	int n_sampled;                /* utilization: ready instances that reported; -1 = all of them */
	/* Utilization: the ready instances every sample of the window is a
	 * mean over (window_reexpress()); 0: those the engine counts. */
	int window_over;
	/* The signal's forecast (forecast.h) as a group total: for a
	 * utilization signal the sum over the instances (value x instances),
	 * for an average one the value. Read only when the signal's forecast
	 * mode is not off. */
	bool forecast_valid;
	double forecast_total;      /* upper quantile one boot time ahead */
	double forecast_keep_total; /* upper quantile of the peak until a relaunch would pay off */
	double forecast_offset;     /* what the service level moved the quantiles by (forecast.h) */
	double forecast_short;      /* the share of samples short it measured, over about a day */
};

/* The most entries each of a group's histories keeps in memory: one
 * more folds the two closest (engine.c), conservatively. 32 entries is
 * more than a monotonic deque of one recommendation an interval holds
 * in any usual window (a 5-minute window at 15 s is 20 evaluations) and
 * keeps the state at 1.2 KB a group. */
#define ENGINE_MAX_HISTORY 32
/* The most a state file may hold per history: what releases that kept
 * 64 in memory wrote. A longer history read back than ENGINE_MAX_HISTORY
 * is folded as the engine folds its own (engine_state_restore_rec()). */
#define ENGINE_STORED_HISTORY 64

/* Twelve bytes each, not sixteen: aligned to four, without the padding
 * that an eight-byte time would bring (three histories of 32 entries,
 * 384 bytes a group). */
struct engine_rec {
	int64_t t_ms;
	int count;
} __attribute__((packed, aligned(4)));

struct engine_event {
	int64_t t_ms;
	int delta; /* > 0 added, < 0 removed */
} __attribute__((packed, aligned(4)));

/* The group's engine state. Plain data, no pointers: copied, persisted and
 * restored as is (state.c versions it, and maps its times to the wall clock
 * and back). Bounded: histories are compressed (see engine.c) and never hold
 * more than ENGINE_MAX_HISTORY entries. Every time in it is monotonic
 * (clock.h), as are the sample times in the signals' windows. */
struct engine_state {
	uint32_t version;
	/* Recommendations for stabilization: up_recs is the min-deque for
	 * the scale-out window, down_recs the max-deque for the scale-in
	 * window (see engine.c). */
	struct engine_rec up_recs[ENGINE_MAX_HISTORY];
	size_t n_up_recs;
	struct engine_rec down_recs[ENGINE_MAX_HISTORY];
	size_t n_down_recs;
	/* Scale events for rate-limit periods. */
	struct engine_event events[ENGINE_MAX_HISTORY];
	size_t n_events;
	int64_t last_action_ms;        /* any direction; rule cooldowns count from here */
	enum scale_direction last_action_dir;
	/* No scale-in before this time (set after a restart on lost state). */
	int64_t no_scale_in_before_ms;
};

enum hold_reason {
	HOLD_NONE = 0,
	HOLD_SIGNALS_SAY_HOLD,
	HOLD_INVALID_SIGNAL,     /* a signal is invalid: scale-in blocked */
	HOLD_RULE_NOT_FIRED,     /* a scale-in rule did not fire */
	HOLD_ON_MISSING,         /* no valid input: on_missing applied */
	HOLD_STABILIZATION,
	HOLD_RATE_LIMIT,
	HOLD_FLAPPING,
	HOLD_IN_FLIGHT,
	HOLD_SAFE_START,         /* state was lost: no scale-in until a full window of fresh data */
	HOLD_PARTIAL,            /* the observation missed members: no scale-in */
	HOLD_DRIVER_BUSY,        /* a driver call runs: no action in the other direction either */
	HOLD_PAUSED,             /* an operator paused the group */
	HOLD_PINNED,             /* an operator pinned the count */
	HOLD_NOT_OWNER,          /* cluster mode: another agent manages the group (or none may now) */
	HOLD_HOST_CAPACITY,      /* the group's hosts cannot take the whole scale-out */
};
#define HOLD_REASON_COUNT (HOLD_HOST_CAPACITY + 1)

/* Who picks the instances a scale-in removes. */
enum victim_choice {
	VICTIMS_NONE = 0,        /* no scale-in */
	VICTIMS_DRIVER,          /* the driver, by its victim_policy */
	VICTIMS_DRAIN,           /* the agent (engine_order_victims): the pre-scale-in
				  * hook drains them before the driver removes exactly those */
};

struct signal_decision {
	/* Doubles, then the pointer, the ints and the flags: 80 bytes where
	 * the fields in the order they are read made 96 with their padding
	 * (every group keeps its last decision, packed). */
	double value;            /* the aggregate, when valid */
	double target;           /* the target in force (profile overrides applied) */
	double forecast_value;       /* the group total one boot time ahead */
	double forecast_offset;      /* the service level's offset of its quantiles, in normalised errors */
	double forecast_short;       /* the share of samples short the forecaster measured (about a day) */
	const char *reason;      /* why invalid (static or the source's error) */
	int recommendation;      /* when valid */
	/* HPA's substitutions in a utilization signal: ready instances
	 * without a sample counted at the target (scale-in), and instances
	 * still initializing counted as 0 (scale-out). */
	int counted_at_target;
	int counted_as_zero;
	int forecast_recommendation; /* instances for it at the target */
	int keep_recommendation;     /* instances the forecast needs before a relaunch would pay off */
	bool valid;
	bool tolerance_hold;     /* inside the tolerance band: r = current */
	bool rules_only;         /* no target (<= 0): read by rules only, no recommendation */
	/* The forecast, when the signal has one (mode observe or on):
	 * forecast_value, forecast_recommendation, keep_recommendation and
	 * the service level's offset and share short above. */
	bool forecast;
	bool forecast_raised;        /* mode on: the forecast, not the reactive value, set the recommendation */
};

struct rule_decision {
	bool evaluated;          /* its signal had data over the rule's window */
	bool fired;
	bool in_cooldown;
	double value;            /* the statistic over the rule's window */
	int proposal;            /* when fired */
};

struct decision {
	int64_t time_ms;         /* wall clock: shown and logged */
	const char *group;
	const char *profile;
	int profile_index;
	int current;
	int ready;
	int min, max, def;       /* the active profile's bounds */
	struct signal_decision signals[CONFIG_MAX_SIGNALS];
	size_t n_signals;
	struct rule_decision rules[CONFIG_MAX_RULES];
	size_t n_rules;
	int combined;            /* after step 4 */
	int clamped;             /* step 5 */
	int stabilized;          /* step 6 */
	int rate_limited;        /* step 7 */
	int flap_guarded;        /* step 8 */
	int operated;            /* step 9: after an operator's pause or pin */
	int desired;             /* final, after steps 9 and 10 */
	const char *override;    /* "paused", "pinned" or NULL */
	bool pinned;             /* an operator's pin is set (a pause may win over it) */
	int pin_count;           /* the operator's pin, as asked */
	bool pin_forced;
	/* The agent's inputs as given (struct observation), so that a record
	 * can be replayed: explain --partial, --in-flight. */
	bool stable, busy, partial;
	enum scale_direction in_flight;
	bool host_bounded;
	int host_room;
	/* The count the steps above asked for when the hosts could not take
	 * it (desired is then current + host_room); 0 otherwise. */
	int host_capped_from;
	enum victim_choice victims;
	enum scale_direction action; /* DIR_NONE: hold */
	enum hold_reason hold;   /* why the final count differs from the combined one, or why no change */
	bool on_missing_applied;
	int driver_signal;       /* index of the signal that drove the result, -1 for none/rule */
	int driver_rule;         /* index of the rule that drove the result, -1 for none */
	int64_t boot_ms;         /* the boot time in force: measured, or the configured one */
	int64_t keep_ms;         /* lazy scale-in: how long an idle instance is worth keeping; 0 = not lazy */
};

/* The hold reason's name in records and metrics ("stabilization"), or
 * "unknown". */
const char *decision_hold_name(enum hold_reason h);

/* The victim choice's name in records ("driver_policy", "drain_order"),
 * or NULL for VICTIMS_NONE. */
const char *decision_victims_name(enum victim_choice v);

/* Initialises a clean state (no history). */
void engine_state_init(struct engine_state *s);

/* Whether a running, ready instance is past the group's initialization
 * period at MONO_MS: counted from its creation (as Kubernetes counts
 * --horizontal-pod-autoscaler-cpu-initialization-period from the pod's
 * start), else from its readiness; an instance with
 * neither time is past it. */
bool engine_instance_initialized(const struct instance_obs *o, int64_t mono_ms, int64_t init_ms);

/* Evaluates one group at `now`: its wall-clock time picks the profile and
 * ages the instances, its monotonic time is what the windows, the state's
 * histories, cooldowns and rate limits are measured against. `signals` has
 * g->n_signals entries in the order of g->signals. Writes the decision to
 * *out and the new state to *next (which may alias prior). Returns 0, or
 * -EINVAL for inputs that break the contract (a NULL argument, a negative
 * count). */
int engine_evaluate(const struct group_conf *g, struct clock_now now, const struct observation *obs,
		    const struct engine_signal_input *signals, const struct engine_state *prior,
		    struct engine_state *next, struct decision *out);

/* Lazy scale-in: how long an idle instance is kept for a need that comes
 * back. At least what relaunching it costs: its boot (billed but not
 * serving), the billing minimum and one billing unit. And at least
 * ENGINE_LAZY_KEEP_BOOTS boot times: a relaunch is paid for in service as
 * well, since it must be started one boot ahead on a forecast that may be
 * short, and a dip shorter than the forecasters' level time constant (four
 * horizons, LEVEL_TAU in forecast.c) is noise to them, not a change in load.
 * Giving capacity back into such a dip is the scale-in-then-scale-out churn
 * (docs/evaluation.md measures both choices). BOOT_MS 0 means the
 * configured boot_time. */
#define ENGINE_LAZY_KEEP_BOOTS 4
int64_t engine_keep_ms(const struct group_conf *g, int64_t boot_ms);

/* Whether a sample V of signal S, taken at WALL_MS over READY instances,
 * is at or above the target in force then (the override of the profile
 * active then, if one has one): a utilization signal's per-instance mean,
 * another signal's group total against READY times it (a total of 0 never
 * is); *EXCESS is the group total above READY times the target (what a
 * forecaster's values are in). What a forecaster's service level counts
 * (forecast_service); false for a signal without a target. */
bool engine_sample_over_target(const struct group_conf *g, size_t s, int64_t wall_ms, double v, int ready,
			       double *excess);

/* Tells signal S's forecaster F whether the sample V it has just learnt
 * (forecast_update(), taken at WALL_MS over READY instances) was at or
 * above the target, and by how much (forecast_service()): only in mode on
 * and with a service level. The daemon and simulate both call it, so
 * that they count the same samples. */
struct forecast;
void engine_forecast_service(const struct group_conf *g, size_t s, struct forecast *f, int64_t wall_ms, double v,
			     int ready);

/* Adds to DST's stabilization windows the recommendations of SRC made
 * after AFTER_MS (monotonic), in time order: the windows then say what
 * they would had DST's evaluations gone on through SRC's. DST's newest
 * recommendation must not be later than AFTER_MS. A new owner in a
 * cluster continues its predecessor's state with what it evaluated
 * itself since (state_merge_record()). */
void engine_state_merge_recs(struct engine_state *dst, const struct engine_state *src, int64_t after_ms);

/* Restores one entry of a history read back from a state file, oldest
 * first: a recommendation of the scale-out window (SCALE_OUT) or of the
 * scale-in window, or a scale event (a change by DELTA). Each is added as
 * the engine adds its own, so that a history longer than the engine keeps
 * is folded as it folds its own. */
void engine_state_restore_rec(struct engine_state *s, bool scale_out, int64_t t_ms, int count);
void engine_state_restore_event(struct engine_state *s, int64_t t_ms, int delta);
/* The time of the newest recommendation in S's windows, 0 when none. */
int64_t engine_state_newest_rec(const struct engine_state *s);

/* Tells the engine that the group was scaled from `from` to `to` at the
 * monotonic time mono_ms (after the driver accepted it), for rate limits and
 * cooldowns. */
void engine_record_action(struct engine_state *s, int64_t mono_ms, int from, int to);

/* Orders instances the way a scale-in with a pre-scale-in hook takes its
 * victims (VICTIMS_DRAIN): instances not yet serving first, then the
 * newest, ties broken by id so that every try picks the same. Instances
 * being removed go last. */
void engine_order_victims(struct instance_obs *v, size_t n);

/* Renders one human sentence for the decision, e.g. "cpu 90% vs target 60%
 * -> 6; max of signals". Returns the length snprintf would have written. */
int decision_sentence(const struct decision *d, const struct group_conf *g, char *buf, size_t len);

/* Renders the decision record as JSON (cJSON *, owned by the caller). The
 * record's final count is under "desired". Returns NULL on ENOMEM. */
struct cJSON;
struct cJSON *decision_to_json(const struct decision *d, const struct group_conf *g);

/* A decision kept for later (a group's last one) in the room it uses:
 * struct decision has room for CONFIG_MAX_SIGNALS signals and
 * CONFIG_MAX_RULES rules, 1.8 KB, where a group of three signals and no
 * rule needs 0.4 KB, and most of that is zero: only the words that are not
 * are kept (about 0.25 KB). decision_pack() writes D in
 * decision_packed_size(D) bytes at BUF, a size that depends on what D
 * holds, not only on its counts (pointers are copied as they are: what
 * they point to must outlive the copy, as for struct decision);
 * decision_unpack() makes the whole decision again, the room after its
 * signals and rules zeroed. */
size_t decision_packed_size(const struct decision *d);
void decision_pack(const struct decision *d, void *buf);
void decision_unpack(const void *buf, struct decision *d);

struct log_field;

/* Room for the numbers of decision_journal_fields(). */
struct decision_field_buf {
	char desired[16];
	char current[16];
};

#define DECISION_JOURNAL_FIELDS 5

/* The journal fields of a decision besides DECISION= (its record): ACTION=,
 * HOLD=, PROFILE=, DESIRED=, CURRENT=, in F (DECISION_JOURNAL_FIELDS of
 * them), the numbers written in BUF. Returns the number of fields. */
size_t decision_journal_fields(const struct decision *d, struct decision_field_buf *buf, struct log_field *f);

#endif
