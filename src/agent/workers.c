/* A bounded pool of worker threads; see workers.h.
 *
 * Every field of the pool is under its lock. A thread counts as alive from
 * the moment the pool decides to start it (so that two tasks queued at
 * once do not start one thread each beyond the limit) until it leaves its
 * loop.
 *
 * Waking a thread costs more than many a task: a call of a cheap driver
 * reads one small file in less time than the kernel takes to switch to a
 * thread and back. So the pool does not wake one thread per queued task
 * when its tasks are quick: it keeps a moving mean of their run time and
 * wakes as many threads as drain the queue within WORKERS_QUICK_NS
 * (Little's law: queued tasks times the mean run time, over that time),
 * counting the threads already running, which take the next task as they
 * finish theirs. Tasks that take longer than that (a REST call waits on
 * the network) each get a thread of their own at once, up to the limit,
 * which is what hides their latency. A quick mean is only an estimate: a
 * call may hang where the others were quick, or a burst may be longer than
 * the threads awake drain in time. So while tasks wait behind busy
 * threads, one idle thread is the pool's guard: it sleeps until the head
 * of the queue has waited WORKERS_QUICK_NS, then takes it, and another
 * idle thread stands guard. The threads at work grow by one each
 * WORKERS_QUICK_NS for as long as the queue is late (waking them all at
 * once would only have them queue on the CPUs), and no task waits on a
 * stuck one for longer than that.
 *
 * Idle threads wait on a stack, each on its own condition, and the newest
 * idle is woken first: the threads in use stay few and warm, and the others
 * reach their idle time and end.
 *
 * A thread's stack keeps every page its deepest call ever touched (a REST
 * call through curl and the log touches some 40 KB), and an idle thread
 * waits for up to its idle time: at 10,000 groups the REST drivers' pools
 * kept some 330 threads and 13 MB of such pages for calls that run once an
 * interval. A thread idle for a second (WORKERS_TRIM_NS) gives the pages
 * below its frame back to the kernel (stack_trim()); its next call faults
 * in the few
 * it touches, which costs microseconds against a call that waits
 * milliseconds on the network, and a thread of quick calls that runs them
 * back to back is never idle that long. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "agent/workers.h"

/* The run time below which a task counts as quick, and the longest a task
 * waits behind busy threads before the guard takes it. */
#define WORKERS_QUICK_NS (5 * 1000000LL)
/* How long a thread waits idle before it gives back its stack's pages. */
#define WORKERS_TRIM_NS (1000 * 1000000LL)
/* What stays of the stack below the idle frame: the calls the thread
 * makes while it waits (the trim's own, the lock's). */
#define WORKERS_TRIM_MARGIN (4 * 1024)

/* One thread, in worker_main()'s frame. */
struct worker {
	pthread_cond_t cv;       /* woken, or the pool changed */
	struct worker *next;     /* on the idle stack */
	bool woken;              /* taken off the idle stack by a waker */
	bool guard;              /* the pool's guard */
	char *stack_low;         /* the lowest address of its stack, or NULL */
};

