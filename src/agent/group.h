/* A group at run time: its driver instance, its signals' sources and
 * windows, its engine state, the last decision and the action in flight.
 *
 * The agent owns the group runtimes; each runs its own timers on the shared
 * sd-event loop. Driver calls, which may block (libvirt), run on a worker
 * thread, one at a time per group, and report back to the loop. */
#ifndef AUTOSCALED_GROUP_H
#define AUTOSCALED_GROUP_H

#include <stdbool.h>

#include <systemd/sd-event.h>

#include "config/config.h"
#include "state/state.h"

struct cJSON;
struct cluster;
struct http;
struct group_rt;
struct metrics;
struct notifier;

struct group_ctx {
	sd_event *event;
	struct http *http;
	bool dry_run;  /* the agent's: --dry-run or agent.dry_run */
	bool verbose;  /* log every evaluation, not only changes */
	void (*first_observation)(void *userdata);
	void *userdata;
	const struct agent_conf *agent_conf;
	struct metrics *metrics;    /* may be NULL */
	struct notifier *notifier;  /* may be NULL */
	/* Cluster mode: which groups this agent may act on; NULL without a
	 * cluster section (then it acts on all). */
	struct cluster *cluster;
	/* Bytes each group's decision history may hold: the agent's
	 * history_memory shared by its groups (0: no limit). */
	size_t history_bytes;
};

/* Builds a runtime for `gc` (borrowed; must outlive the runtime). When `old`
 * is a runtime of the same name, the new one is built so that
 * group_rt_adopt() can take over its driver, windows and state later; `old`
 * itself is not changed here. Opens the driver unless it can be adopted;
 * while `old` has a driver call in flight the open waits for that call to
 * end (the options are only checked here). Returns 0 or a negative errno
 * (the reason is logged). A reload keeps a group whose configuration did
 * not change (config_group_equal) instead: see group_rt_rebind(). */
int group_rt_new(const struct group_ctx *ctx, const struct group_conf *gc, const struct group_rt *old,
		 struct group_rt **ret);

/* Moves the driver instance (when the driver and its options are the same),
 * the windows of same-named signals, the engine state and any action in
 * flight from `old` into `g`. A driver call in flight moves too, with the
 * handle it runs on: `g` starts no call before it has ended, records what
 * it did, then observes (through its own handle) and decides afresh. */
void group_rt_adopt(struct group_rt *g, struct group_rt *old);

/* Points a running runtime at `gc`, a newer load of a configuration equal
 * to its own (config_group_equal); nothing else changes: its driver call,
 * sources, windows, timers and state go on as they were. */
void group_rt_rebind(struct group_rt *g, const struct group_conf *gc);

/* Starts the evaluation timer and the signal polls. */
void group_rt_start(struct group_rt *g);
/* Stops timers and cancels polls; a driver call in flight finishes in the
 * background and its result is dropped. */
void group_rt_stop(struct group_rt *g);
/* At a clean stop of the daemon, after group_rt_stop(): queues the state
 * as it is, to the state writer (state_writer_flush() writes it), with no
 * routine save left unwritten (see refresh_ms() in group.c). */
void group_rt_save_final(struct group_rt *g);
/* Frees the runtime (NULL is fine). */
void group_rt_free(struct group_rt *g);

const char *group_rt_name(const struct group_rt *g);
/* Whether actions are dry runs: --dry-run, else the admin API's override,
 * else the configuration. */
bool group_rt_dry_run(const struct group_rt *g);

/* For the admin API (group-admin.c), on the loop's thread. The persisted
 * state is changed in place and then saved with group_rt_save(); the next
 * evaluation applies it. */
struct group_state *group_rt_state(struct group_rt *g);
void group_rt_save(struct group_rt *g);
const struct group_conf *group_rt_conf(const struct group_rt *g);
const struct group_ctx *group_rt_ctx(const struct group_rt *g);
/* Whether this agent manages G's state: always without a cluster; in one,
 * while it owns G and has continued from its record (cluster.h). */
bool group_rt_state_here(const struct group_rt *g);
/* The last decision, made whole in BUF (the group keeps it packed), or
 * NULL before the first one. */
const struct decision *group_rt_last(const struct group_rt *g, struct decision *buf);
/* The newest decision record as JSON text (malloc'ed), or NULL when there
 * is none (or on ENOMEM). */
char *group_rt_newest_record(const struct group_rt *g);
/* The decision history, oldest first, as {"decisions": [...]}; NULL on
 * ENOMEM. */
struct cJSON *group_rt_records_json(const struct group_rt *g);
/* The observed count; *observed is false before the first observation. */
int group_rt_current(const struct group_rt *g, bool *observed);
/* Where the state came from at start-up (enum state_origin). */
enum state_origin group_rt_origin(const struct group_rt *g);
/* The newest failed driver operation as JSON {time, operation, error,
 * message}, or a JSON null when none failed since the same operation last
 * succeeded; owned by the caller (NULL on ENOMEM). */
struct cJSON *group_rt_last_error_json(const struct group_rt *g);

/* The admin API's view and commands of one group (group-admin.c). JSON is
 * owned by the caller (NULL on ENOMEM). Commands return 0, -ERANGE or
 * -EALREADY when refused (err says why), and save the state. */
struct cJSON *group_admin_summary(const struct group_rt *g);
struct cJSON *group_admin_show(const struct group_rt *g);
struct cJSON *group_admin_decisions(const struct group_rt *g);
int group_admin_pause(struct group_rt *g, int64_t until_ms, char *err, size_t len);
int group_admin_resume(struct group_rt *g, char *err, size_t len);
int group_admin_pin(struct group_rt *g, int count, int64_t until_ms, bool force, char *err, size_t len);
int group_admin_unpin(struct group_rt *g, char *err, size_t len);
int group_admin_dry_run(struct group_rt *g, bool enabled, char *err, size_t len);
/* The decision the group's next evaluation would make on its current
 * runtime state (windows, engine history, pause, pin, action in flight)
 * with the inputs of `w` changed, as a record in *ret. Nothing acts, and
 * neither the state nor the windows change. Returns 0, or -EINVAL (a
 * signal the group does not have; no count observed and none given) with
 * a message in err. */
struct admin_what_if;
int group_admin_what_if(struct group_rt *g, const struct admin_what_if *w, struct cJSON **ret, char *err,
			size_t len);

#endif
