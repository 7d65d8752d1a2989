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

#include "config.h"

struct http;
struct group_rt;

struct group_ctx {
	sd_event *event;
	struct http *http;
	bool dry_run;  /* the agent's: --dry-run or agent.dry_run */
	bool verbose;  /* log every evaluation, not only changes */
	void (*first_observation)(void *userdata);
	void *userdata;
	const struct agent_conf *agent_conf;
};

/* Builds a runtime for `gc` (borrowed; must outlive the runtime). When `old`
 * is a runtime of the same name, the new one is built so that
 * group_rt_adopt() can take over its driver, windows and state later; `old`
 * itself is not changed here. Opens the driver unless it can be adopted.
 * Returns 0 or a negative errno (the reason is logged). */
int group_rt_new(const struct group_ctx *ctx, const struct group_conf *gc, const struct group_rt *old,
		 struct group_rt **ret);

/* Moves the driver instance (when the driver and its options are the same),
 * the windows of same-named signals, the engine state, the last decision and
 * any action in flight from `old` into `g`. */
void group_rt_adopt(struct group_rt *g, struct group_rt *old);

/* Starts the evaluation timer and the signal polls. */
void group_rt_start(struct group_rt *g);
/* Stops timers and cancels polls; a driver call in flight finishes in the
 * background and its result is dropped. */
void group_rt_stop(struct group_rt *g);
/* Frees the runtime (NULL is fine). */
void group_rt_free(struct group_rt *g);

const char *group_rt_name(const struct group_rt *g);
bool group_rt_dry_run(const struct group_rt *g);

#endif