struct workers {
	pthread_mutex_t lock;
	pthread_cond_t gone;     /* a thread ended */
	char *name;
	int limit;
	int64_t idle_ms;
	int64_t quick_ns;
	int64_t mean_ns;         /* a task's run time, a moving mean */
	int threads, idle, running, queued, max_running;
	int waking;              /* woken or started, not yet at the queue */
	bool stopping;
	bool guard_wanted;       /* the next thread started is the guard */
	struct worker *idle_top; /* the newest idle thread */
	struct worker *guard;
	struct workers_task *head, *tail;
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static struct timespec timespec_of(int64_t ns)
{
	return (struct timespec){.tv_sec = (time_t)(ns / 1000000000LL), .tv_nsec = (long)(ns % 1000000000LL)};
}

/* Deadlines are on the monotonic clock, which a change of the wall clock
 * does not move. */
static void cond_init_monotonic(pthread_cond_t *cv)
{
	pthread_condattr_t attr;

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(cv, &attr);
	pthread_condattr_destroy(&attr);
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

/* Whether the head of the queue has waited for as long as a task may. */
static bool head_late(const struct workers *w, int64_t now)
{
	return w->head && now - w->head->queued_ns >= w->quick_ns;
}

static void unlink_idle(struct workers *w, struct worker *me)
{
	for (struct worker **p = &w->idle_top; *p; p = &(*p)->next)
		if (*p == me) {
			*p = me->next;
			w->idle--;
			return;
		}
}

/* Wakes the newest idle thread; false when none is idle. */
static bool wake_idle(struct workers *w, bool as_guard)
{
	struct worker *t = w->idle_top;

	if (!t)
		return false;
	w->idle_top = t->next;
	w->idle--;
	t->woken = true;
	if (as_guard) {
		t->guard = true;
		w->guard = t;
	} else {
		w->waking++;
	}
	pthread_cond_signal(&t->cv);
	return true;
}

static void *worker_main(void *arg);

/* The lowest address of the calling thread's stack (above its guard
 * page), or NULL when the thread library does not say. */
static char *stack_low(void)
{
	pthread_attr_t attr;
	void *addr = NULL;
	size_t size;

	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return NULL;
	if (pthread_attr_getstack(&attr, &addr, &size) != 0)
		addr = NULL;
	pthread_attr_destroy(&attr);
	return addr;
}

/* Gives the kernel the whole pages of the calling thread's stack from LOW
 * up to WORKERS_TRIM_MARGIN below this frame: nothing there is alive, and
 * a later touch of one maps a zeroed page. Not inlined, so that its frame
 * is the deepest of the caller's. */
static __attribute__((noinline)) void stack_trim(char *low)
{
	char here;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t from = ((uintptr_t)low + page - 1) & ~(page - 1);
	uintptr_t to = ((uintptr_t)&here - WORKERS_TRIM_MARGIN) & ~(page - 1);

	if (low && to > from)
		madvise((void *)from, to - from, MADV_DONTNEED);
}

static int start_thread(struct workers *w)
{
	pthread_attr_t attr;
	pthread_t tid;
	int r;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = -pthread_create(&tid, &attr, worker_main, w);
	pthread_attr_destroy(&attr);
	if (r == 0)
		w->threads++;
	return r;
}

/* Wakes or starts the threads the queue needs (see the top of the file).
 * Returns 0, or the error of a thread that could not be started. */
static int wake(struct workers *w)
{
	bool quick = w->mean_ns < w->quick_ns;
	int awake = w->waking + (quick ? w->running : 0);
	int want = w->queued;
	int r = 0;

	if (quick && w->queued > 0) {
		int64_t need = ((int64_t)w->queued * w->mean_ns + w->quick_ns - 1) / w->quick_ns;

		want = need < 1 ? 1 : need < w->queued ? (int)need : w->queued;
	}
	while (awake < want && wake_idle(w, false))
		awake++;
	while (awake < want && w->threads < w->limit && r == 0) {
		r = start_thread(w);
		if (r == 0) {
			w->waking++;
			awake++;
		}
	}
	/* Tasks left behind busy threads get a guard. */
	if (quick && w->queued > w->waking && !w->guard && !w->guard_wanted && !wake_idle(w, true) &&
	    w->threads < w->limit && start_thread(w) == 0)
		w->guard_wanted = true;
	return r;
}

/* Runs the head of the queue; called and returns with the lock held. */
static void run_head(struct workers *w)
{
	struct workers_task *t = pop(w);
	int64_t t0, t1;

	w->running++;
	if (w->running > w->max_running)
		w->max_running = w->running;
	pthread_mutex_unlock(&w->lock);
	/* From here the task is run()'s: it may be freed by the time run()
	 * returns. */
	t0 = mono_ns();
	t->run(t);
	t1 = mono_ns();
	pthread_mutex_lock(&w->lock);
	w->running--;
	/* A thread the kernel put aside in the middle of a quick call makes
	 * a long sample of it; bounding each sample at twice the threshold
	 * keeps a few of those from passing for slow calls, and calls that
	 * are all slow still bring the mean above the threshold. */
	w->mean_ns += ((t1 - t0 < 2 * w->quick_ns ? t1 - t0 : 2 * w->quick_ns) - w->mean_ns) / 8;
}

static void *worker_main(void *arg)
{
	struct workers *w = arg;
	struct worker me = {0};

	cond_init_monotonic(&me.cv);
	me.stack_low = stack_low();
	pthread_mutex_lock(&w->lock);
	if (w->guard_wanted && !w->guard) {
		w->guard_wanted = false;
		me.guard = true;
		w->guard = &me;
	} else if (w->waking > 0) {
		w->waking--;
	}
	for (;;) {
		/* A lowered limit ends the threads above it, between tasks. */
		if (w->threads > w->limit)
			break;
		if (w->head && (!me.guard || w->stopping || head_late(w, mono_ns()))) {
			if (me.guard) {
				/* The threads awake are slower than their mean
				 * said, or stuck: this one joins them, and
				 * another idle one stands guard. */
				me.guard = false;
				w->guard = NULL;
				wake(w);
			}
			run_head(w);
			continue;
		}
		if (me.guard && w->head) {
			struct timespec until = timespec_of(w->head->queued_ns + w->quick_ns);

			pthread_cond_timedwait(&me.cv, &w->lock, &until);
			continue;
		}
		if (me.guard) {
			me.guard = false;
			w->guard = NULL;
		}
		if (w->stopping)
			break;
		{
			int64_t now = mono_ns(), end = now + w->idle_ms * 1000000LL;
			struct timespec until = timespec_of(end);
			struct timespec trim_at = timespec_of(now + WORKERS_TRIM_NS);
			bool trimmed = !me.stack_low || now + WORKERS_TRIM_NS >= end;
			int r = 0;

			me.woken = false;
			me.next = w->idle_top;
			w->idle_top = &me;
			w->idle++;
			while (!me.woken && !w->stopping && r != ETIMEDOUT && w->threads <= w->limit) {
				r = pthread_cond_timedwait(&me.cv, &w->lock, trimmed ? &until : &trim_at);
				if (r == ETIMEDOUT && !trimmed) {
					/* Outside the lock: a waker that comes
					 * meanwhile sets me.woken, which the loop
					 * reads before it waits again. */
					trimmed = true;
					r = 0;
					pthread_mutex_unlock(&w->lock);
					stack_trim(me.stack_low);
					pthread_mutex_lock(&w->lock);
				}
			}
			if (me.woken) {
				if (!me.guard)
					w->waking--;
			} else {
				unlink_idle(w, &me);
				/* Idle for its idle time, or above a lowered
				 * limit: it ends, unless work came meanwhile. */
				if (!w->head)
					break;
			}
		}
	}
	if (me.guard)
		w->guard = NULL;
	w->threads--;
	/* Work it leaves goes to another thread. */
	if (w->head && !w->stopping)
		wake(w);
	pthread_cond_broadcast(&w->gone);
	pthread_mutex_unlock(&w->lock);
	pthread_cond_destroy(&me.cv);
	return NULL;
}

/* Signals every thread that waits, so that each looks at the pool again. */
static void signal_all(struct workers *w)
{
	for (struct worker *t = w->idle_top; t; t = t->next)
		pthread_cond_signal(&t->cv);
	if (w->guard)
		pthread_cond_signal(&w->guard->cv);
}

int workers_new(const char *name, int limit, int64_t idle_ms, struct workers **ret)
{
	struct workers *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->name = strdup(name);
	if (!w->name) {
		free(w);
		return -ENOMEM;
	}
	w->limit = limit < 1 ? 1 : limit;
	w->idle_ms = idle_ms < 1 ? 1 : idle_ms;
	w->quick_ns = WORKERS_QUICK_NS;
	/* Until tasks have been timed, each is taken to be slow: it gets a
	 * thread of its own, as a REST call needs. */
	w->mean_ns = w->quick_ns;
	pthread_mutex_init(&w->lock, NULL);
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
	signal_all(w);
	while (w->threads > 0)
		pthread_cond_wait(&w->gone, &w->lock);
	pthread_mutex_unlock(&w->lock);
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
		signal_all(w);
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

void workers_set_quick(struct workers *w, int64_t quick_ns)
{
	pthread_mutex_lock(&w->lock);
	w->quick_ns = quick_ns < 1 ? 1 : quick_ns;
	w->mean_ns = w->quick_ns;
	pthread_mutex_unlock(&w->lock);
}

int workers_submit(struct workers *w, struct workers_task *t)
{
	int64_t now = mono_ns();
	int r;

	pthread_mutex_lock(&w->lock);
	t->next = NULL;
	t->queued = true;
	t->queued_ns = now;
	if (w->tail)
		w->tail->next = t;
	else
		w->head = t;
	w->tail = t;
	w->queued++;
	r = wake(w);
	if (r < 0 && w->threads > 0)
		/* A thread alive takes it in its turn. */
		r = 0;
	else if (r < 0)
		/* Nothing would ever run it: the caller keeps it. */
		unlink_task(w, t);
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

