/* Unit tests of the bounded worker pool (workers.c) that driver calls run
 * on. The tasks call a counting driver: it notes how many of its calls run
 * at once and in which order they started, and a call may be held until
 * the test releases it. Every wait is for a condition, within a deadline
 * of real time.
 *
 * The cases:
 *   - never more calls at once than the limit, whatever is queued, and
 *     every call runs;
 *   - calls start in the order they were queued (first queued, first run);
 *   - a pool whose calls are stuck does not hold up another pool's calls;
 *   - a queued call can be cancelled, a running one cannot;
 *   - idle threads end, and a later call starts a thread again;
 *   - a lowered limit holds for the calls that follow, also when the
 *     threads above it are idle;
 *   - quick calls queued at once share a few threads, not one each;
 *   - a call stuck where the calls were quick holds up the calls queued
 *     behind it only until the guard takes them;
 *   - a thread idle for a while gives back the stack pages its call
 *     touched, and runs the next call on fresh ones. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/workers.h"

#define DEADLINE_MS 20000
#define MAX_CALLS 256

/* -------------------------------------------------- the counting driver */

static pthread_mutex_t drv_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t drv_cond = PTHREAD_COND_INITIALIZER;
static struct {
	int busy, max_busy;     /* calls running now, and at most */
	int held;               /* calls waiting for a release */
	int releases;           /* releases not yet taken */
	int order[MAX_CALLS];   /* ids in the order the calls started */
	int n_started, n_done;
} drv;

struct call {
	struct workers_task task;
	int id;
	bool hold;             /* wait for a release */
};

static void drv_reset(void)
{
	pthread_mutex_lock(&drv_lock);
	memset(&drv, 0, sizeof(drv));
	pthread_mutex_unlock(&drv_lock);
}

static void call_run(struct workers_task *t)
{
	struct call *c = (struct call *)((char *)t - offsetof(struct call, task));

	pthread_mutex_lock(&drv_lock);
	if (++drv.busy > drv.max_busy)
		drv.max_busy = drv.busy;
	if (drv.n_started < MAX_CALLS)
		drv.order[drv.n_started] = c->id;
	drv.n_started++;
	pthread_cond_broadcast(&drv_cond);
	if (c->hold) {
		drv.held++;
		pthread_cond_broadcast(&drv_cond);
		while (drv.releases == 0)
			pthread_cond_wait(&drv_cond, &drv_lock);
		drv.releases--;
		drv.held--;
	}
	drv.busy--;
	drv.n_done++;
	pthread_cond_broadcast(&drv_cond);
	pthread_mutex_unlock(&drv_lock);
}

static void release(int n)
{
	pthread_mutex_lock(&drv_lock);
	drv.releases += n;
	pthread_cond_broadcast(&drv_cond);
	pthread_mutex_unlock(&drv_lock);
}

static struct timespec deadline(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += DEADLINE_MS / 1000;
	return ts;
}

/* Waits until `*field` reaches `want`; fails the test at the deadline. */
static void wait_for(const int *field, int want)
{
	struct timespec until = deadline();
	int r = 0;

	pthread_mutex_lock(&drv_lock);
	while (*field < want && r != ETIMEDOUT)
		r = pthread_cond_timedwait(&drv_cond, &drv_lock, &until);
	pthread_mutex_unlock(&drv_lock);
	assert_true(*field >= want);
}

static int drv_get(const int *field)
{
	int v;

	pthread_mutex_lock(&drv_lock);
	v = *field;
	pthread_mutex_unlock(&drv_lock);
	return v;
}

/* Waits until the pool has `threads` threads or fewer. */
static void wait_threads_at_most(struct workers *w, int threads)
{
	struct timespec ts, start;
	struct workers_stats st;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		workers_stats(w, &st);
		if (st.threads <= threads)
			return;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		assert_true((ts.tv_sec - start.tv_sec) * 1000 < DEADLINE_MS);
		nanosleep(&(struct timespec){.tv_nsec = 2000000}, NULL);
	}
}

static struct call calls[MAX_CALLS];

static void submit(struct workers *w, int id, bool hold)
{
	calls[id] = (struct call){.task.run = call_run, .id = id, .hold = hold};
	assert_int_equal(workers_submit(w, &calls[id].task), 0);
}

