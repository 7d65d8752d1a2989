/* Notifications and hooks: telling the world when a group scales, and
 * asking it before an instance is removed.
 *
 * - On each action, the decision record (JSON) is POSTed to a webhook (with
 *   a timeout, retries with exponential backoff, and an optional
 *   `X-Autoscaled-Signature: sha256=HEX` HMAC of the body with a secret read
 *   from a file) and given on stdin to a command hook. Both run in the
 *   background: a slow receiver never delays the action. Every delivery
 *   carries `X-Autoscaled-Delivery`, the same across retries, so a receiver
 *   can drop duplicates.
 * - Before a scale-in, the pre-scale-in hook runs once per victim (its id as
 *   the last argument, the record on stdin, AUTOSCALED_GROUP and
 *   AUTOSCALED_INSTANCE in the environment) with a deadline, for draining a
 *   load balancer or a job scheduler. A victim whose hook fails or misses
 *   the deadline is kept and the next candidate is tried; when candidates
 *   run out, only the drained victims are removed (fewer, or none: hold).
 *
 * Everything runs on the agent's loop: HTTP through the shared async client
 * (http.h), child processes watched through pidfds, so no SIGCHLD handling
 * is needed. Commands get no shell: the configuration gives an argv. */
#ifndef AUTOSCALED_NOTIFY_H
#define AUTOSCALED_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "config/config.h"

#define NOTIFY_MAX_SECRET 4096
#define NOTIFY_MAX_PENDING 256   /* deliveries and hooks in flight, all groups */
#define NOTIFY_MAX_BACKOFF_MS (60 * MS_PER_SEC)

struct http;
struct notifier;
struct drain;

/* Creates the notifier. `http` is borrowed and must outlive it. Returns 0
 * or -ENOMEM. base_backoff_ms is the first retry's delay (1 s in the
 * daemon; tests use less). */
int notifier_new(sd_event *event, struct http *http, int64_t base_backoff_ms, struct notifier **ret);

/* Cancels what is in flight (children are killed) and frees; NULL is fine. */
void notifier_free(struct notifier *n);

/* Sends `record` (JSON text, copied) for an action of `group` to the
 * webhook and the command hook of `c`, in the background. Returns 0, or a
 * negative errno when nothing could be started (logged). */
int notify_action(struct notifier *n, const struct notify_conf *c, const char *group, const char *record);

/* Deliveries and hooks still running (for tests and shutdown). */
size_t notifier_pending(const struct notifier *n);

/* Computes the signature header value ("sha256=" and 64 hex digits) of
 * `body` with `secret`. Returns 0 or -EIO. */
int notify_sign(const char *secret, size_t secret_len, const char *body, size_t len, char out[72]);

/* Called once when a drain is over: `ids` are the victims whose hook
 * succeeded, in the order they were tried (borrowed for the call). */
typedef void (*drain_done_fn)(void *userdata, const char *const *ids, size_t n_ids);

/* Runs the pre-scale-in hook of `c` for up to `want` victims taken in order
 * from `candidates` (copied), at most `want` at a time, replacing each
 * failure by the next candidate. `record` is given on stdin. `done` is
 * called from the loop, never from within drain_start(). Returns 0 and the
 * drain handle (owned by the notifier; valid until `done` returns), or a
 * negative errno. */
int drain_start(struct notifier *n, const struct notify_conf *c, const char *group, const char *const *candidates,
		size_t n_candidates, size_t want, const char *record, drain_done_fn done, void *userdata,
		struct drain **ret);

/* Abandons a drain: its hooks are killed and `done` is not called. */
void drain_cancel(struct drain *d);

#endif
