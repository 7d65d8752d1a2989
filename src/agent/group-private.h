/* The group runtime's insides, shared by its parts and by nothing else:
 * group.c (signals, evaluation, scale actions, lifecycle, accessors),
 * group-admin.c (the admin API's view) and job.c (driver calls on worker
 * threads, below group.c: it calls back, and includes nothing of it). See
 * group.h for the public side. */
#ifndef AUTOSCALED_GROUP_PRIVATE_H
#define AUTOSCALED_GROUP_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <systemd/sd-event.h>

#include "admin/admin.h"
#include "base/clock.h"
#include "agent/driver.h"
#include "engine/engine.h"
#include "engine/forecast.h"
#include "agent/group.h"
#include "sources/loop.h"
#include "agent/workers.h"
#include "state/state.h"
#include "engine/window.h"

/* A driver's pool of worker threads and its observations let in (job.c). */
struct driver_pool;

enum job_kind {
	JOB_OBSERVE,
	JOB_SCALE_OUT,
	JOB_SCALE_IN,
	JOB_OPEN,                /* opens the group's driver with its options */
};

/* A job kind's names, from its one table (job.c): the operation of the
 * records and metrics ("observe", "scale_out", "scale_in", "open") and the
 * noun of messages ("observation", "scale-out", "scale-in", "driver open").
 * The scale kinds' names are their directions'. */
const char *job_kind_operation(enum job_kind k);
const char *job_kind_noun(enum job_kind k);

/* One member's value of one of the driver's sources, as observe() reported
 * it. */
struct driver_sample {
	char *id;
	int source;              /* index in the descriptor's sources */
	double value;
};

struct job {
	struct workers_task task; /* in its driver's pool (job.c) */
	struct workers *pool;     /* that pool, once queued */
	enum job_kind kind;
	struct group_rt *g;      /* NULL once the group is gone: drop the result */
	const struct autoscaled_driver *drv;
	struct autoscaled_driver_instance *handle; /* JOB_OPEN: the handle opened, or NULL */
	/* The handle is not (or no longer) the group's: its group is gone, or
	 * a reload replaced the driver options it was opened with. It is
	 * closed once the call has ended (for a group that lives on, once the
	 * group's new handle is open), and the host freed after it. */
	bool close_when_done;
	struct autoscaled_host *host; /* with close_when_done, and for JOB_OPEN */
	struct driver_options opts;   /* JOB_OPEN: owned copies, as the group may go first */
	/* The group's name while the job runs for no group (job_orphan()). */
	char *orphan_of;
	struct job *next_orphan;
	bool want_samples;       /* observe: a signal reads one of the driver's sources */
	int count;               /* scale: the target (out) or how many to remove (in) */
	char **ids;              /* scale-in: the drained victims, or NULL for the driver's choice */
	size_t n_ids;
	int from;                /* scale: the count when the action was decided */
	int64_t started_ms;      /* monotonic, when it was queued (an action's start) */
	int64_t called_ms;       /* monotonic, when its worker called the driver */
	bool measure_cpu;        /* cpu_ns is measured (metrics are served) */
	int64_t cpu_ns;          /* the CPU time its worker's thread spent in the call */
	struct job *done_next;   /* on the list of finished jobs (job.c) */
	/* observe: the driver's pool that counts it among those let in
	 * (job_admit()), until it is back on the loop or cancelled. */
	struct driver_pool *admitted_by;
	/* Results, written by the worker thread. */
	int r;
	struct autoscaled_observation obs;
	int host_room;           /* observe: AUTOSCALED_METRIC_HOST_ROOM as published, -1 none */
	/* observe: the members, and while the driver reports them their
	 * names one after another (job.c); then one block of both. */
	struct instance_obs *instances;
	size_t n_instances, cap_instances;
	char *names;
	size_t names_len, names_cap;
	uintptr_t last_location; /* the newest location's offset + 1, 0: none */
	struct driver_sample *samples;
	size_t n_samples, cap_samples;
	int n_done;              /* scale: instances created or removed */
	/* The newest warning or error the driver logged in the call (at most
	 * JOB_MSG_MAX - 1 bytes), or NULL. Allocated when there is one: the
	 * jobs of 10,000 groups are in flight at once, and most say nothing. */
	char *driver_msg;
	/* Cluster mode: the runtime that fences the changing calls (NULL
	 * without a cluster) and the group's name, copied for the worker
	 * thread, which must not read the group (job_fence() in job.c);
	 * NULL without a cluster. */
	struct cluster *cluster;
	char *fence_group;
};