static int setup(void **state)
{
	(void)state;
	drv_reset();
	return 0;
}

/* ---------------------------------------------------------------- cases */

static void test_bound_holds(void **state)
{
	struct workers *w;
	struct workers_stats st;

	(void)state;
	assert_int_equal(workers_new("test", 3, 60000, &w), 0);
	for (int i = 0; i < 40; i++)
		submit(w, i, true);
	wait_for(&drv.held, 3);
	workers_stats(w, &st);
	assert_int_equal(st.threads, 3);
	assert_int_equal(st.running, 3);
	assert_int_equal(st.queued, 37);
	/* One at a time, then all: the limit holds both ways. */
	release(1);
	wait_for(&drv.n_done, 1);
	wait_for(&drv.held, 3);
	release(39);
	wait_for(&drv.n_done, 40);
	assert_int_equal(drv_get(&drv.max_busy), 3);
	workers_stats(w, &st);
	assert_int_equal(st.max_running, 3);
	assert_true(st.threads <= 3);
	workers_free(w);
}

static void test_first_queued_runs_first(void **state)
{
	struct workers *w;

	(void)state;
	assert_int_equal(workers_new("test", 2, 60000, &w), 0);
	submit(w, 0, true);
	submit(w, 1, true);
	wait_for(&drv.held, 2);
	for (int i = 2; i < 30; i++)
		submit(w, i, false);
	/* One held call ends; the other keeps its thread, so the queued calls
	 * run one after another on the freed one, in the order they were
	 * queued. (Were both threads free, two calls taken in order could
	 * still note their start in either order.) */
	release(1);
	wait_for(&drv.n_done, 29);
	assert_int_equal(drv_get(&drv.held), 1);
	for (int i = 2; i < 30; i++)
		assert_int_equal(drv.order[i], i);
	release(1);
	wait_for(&drv.n_done, 30);
	workers_free(w);
}

static void test_stuck_pool_does_not_block_another(void **state)
{
	struct workers *slow, *fast;
	struct workers_stats st;

	(void)state;
	assert_int_equal(workers_new("slow", 1, 60000, &slow), 0);
	assert_int_equal(workers_new("fast", 2, 60000, &fast), 0);
	submit(slow, 0, true);
	wait_for(&drv.held, 1);
	for (int i = 1; i < 5; i++)
		submit(slow, i, false);
	for (int i = 5; i < 25; i++)
		submit(fast, i, false);
	wait_for(&drv.n_done, 20);
	/* Every fast call has run; the slow pool still waits on its first. */
	workers_stats(slow, &st);
	assert_int_equal(st.running, 1);
	assert_int_equal(st.queued, 4);
	for (int i = 0; i < 20; i++)
		assert_true(drv.order[1 + i] >= 5);
	release(1);
	wait_for(&drv.n_done, 25);
	workers_free(slow);
	workers_free(fast);
}

static void test_cancel_queued_only(void **state)
{
	struct workers *w;

	(void)state;
	assert_int_equal(workers_new("test", 1, 60000, &w), 0);
	submit(w, 0, true);
	wait_for(&drv.held, 1);
	submit(w, 1, false);
	submit(w, 2, false);
	submit(w, 3, false);
	assert_true(workers_cancel(w, &calls[2].task));
	assert_false(workers_cancel(w, &calls[2].task));
	assert_true(workers_cancel(w, &calls[3].task)); /* the tail */
	assert_false(workers_cancel(w, &calls[0].task)); /* running */
	submit(w, 4, false);
	release(1);
	wait_for(&drv.n_done, 3);
	workers_free(w);
	assert_int_equal(drv.n_started, 3);
	assert_int_equal(drv.order[0], 0);
	assert_int_equal(drv.order[1], 1);
	assert_int_equal(drv.order[2], 4);
}

static void test_idle_threads_end(void **state)
{
	struct workers *w;
	struct workers_stats st;

	(void)state;
	assert_int_equal(workers_new("test", 4, 20, &w), 0);
	for (int i = 0; i < 8; i++)
		submit(w, i, false);
	wait_for(&drv.n_done, 8);
	wait_threads_at_most(w, 0);
	/* Lazily started again. */
	submit(w, 8, false);
	wait_for(&drv.n_done, 9);
	workers_stats(w, &st);
	assert_true(st.threads <= 1);
	workers_free(w);
}

