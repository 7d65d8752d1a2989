/* A bounded pool of worker threads; see workers.h.
 *
 * Every field of the pool is under its lock. A thread counts as alive from
 * the moment workers_submit() decides to start it (so that two tasks queued
 * at once do not start one thread each beyond the limit) until it leaves
 * its loop; `idle` counts the threads waiting for work, and a task queued
 * while more tasks wait than idle threads can take starts a thread when
 * the limit allows one. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/workers.h"

struct workers {
	pthread_mutex_t lock;
	pthread_cond_t work;     /* a task was queued, or the pool is being freed */
	pthread_cond_t gone;     /* a thread ended, or a task finished */
	char *name;
	int limit;
	int64_t idle_ms;
	int threads, idle, running, queued, max_running;
	bool stopping;
	struct workers_task *head, *tail;
};

static struct timespec deadline_after(int64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

static struct workers_task *pop(struct workers *w)
{
	struct workers_task *t = w->head;

	w->head = t->next;
	if (!w->head)
		w->tail = NULL;
	t->next = NULL;
	t->queued = false;
	w->queued--;
	return t;
}

/* Takes a queued task off the queue, wherever it is. */
static bool unlink_task(struct workers *w, struct workers_task *t)
{
	struct workers_task *prev = NULL;

	for (struct workers_task *q = w->head; q; prev = q, q = q->next) {
		if (q != t)
			continue;
		if (prev)
			prev->next = t->next;
		else
			w->head = t->next;
		if (w->tail == t)
			w->tail = prev;
		t->next = NULL;
		t->queued = false;
		w->queued--;
		return true;
	}
	return false;
}

static void *worker_main(void *arg)
{
	struct workers *w = arg;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct workers_task *t;

		/* A lowered limit ends the threads above it, between tasks. */
		if (w->threads > w->limit)
			break;
		if (!w->head) {
			struct timespec until;
			int r = 0;

			if (w->stopping)
				break;
			until = deadline_after(w->idle_ms);
			w->idle++;
			while (!w->head && !w->stopping && r != ETIMEDOUT && w->threads <= w->limit)
				r = pthread_cond_timedwait(&w->work, &w->lock, &until);
			w->idle--;
			/* An idle thread above a lowered limit must not take
			 * the next task: it ends, and the threads within the
			 * limit (at least one) take the queue. */
			if (!w->head || w->threads > w->limit)
				break;
		}
		t = pop(w);
		w->running++;
		if (w->running > w->max_running)
			w->max_running = w->running;
		pthread_mutex_unlock(&w->lock);
		/* From here the task is run()'s: it may be freed by the time
		 * run() returns. */
		t->run(t);
		pthread_mutex_lock(&w->lock);
		w->running--;
	}
	w->threads--;
	pthread_cond_broadcast(&w->gone);
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int workers_new(const char *name, int limit, int64_t idle_ms, struct workers **ret)
{
	struct workers *w = calloc(1, sizeof(*w));
	pthread_condattr_t attr;

	if (!w)
		return -ENOMEM;
	w->name = strdup(name);
	if (!w->name) {
		free(w);
		return -ENOMEM;
	}
	w->limit = limit < 1 ? 1 : limit;
	w->idle_ms = idle_ms < 1 ? 1 : idle_ms;
	pthread_mutex_init(&w->lock, NULL);
	/* Idle deadlines are on the monotonic clock, which a change of the
	 * wall clock does not move. */
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&w->work, &attr);
	pthread_condattr_destroy(&attr);
	pthread_cond_init(&w->gone, NULL);
	*ret = w;
	return 0;
}

void workers_free(struct workers *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stopping = true;
	pthread_cond_broadcast(&w->work);
	while (w->threads > 0)
		pthread_cond_wait(&w->gone, &w->lock);
	pthread_mutex_unlock(&w->lock);
	pthread_cond_destroy(&w->work);
	pthread_cond_destroy(&w->gone);
	pthread_mutex_destroy(&w->lock);
	free(w->name);
	free(w);
}

void workers_set_limit(struct workers *w, int limit)
{
	pthread_mutex_lock(&w->lock);
	w->limit = limit < 1 ? 1 : limit;
	/* Idle threads above the new limit end now rather than at their
	 * idle deadline. */
	if (w->threads > w->limit)
		pthread_cond_broadcast(&w->work);
	pthread_mutex_unlock(&w->lock);
}

int workers_limit(struct workers *w)
{
	int limit;

	pthread_mutex_lock(&w->lock);
	limit = w->limit;
	pthread_mutex_unlock(&w->lock);
	return limit;
}

int workers_submit(struct workers *w, struct workers_task *t)
{
	int r = 0;

	pthread_mutex_lock(&w->lock);
	t->next = NULL;
	t->queued = true;
	if (w->tail)
		w->tail->next = t;
	else
		w->head = t;
	w->tail = t;
	w->queued++;
	if (w->idle > 0)
		pthread_cond_signal(&w->work);
	if (w->queued > w->idle && w->threads < w->limit) {
		pthread_attr_t attr;
		pthread_t tid;

		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		r = -pthread_create(&tid, &attr, worker_main, w);
		pthread_attr_destroy(&attr);
		if (r == 0)
			w->threads++;
		else if (w->threads > 0)
			/* A thread alive takes it in its turn. */
			r = 0;
		else
			/* Nothing would ever run it: the caller keeps it. */
			unlink_task(w, t);
	}
	pthread_mutex_unlock(&w->lock);
	return r;
}

bool workers_cancel(struct workers *w, struct workers_task *t)
{
	bool found = false;

	pthread_mutex_lock(&w->lock);
	if (t->queued)
		found = unlink_task(w, t);
	pthread_mutex_unlock(&w->lock);
	return found;
}

void workers_stats(struct workers *w, struct workers_stats *ret)
{
	pthread_mutex_lock(&w->lock);
	*ret = (struct workers_stats){
		.threads = w->threads,
		.running = w->running,
		.queued = w->queued,
		.max_running = w->max_running,
	};
	pthread_mutex_unlock(&w->lock);
}
