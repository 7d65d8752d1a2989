/* What many users of one event loop share: timers on one sd-event time
 * source, and calls deferred to the next turn on one defer source.
 *
 * Every group has an evaluation timer, each of its signals a poll timer,
 * and each source a deferred completion: with 10,000 groups of three
 * signals, 70,000 sd-event sources of about 300 bytes, each expiry and
 * each completion one turn of the loop (prepare, wait, dispatch; most
 * re-arming the loop's timer fd). Here the timers of a loop sit in a
 * binary heap by due time behind one source: when it fires, every timer
 * then due runs in that turn, earliest first, and the source is re-armed
 * once. The deferred calls of a loop wait in a list behind one defer
 * source and run together in the next turn, in the order they came.
 *
 * A loop's queue is made by its first user and freed with its last. Use
 * on the loop's thread; the queues of different loops are independent. */
#ifndef AUTOSCALED_SOURCES_LOOP_H
#define AUTOSCALED_SOURCES_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <systemd/sd-event.h>

struct loop_queue;

/* ------------------------------------------------------------- timers */

struct timer;

/* `due` is the time the timer was armed for (CLOCK_MONOTONIC, µs). */
typedef void (*timer_fn)(struct timer *t, uint64_t due, void *userdata);

/* Embedded in its owner; all zeroes is a stopped timer. A timer fires
 * once per arming (as SD_EVENT_ONESHOT); a periodic one re-arms itself
 * from its callback with timer_set(). */
struct timer {
	struct loop_queue *q; /* NULL: stopped */
	size_t idx;           /* where q holds it (loop.c), TIMER_IDLE when not armed */
	uint64_t due;
	timer_fn fn;
	void *userdata;
};

#define TIMER_IDLE ((size_t)-1)

/* How late the queue's source may fire so that timers due close together
 * share a wake-up (sd-event's own default for a timer). */
#define TIMER_ACCURACY_USEC (250000ULL)

/* Registers `t` with `event`'s queue and arms it for `due`. Returns 0 or
 * -ENOMEM (then `t` stays stopped). */
int timer_start(sd_event *event, struct timer *t, uint64_t due, timer_fn fn, void *userdata);
/* Arms a started timer for `due` (again): one expiry at most is pending. */
void timer_set(struct timer *t, uint64_t due);
/* Disarms and unregisters `t`; a stopped timer is fine. */
void timer_stop(struct timer *t);
/* Whether `t` is armed; its due time then in *due (may be NULL). */
bool timer_armed(const struct timer *t, uint64_t *due);

/* ------------------------------------------------------ deferred calls */

struct later;
typedef void (*later_fn)(struct later *l);

/* Embedded in its owner; all zeroes is an unregistered one. */
struct later {
	struct loop_queue *q; /* NULL: unregistered */
	struct later *next, **pprev; /* in the queue's list while posted */
	later_fn fn;
};

/* Registers `l` with `event`'s queue, so that later_post() cannot fail.
 * Returns 0 or -ENOMEM. */
int later_init(sd_event *event, struct later *l, later_fn fn);
/* Calls `l`'s function in the loop's next turn; posting it again before
 * then changes nothing. */
void later_post(struct later *l);
/* Takes back a posted call (if any) and unregisters `l`. */
void later_done(struct later *l);

#endif