static void test_lowered_limit(void **state)
{
	struct workers *w;

	(void)state;
	assert_int_equal(workers_new("test", 4, 60000, &w), 0);
	for (int i = 0; i < 4; i++)
		submit(w, i, true);
	wait_for(&drv.held, 4);
	workers_set_limit(w, 1);
	assert_int_equal(workers_limit(w), 1);
	release(4);
	wait_for(&drv.n_done, 4);
	wait_threads_at_most(w, 1);
	pthread_mutex_lock(&drv_lock);
	drv.max_busy = 0;
	pthread_mutex_unlock(&drv_lock);
	for (int i = 4; i < 20; i++)
		submit(w, i, true);
	wait_for(&drv.held, 1);
	release(16);
	wait_for(&drv.n_done, 20);
	assert_int_equal(drv_get(&drv.max_busy), 1);
	workers_free(w);
}

/* Idle threads above a lowered limit take no more calls (a reload that
 * lowers agent.driver_concurrency between two cycles). */
static void test_lowered_limit_idle(void **state)
{
	struct workers *w;
	struct workers_stats st;

	(void)state;
	assert_int_equal(workers_new("test", 3, 60000, &w), 0);
	for (int i = 0; i < 3; i++)
		submit(w, i, true);
	wait_for(&drv.held, 3);
	release(3);
	wait_for(&drv.n_done, 3);
	workers_stats(w, &st);
	assert_int_equal(st.threads, 3);
	pthread_mutex_lock(&drv_lock);
	drv.max_busy = 0;
	pthread_mutex_unlock(&drv_lock);
	workers_set_limit(w, 1);
	for (int i = 3; i < 13; i++)
		submit(w, i, true);
	wait_for(&drv.held, 1);
	wait_threads_at_most(w, 1);
	workers_stats(w, &st);
	assert_int_equal(st.running, 1);
	assert_int_equal(st.queued, 9);
	release(10);
	wait_for(&drv.n_done, 13);
	assert_int_equal(drv_get(&drv.max_busy), 1);
	workers_free(w);
}

/* Runs `n` quick calls from `first` one after another, so that the pool
 * learns that its calls are quick. */
static void train_quick(struct workers *w, int first, int n)
{
	for (int i = first; i < first + n; i++) {
		submit(w, i, false);
		wait_for(&drv.n_done, i + 1);
	}
}

static void test_quick_calls_share_threads(void **state)
{
	struct workers *w;
	struct workers_stats st;

	(void)state;
	assert_int_equal(workers_new("test", 64, 60000, &w), 0);
	/* A quick threshold of 10 s: no call here is ever late, whatever the
	 * load on the machine, so the count of threads is the pool's choice
	 * alone. */
	workers_set_quick(w, 10LL * 1000000000);
	train_quick(w, 0, 60);
	for (int i = 60; i < 210; i++)
		submit(w, i, false);
	wait_for(&drv.n_done, 210);
	/* One thread serves them, and one more stands guard (a third may
	 * have been started while the first was between two calls); a
	 * thread per call would have made 64. */
	workers_stats(w, &st);
	assert_true(st.threads <= 3);
	for (int i = 0; i < 210; i++)
		assert_int_equal(drv.order[i], i);
	workers_free(w);
}

static void test_guard_takes_calls_behind_stuck(void **state)
{
	struct workers *w;
	struct workers_stats st;

	(void)state;
	assert_int_equal(workers_new("test", 4, 60000, &w), 0);
	workers_set_quick(w, 50LL * 1000000);
	train_quick(w, 0, 60);
	/* The pool takes its calls for quick ones; this one hangs. */
	submit(w, 60, true);
	wait_for(&drv.held, 1);
	for (int i = 61; i < 66; i++)
		submit(w, i, false);
	/* The calls behind it run while it still hangs. */
	wait_for(&drv.n_done, 65);
	assert_int_equal(drv_get(&drv.held), 1);
	workers_stats(w, &st);
	assert_int_equal(st.queued, 0);
	release(1);
	wait_for(&drv.n_done, 66);
	workers_free(w);
}