#define JOB_MSG_MAX 512

/* The newest failed driver operation, until one of the same kind succeeds. */
struct group_error {
	int64_t time_ms;         /* wall clock, shown; 0: none */
	enum job_kind kind;      /* the operation that failed */
	int err;                 /* the negative errno the driver returned */
	char *message;           /* the driver's own words (at most GROUP_ERROR_MAX), NULL if none */
};

#define GROUP_ERROR_MAX 511
#define SIGNAL_ERROR_MAX 255

struct signal_rt {
	const struct signal_conf *sc;
	struct group_rt *g;
	struct window win;
	struct source *src;       /* NULL when the driver feeds the signal */
	struct timer timer;       /* the polls' (sources/loop.h) */
	uint64_t next_poll_usec;  /* CLOCK_MONOTONIC; 0: poll when the group starts */
	/* The newest poll's error (at most SIGNAL_ERROR_MAX), NULL when it
	 * succeeded: allocated only while a poll fails, and kept while it
	 * fails the same way (signal_set_error). */
	char *error;
	/* The signal's forecaster when its forecast mode is not off, and the
	 * time (monotonic) of the newest sample it has learnt. */
	struct forecast *fc;
	int64_t fc_fed_ms;
	int driver_source;        /* index in the driver's sources, or -1 */
	int n_sampled;
	bool polling;
	bool reported;            /* a poll has completed, with a sample or an error */
	/* A utilization signal's: the ready instances its window's samples
	 * are a mean over (window_reexpress()), 0 while not known. */
	int win_over;
};

