/* Timers and deferred calls of one event loop, each kind on one sd-event
 * source: see loop.h. */
#include "sources/loop.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

struct loop_queue {
	sd_event *event;
	size_t users;          /* timers and laters registered */
	bool dispatching;      /* in on_timers() or on_laters(): not freed there */

	sd_event_source *timer_src; /* made with the first timer */
	struct timer **heap;   /* a binary heap by due time */
	size_t n, cap;
	size_t timers;         /* registered: heap and run have room for each */
	uint64_t armed;        /* the time timer_src is set for; 0: off */
	/* The timers of this turn, earliest first, taken off the heap: one
	 * stopped or armed again before its call is NULL here. */
	struct timer **run;
	size_t n_run;

	sd_event_source *later_src; /* made with the first later */
	struct later *posted;  /* in the order they came */
	struct later **tail;

	struct loop_queue *next;
};

/* The queues, one per loop in use. A daemon has one loop; tests make and
 * free several, so a queue goes with its last user. */
static struct loop_queue *queues;
static pthread_mutex_t queues_lock = PTHREAD_MUTEX_INITIALIZER;

static struct loop_queue *queue_get(sd_event *event)
{
	struct loop_queue *q;

	pthread_mutex_lock(&queues_lock);
	for (q = queues; q && q->event != event; q = q->next)
		;
	if (!q && (q = calloc(1, sizeof(*q)))) {
		q->event = event;
		q->tail = &q->posted;
		q->next = queues;
		queues = q;
	}
	pthread_mutex_unlock(&queues_lock);
	return q;
}

/* Frees `q` when no one uses it any more (not from its own callbacks:
 * they end with this). */
static void queue_put(struct loop_queue *q)
{
	if (q->users || q->dispatching)
		return;
	pthread_mutex_lock(&queues_lock);
	for (struct loop_queue **p = &queues; *p; p = &(*p)->next)
		if (*p == q) {
			*p = q->next;
			break;
		}
	pthread_mutex_unlock(&queues_lock);
	sd_event_source_disable_unref(q->timer_src);
	sd_event_source_disable_unref(q->later_src);
	free(q->heap);
	free(q->run);
	free(q);
}

/* ------------------------------------------------------------- timers */

/* A timer's idx: its place in the heap (below TIMER_RUN), or in run
 * (TIMER_RUN + its place), or TIMER_IDLE. */
#define TIMER_RUN ((size_t)1 << (sizeof(size_t) * 8 - 2))

static void place(struct loop_queue *q, size_t i, struct timer *t)
{
	q->heap[i] = t;
	t->idx = i;
}