/* A call that fills DEEP_BYTES of its thread's stack and says where. */
#define DEEP_BYTES (256 * 1024)

static struct {
	char *from;         /* the filled bytes' first page */
	size_t pages;
	bool saw_zero;      /* the second call found its bytes zeroed */
	size_t resident;    /* pages in memory right after the last fill */
	int runs;
} deep;

static size_t deep_resident(void);

static __attribute__((noinline)) void deep_run(struct workers_task *t)
{
	volatile char buf[DEEP_BYTES];
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t from = ((uintptr_t)buf + page - 1) & ~(page - 1);
	uintptr_t to = ((uintptr_t)buf + sizeof(buf)) & ~(page - 1);

	(void)t;
	pthread_mutex_lock(&drv_lock);
	/* The second call, on the same thread from the same frame: its
	 * pages were given back, so they read as zeros, not as the first
	 * call's bytes. */
	if (deep.runs == 1)
		deep.saw_zero = buf[DEEP_BYTES / 2] == 0 && buf[page] == 0;
	pthread_mutex_unlock(&drv_lock);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(i | 1);
	pthread_mutex_lock(&drv_lock);
	deep.from = (char *)from;
	deep.pages = (to - from) / page;
	deep.resident = deep_resident();
	deep.runs++;
	drv.n_done++;
	pthread_cond_broadcast(&drv_cond);
	pthread_mutex_unlock(&drv_lock);
}

/* How many of the deep call's pages are in memory; SIZE_MAX when it
 * cannot say (called on the worker too, where cmocka cannot fail). */
static size_t deep_resident(void)
{
	unsigned char *vec = calloc(deep.pages ? deep.pages : 1, 1);
	size_t n = 0;

	if (!vec || mincore(deep.from, deep.pages * (size_t)sysconf(_SC_PAGESIZE), vec) != 0) {
		free(vec);
		return SIZE_MAX;
	}
	for (size_t i = 0; i < deep.pages; i++)
		n += vec[i] & 1;
	free(vec);
	return n;
}

static void test_idle_thread_gives_back_stack(void **state)
{
	struct workers *w;
	struct workers_task t = {.run = deep_run};
	struct timespec ts, start;
	struct workers_stats st;

	(void)state;
	memset(&deep, 0, sizeof(deep));
	/* One thread, which stays for a minute when idle. */
	assert_int_equal(workers_new("test", 1, 60000, &w), 0);
	assert_int_equal(workers_submit(w, &t), 0);
	wait_for(&drv.n_done, 1);
	assert_true(deep.pages >= DEEP_BYTES / (size_t)sysconf(_SC_PAGESIZE) - 2);
	assert_int_equal(deep.resident, deep.pages);
	/* Its pages were all touched just now; idle, it gives them back,
	 * but for the few just below the idle frame, which it keeps for the
	 * calls it makes while it waits. */
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (deep_resident() > deep.pages / 8) {
		assert_true(deep_resident() != SIZE_MAX);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		assert_true((ts.tv_sec - start.tv_sec) * 1000 < DEADLINE_MS);
		nanosleep(&(struct timespec){.tv_nsec = 5000000}, NULL);
	}
	workers_stats(w, &st);
	assert_int_equal(st.threads, 1);
	/* The same thread runs the next call, on zeroed pages. */
	assert_int_equal(workers_submit(w, &t), 0);
	wait_for(&drv.n_done, 2);
	assert_true(deep.saw_zero);
	assert_int_equal(deep.resident, deep.pages);
	workers_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_bound_holds, setup),
		cmocka_unit_test_setup(test_first_queued_runs_first, setup),
		cmocka_unit_test_setup(test_stuck_pool_does_not_block_another, setup),
		cmocka_unit_test_setup(test_cancel_queued_only, setup),
		cmocka_unit_test_setup(test_idle_threads_end, setup),
		cmocka_unit_test_setup(test_lowered_limit, setup),
		cmocka_unit_test_setup(test_lowered_limit_idle, setup),
		cmocka_unit_test_setup(test_quick_calls_share_threads, setup),
		cmocka_unit_test_setup(test_guard_takes_calls_behind_stuck, setup),
		cmocka_unit_test_setup(test_idle_thread_gives_back_stack, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
