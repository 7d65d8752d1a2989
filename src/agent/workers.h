/* A bounded pool of worker threads with one FIFO queue: the driver calls of
 * the group runtime run on one pool per driver (job.c), so that no more
 * than the driver's limit of calls run at once, calls start in the order
 * they were queued, and a driver whose calls are slow or stuck holds only
 * its own pool's threads, never another driver's.
 *
 * A task queued wakes an idle thread, or starts one up to the limit, when
 * the threads awake would not take it soon: each task gets a thread of its
 * own while tasks take long (calls that wait on the network), and a few
 * threads serve many while they are quick (see workers.c). Threads end
 * after being idle for the pool's idle time. The loop's thread queues and cancels; the tasks run on the
 * workers. */
#ifndef AUTOSCALED_WORKERS_H
#define AUTOSCALED_WORKERS_H

#include <stdbool.h>
#include <stdint.h>

struct workers;

/* One unit of work. The pool owns it from workers_submit() until run() is
 * called on a worker thread, which then owns it (run() may free it or hand
 * it elsewhere: the pool does not touch it again), or until
 * workers_cancel() takes it back. */
struct workers_task {
	void (*run)(struct workers_task *t);
	struct workers_task *next; /* the pool's */
	bool queued;               /* the pool's, under its lock */
	int64_t queued_ns;         /* the pool's: when it was queued */
};

/* A pool of at most `limit` threads (at least 1) that end after `idle_ms`
 * without work. `name` (copied) names the pool in messages. Returns 0 or
 * a negative errno. */
int workers_new(const char *name, int limit, int64_t idle_ms, struct workers **ret);
/* Frees a pool once every task queued has run and every thread has ended:
 * it cancels nothing and waits for the tasks running. For tests and
 * orderly teardown; NULL is fine. */
void workers_free(struct workers *w);
/* Changes the limit (at least 1). Threads above a lowered limit end once
 * their task has run. */
void workers_set_limit(struct workers *w, int limit);
int workers_limit(struct workers *w);
/* Sets the run time below which a task counts as quick, which is also the
 * longest a task waits behind busy threads (5 ms unless set), and forgets
 * the tasks timed so far. For tests. */
void workers_set_quick(struct workers *w, int64_t quick_ns);
/* Queues `t` behind every task queued before it. Returns 0, or a negative
 * errno when no thread could be started to run it (then `t` is not
 * queued). */
int workers_submit(struct workers *w, struct workers_task *t);
/* Takes `t` off the queue when it has not started; returns whether it did
 * (false: it runs or has run). */
bool workers_cancel(struct workers *w, struct workers_task *t);

/* What the pool holds now, for tests and figures. */
struct workers_stats {
	int threads;      /* alive */
	int running;      /* running a task */
	int queued;       /* waiting for a thread */
	int max_running;  /* the most ever running at once */
};
void workers_stats(struct workers *w, struct workers_stats *ret);

#endif