struct group_rt {
	const struct group_ctx *ctx;
	const struct group_conf *gc;
	const struct autoscaled_driver *drv;
	struct autoscaled_driver_instance *handle;
	/* Allocated with the handle and moved with it (group_rt_adopt): the
	 * driver keeps the pointer until it closes the handle, which may be
	 * after this runtime and its configuration are gone. */
	struct autoscaled_host *host;
	struct signal_rt *signals;
	size_t n_signals;
	struct timer timer;       /* the evaluations' (sources/loop.h) */
	/* persisted: engine state, in-flight action, pin, pause, dry run;
	 * packed, and read through group_st() (group.c) */
	struct state_packed *st_packed;
	/* A digest of the state the state file holds (group_state_digest): a
	 * state whose digest differs needs a save. A copy would do the same
	 * with 3.4 KB a group. */
	uint64_t saved_digest;
	/* The same without the newest recommendations' times
	 * (group_state_shape()), and when the file was last written
	 * (monotonic; 0 never): see refresh_ms() in group.c. */
	uint64_t saved_shape;
	int64_t saved_mono_ms;
	struct admin_ring ring;   /* recent decision records for the admin API */
	const char *override;     /* "paused", "pinned" or NULL, of the last decision */
	struct drain *drain;      /* pre-scale-in hooks running */
	/* The last decision, packed (decision_pack(): the signals and rules
	 * it has, not room for the most a group may have; 1.4 KB a group less
	 * for three signals), last_size bytes, or NULL before the first (or
	 * when there was no memory for it). */
	void *last;
	size_t last_size;
	/* The newest decision's record is not made yet: it is `last` (with
	 * record_dry_run), made when something reads it, when a newer
	 * decision replaces it and the ring would keep it, or before what a
	 * record shows besides the decision changes (record_flush() in
	 * group.c). Making every evaluation's record as JSON was most of the
	 * daemon's work at 10,000 groups, where the history budget keeps one
	 * record a group; a record the log wants (INFO, or DEBUG with
	 * --verbose) is made at once, as is one that points at a signal's
	 * error text (which goes when the error changes). record_bytes:
	 * what the last one pushed takes in the ring (deflated), what the
	 * ring is asked about before making the next (the flags below). */
	size_t record_bytes;
	/* What the last logged decision said besides its action and hold
	 * reason: an override ("paused", "pinned" or NULL) and whether a
	 * failed operation was in it (last_had_error). A change of either is
	 * at INFO. */
	const char *last_override;
	/* The group's one driver call in flight, if any. After a reload it
	 * may be a call of the replaced runtime, on its handle (see
	 * job.close_when_done): no call of this runtime starts before it ends. */
	struct job *job;
	/* The handle a reload replaced, once its last call has ended: closed
	 * when this runtime's own handle is open, so that the group's backend
	 * always has a connection (libvirt's test:///default forgets its
	 * domains when its last connection closes). */
	const struct autoscaled_driver *retired_drv;
	struct autoscaled_driver_instance *retired;
	struct autoscaled_host *retired_host;
	struct group_error last_error;
	/* The newest observation: the members and their names in one block
	 * (job_pack_instances() in job.c), freed whole. */
	struct instance_obs *instances;
	size_t n_instances;
	int current;
	/* How many more instances the group's hosts can take, as the newest
	 * observation measured it; -1 when the driver does not bound them. */
	int host_room;
	int64_t observed_start_ms; /* monotonic: when the newest observation's call was started */
	int64_t started_ms;       /* when group_rt_start() last ran, monotonic */
	/* Cluster mode: the holding (cluster_owned_since()) whose record from
	 * etcd this runtime has taken and merged; it acts only then. */
	int64_t adopted_since;
	int64_t first_eval_ms;    /* monotonic: this process's first evaluation of the group */
	/* Waiting for its driver to let one more observation in (job.c,
	 * job_admit()): on that driver's list while admit_pprev is set. */
	struct group_rt *admit_next, **admit_pprev;
	struct driver_pool *admit_pool;
	enum state_origin origin;
	/* The flags, together: a bool between two wider fields took eight
	 * bytes (408 bytes a runtime with them there, 10,000 runtimes). */
	bool want_samples;        /* a signal reads one of the driver's sources */
	bool save_failed;
	bool save_retry;          /* the writer failed to write the newest save: write it again */
	bool have_last;           /* a first decision was made */
	bool record_pending;      /* see `last` */
	bool record_dry_run;
	bool last_had_error;      /* see last_override */
	bool take_over;           /* group_rt_adopt() takes the old runtime's handle */
	bool stable;              /* of the newest observation, with `current` */
	bool partial;
	bool observed;            /* at least one observation succeeded */
	bool first_reported;      /* the agent was told of the first observation */
	bool stopped;
};

/* job.c. What carries finished jobs back to the loop is made once per
 * process, on the first call; `done` is called on the loop's thread
 * for each finished job of a group that still exists (the caller frees the
 * job afterwards). Returns 0 or a negative errno. */
typedef void (*job_done_fn)(struct job *j);
/* `admitted` is called on the loop's thread for a group whose turn to
 * observe has come (job_admit()). */
typedef void (*job_admitted_fn)(struct group_rt *g);
/* `ended` is called on the loop's thread once the jobs that ended together
 * have been passed to `done`, before any group is let in to observe. */
typedef void (*job_ended_fn)(void);
int job_done_init(sd_event *event, job_done_fn done, job_admitted_fn admitted, job_ended_fn ended);
/* Whether g may start an observation now. A driver lets in at most
 * JOB_ADMIT_PER_THREAD times its limit of calls at once (at least
 * JOB_ADMIT_MIN) of observations that are queued, running, or finished
 * and not yet taken by the loop; a group past that waits on the driver's
 * list, without a job, first come first served, and `admitted` starts it
 * when one of the driver's observations is back. False for a group that
 * waits (already, or from now). */