static void sift_up(struct loop_queue *q, size_t i)
{
	struct timer *t = q->heap[i];

	while (i > 0 && t->due < q->heap[(i - 1) / 2]->due) {
		place(q, i, q->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	place(q, i, t);
}

static void sift_down(struct loop_queue *q, size_t i)
{
	struct timer *t = q->heap[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= q->n)
			break;
		if (c + 1 < q->n && q->heap[c + 1]->due < q->heap[c]->due)
			c++;
		if (q->heap[c]->due >= t->due)
			break;
		place(q, i, q->heap[c]);
		i = c;
	}
	place(q, i, t);
}

static void heap_remove(struct loop_queue *q, struct timer *t)
{
	size_t i = t->idx;
	struct timer *last = q->heap[--q->n];

	t->idx = TIMER_IDLE;
	if (i == q->n)
		return;
	place(q, i, last);
	sift_up(q, i);
	sift_down(q, last->idx);
}

/* Sets the source for the earliest timer: a change of any other costs
 * nothing. Not while the timers run: on_timers() ends with this. */
static void rearm(struct loop_queue *q)
{
	uint64_t next = q->n ? q->heap[0]->due : 0;

	if (q->dispatching || next == q->armed)
		return;
	q->armed = next;
	if (!next) {
		sd_event_source_set_enabled(q->timer_src, SD_EVENT_OFF);
		return;
	}
	sd_event_source_set_time(q->timer_src, next);
	sd_event_source_set_enabled(q->timer_src, SD_EVENT_ONESHOT);
}

/* Takes `t` off the heap or out of this turn's run; it is then not armed. */
static void disarm(struct loop_queue *q, struct timer *t)
{
	if (t->idx == TIMER_IDLE)
		return;
	if (t->idx >= TIMER_RUN) {
		q->run[t->idx - TIMER_RUN] = NULL;
		t->idx = TIMER_IDLE;
		return;
	}
	heap_remove(q, t);
}

/* Runs each timer due by the loop's time of this turn, earliest first.
 * They are all taken off the heap first: one that a callback arms again,
 * even for a time already past, runs in a later turn, so a callback cannot
 * hold the loop here. */
static int on_timers(sd_event_source *es, uint64_t usec, void *userdata)
{
	struct loop_queue *q = userdata;
	uint64_t now = usec;

	(void)es;
	sd_event_now(q->event, CLOCK_MONOTONIC, &now);
	q->armed = 0;
	q->dispatching = true;
	q->n_run = 0;
	while (q->n && q->heap[0]->due <= now) {
		struct timer *t = q->heap[0];

		heap_remove(q, t);
		t->idx = TIMER_RUN + q->n_run;
		q->run[q->n_run++] = t;
	}
	for (size_t i = 0; i < q->n_run; i++) {
		struct timer *t = q->run[i];

		if (!t)
			continue;
		q->run[i] = NULL;
		t->idx = TIMER_IDLE;
		t->fn(t, t->due, t->userdata);
	}
	q->n_run = 0;
	q->dispatching = false;
	rearm(q);
	queue_put(q);
	return 0;
}

int timer_start(sd_event *event, struct timer *t, uint64_t due, timer_fn fn, void *userdata)
{
	struct loop_queue *q;

	timer_stop(t);
	q = queue_get(event);
	if (!q)
		return -ENOMEM;
	if (!q->timer_src) {
		if (sd_event_add_time(event, &q->timer_src, CLOCK_MONOTONIC, UINT64_MAX, TIMER_ACCURACY_USEC,
				      on_timers, q) < 0) {
			q->timer_src = NULL;
			queue_put(q);
			return -ENOMEM;
		}
		sd_event_source_set_enabled(q->timer_src, SD_EVENT_OFF);
		sd_event_source_set_description(q->timer_src, "timers");
	}
	/* Room for every registered timer: arming or running one never
	 * allocates. */
	if (q->timers == q->cap) {
		size_t cap = q->cap ? 2 * q->cap : 64;
		struct timer **v = realloc(q->heap, cap * sizeof(*v)), **w;

		if (v)
			q->heap = v;
		w = v ? realloc(q->run, cap * sizeof(*w)) : NULL;
		if (!w) {
			queue_put(q);
			return -ENOMEM;
		}
		q->run = w;
		q->cap = cap;
	}
	q->users++;
	q->timers++;
	*t = (struct timer){.q = q, .idx = TIMER_IDLE, .fn = fn, .userdata = userdata};
	timer_set(t, due);
	return 0;
}

void timer_set(struct timer *t, uint64_t due)
{
	struct loop_queue *q = t->q;

	if (!q)
		return;
	/* 0 reads as "off" to rearm(); the loop's clock is never 0. */
	t->due = due ? due : 1;
	if (t->idx >= TIMER_RUN)
		disarm(q, t);
	if (t->idx == TIMER_IDLE) {
		place(q, q->n++, t);
		sift_up(q, t->idx);
	} else {
		sift_up(q, t->idx);
		sift_down(q, t->idx);
	}
	rearm(q);
}

void timer_stop(struct timer *t)
{
	struct loop_queue *q = t->q;

	if (!q)
		return;
	disarm(q, t);
	t->q = NULL;
	q->users--;
	q->timers--;
	rearm(q);
	queue_put(q);
}

bool timer_armed(const struct timer *t, uint64_t *due)
{
	if (!t->q || t->idx == TIMER_IDLE)
		return false;
	if (due)
		*due = t->due;
	return true;
}

/* ------------------------------------------------------ deferred calls */

static void unlink_later(struct later *l)
{
	if (!l->pprev)
		return;
	*l->pprev = l->next;
	if (l->next)
		l->next->pprev = l->pprev;
	else if (l->q->tail == &l->next)
		l->q->tail = l->pprev;
	l->next = NULL;
	l->pprev = NULL;
}

/* Runs the calls posted before this turn, in order. A call posted by one
 * of them runs in the next turn. Each may take back or post any other. */
static int on_laters(sd_event_source *es, void *userdata)
{
	struct loop_queue *q = userdata;
	struct later *batch = q->posted;

	(void)es;
	sd_event_source_set_enabled(q->later_src, SD_EVENT_OFF);
	/* The batch becomes a list of its own, headed here. */
	if (batch)
		batch->pprev = &batch;
	q->posted = NULL;
	q->tail = &q->posted;
	q->dispatching = true;
	while (batch) {
		struct later *l = batch;

		batch = l->next;
		if (batch)
			batch->pprev = &batch;
		l->next = NULL;
		l->pprev = NULL;
		l->fn(l);
	}
	q->dispatching = false;
	queue_put(q);
	return 0;
}

int later_init(sd_event *event, struct later *l, later_fn fn)
{
	struct loop_queue *q = queue_get(event);

	*l = (struct later){0};
	if (!q)
		return -ENOMEM;
	if (!q->later_src) {
		if (sd_event_add_defer(event, &q->later_src, on_laters, q) < 0) {
			q->later_src = NULL;
			queue_put(q);
			return -ENOMEM;
		}
		sd_event_source_set_enabled(q->later_src, SD_EVENT_OFF);
		sd_event_source_set_description(q->later_src, "deferred");
	}
	q->users++;
	l->q = q;
	l->fn = fn;
	return 0;
}

void later_post(struct later *l)
{
	struct loop_queue *q = l->q;

	if (!q || l->pprev)
		return;
	l->next = NULL;
	l->pprev = q->tail;
	*q->tail = l;
	q->tail = &l->next;
	sd_event_source_set_enabled(q->later_src, SD_EVENT_ONESHOT);
}

void later_done(struct later *l)
{
	struct loop_queue *q = l->q;

	if (!q)
		return;
	unlink_later(l);
	l->q = NULL;
	q->users--;
	queue_put(q);
}