bool job_admit(struct group_rt *g);
/* Takes g off its driver's waiting list, where it may or may not be. */
void job_unadmit(struct group_rt *g);
/* Observations of `driver` let in, and groups waiting for a turn. */
void job_admit_stats(const char *driver, unsigned *admitted, size_t *waiting);
/* Queues `j` on the pool of g's driver and makes it g's job; a failure is
 * logged and leaves `j` to the caller. Calls of one driver start in the
 * order they were queued, at most the driver's limit at once. */
int job_start(struct group_rt *g, struct job *j);
/* How many calls of `driver` run at once: agent.driver_concurrency's value
 * for it in `a` (may be NULL), else job_default_limit(). */
int job_driver_limit(const struct agent_conf *a, const char *driver);
int job_default_limit(const char *driver);

/* A worker without work for this long ends. A thread keeps a cache of the
 * blocks it freed (glibc's tcache: up to seven of each small size), which
 * goes back to the heap only when the thread ends, and a cloud driver's
 * call (curl, cJSON) fills it. Kept for a minute, the idle threads of one
 * cycle served the next, and at 10,000 groups the cloud drivers' 200-odd
 * threads held some 8 MB in those caches: bench/soak ended at 87 MB with
 * the caches turned off (GLIBC_TUNABLES) against 95, and at 84 MB with
 * threads ending after two seconds against 92 (runs side by side). The
 * price is a thread started for each call an interval apart: with 200
 * cloud groups alone, 745 threads a minute and 100 ms more of the daemon's
 * CPU a minute (about 130 us a thread with its stack's page faults and its
 * cache filled again; perf stat, both builds), some 0.2 % of a core in
 * the soak. Threads of quick calls that run them back to back are never
 * idle that long. */
#define JOB_WORKER_IDLE_MS (2 * 1000)
/* Takes a job whose group is going away off its pool's queue when it has
 * not started, and frees it (closing the handle it owns, as for an
 * orphan's call that has ended); returns false when it runs already. */
bool job_cancel(struct job *j);
/* Frees a job and its results (NULL is fine). */
void job_free(struct job *j);
/* A job whose group is gone (a reload removed it) runs on; it is kept
 * under the group's name until it ends, so that a group of that name that
 * a later reload adds makes no call of its own before then. */
void job_orphan(struct job *j, const char *group);
/* Whether an orphaned job of `group` is still running. */
bool job_orphan_running(const char *group);
/* Takes the orphaned job of `group` off the list and returns it (NULL when
 * there is none); its caller makes it its group's job. */
struct job *job_claim_orphan(const char *group);

/* group.c. A finished job of a group that still exists: job.c's `done`. */
void group_job_done(struct job *j);
/* Writes the state file when the state changed, and waits for it to be
 * written; see group.c. */
void group_save(struct group_rt *g);

/* group.c, scale actions, all on the loop's thread. T is monotonic time
 * (clock.h) but in group_note_result, where it is shown. */
enum scale_direction group_reconcile_in_flight(struct group_rt *g, int64_t t);

/* Fills the engine's inputs from the runtime (see group.c); `in` has room
 * for CONFIG_MAX_SIGNALS. */
void group_engine_inputs(const struct group_rt *g, enum scale_direction in_flight, struct observation *obs,
			 struct engine_signal_input *in);
/* Takes `ids` (malloc'ed, may be NULL); the in-flight action is dropped
 * when the job cannot start. */
void group_start_scale_job(struct group_rt *g, enum job_kind kind, int count, int from, char **ids, size_t n_ids);
bool group_start_drain(struct group_rt *g, int count, const char *record);
/* Records a finished job's outcome in g->last_error: a failure replaces
 * it, a success of the same operation clears it. */
void group_note_result(struct group_rt *g, const struct job *j, int64_t t);
/* Ends a scale job: records the action in the engine state and logs it. */
void group_scale_done(struct group_rt *g, struct job *j, int64_t t);

#endif
