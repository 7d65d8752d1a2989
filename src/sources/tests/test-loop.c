/* Unit tests of the loop's shared timers and deferred calls (loop.c): the
 * timers due run in one turn, earliest first; one armed again for the past
 * waits for the next turn; a timer or call taken back from a callback does
 * not run; the heap stays ordered through thousands of random changes. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sources/loop.h"

#define FIRED_MAX 4096
struct fired {
	uint64_t due[FIRED_MAX];
	int who[FIRED_MAX];
	size_t n;
};

struct owner {
	struct timer t;
	struct later l;
	int id;
	struct fired *log;
	struct owner *victim; /* taken back by this one's callback */
	uint64_t again;       /* armed again for this, if not 0 */
	int runs;
};

static void on_timer(struct timer *t, uint64_t due, void *userdata)
{
	struct owner *o = userdata;

	assert_ptr_equal(&o->t, t);
	o->runs++;
	if (o->log->n < FIRED_MAX) {
		o->log->due[o->log->n] = due;
		o->log->who[o->log->n++] = o->id;
	}
	if (o->victim)
		timer_stop(&o->victim->t);
	if (o->again)
		timer_set(t, o->again);
}

static uint64_t now_usec(sd_event *e)
{
	uint64_t now;

	assert_int_equal(sd_event_now(e, CLOCK_MONOTONIC, &now) >= 0 ? 0 : -1, 0);
	return now;
}

/* Runs the loop until nothing is due at once. */
static int run_idle(sd_event *e)
{
	int turns = 0;

	while (sd_event_run(e, 0) > 0)
		turns++;
	return turns;
}

static void test_timers_in_one_turn(void **st)
{
	sd_event *e;
	struct fired log = {0};
	struct owner o[5];
	uint64_t now, due;

	(void)st;
	assert_int_equal(sd_event_new(&e), 0);
	sd_event_run(e, 0); /* the loop's clock starts */
	now = now_usec(e);
	/* Armed out of order, all in the past: one turn runs them, earliest
	 * first, each with the time it was armed for. */
	for (int i = 0; i < 5; i++) {
		o[i] = (struct owner){.id = i, .log = &log};
		assert_int_equal(timer_start(e, &o[i].t, now - 1000 * (uint64_t)((i * 3) % 5 + 1), on_timer, &o[i]), 0);
	}
	assert_true(timer_armed(&o[0].t, &due));
	assert_true(due == now - 1000);
	assert_int_equal(sd_event_run(e, 1000000), 1);
	assert_int_equal(log.n, 5);
	for (size_t i = 1; i < log.n; i++)
		assert_true(log.due[i - 1] <= log.due[i]);
	/* Fired once each, and not armed again. */
	assert_false(timer_armed(&o[0].t, NULL));
	assert_int_equal(run_idle(e), 0);
	assert_int_equal(log.n, 5);

	/* One armed in the future waits; the ones due run. */
	log.n = 0;
	timer_set(&o[0].t, now_usec(e) + 3600000000ULL);
	timer_set(&o[1].t, 1);
	assert_int_equal(sd_event_run(e, 1000000), 1);
	assert_int_equal(log.n, 1);
	assert_int_equal(log.who[0], 1);
	assert_true(timer_armed(&o[0].t, NULL));
	for (int i = 0; i < 5; i++)
		timer_stop(&o[i].t);
	timer_stop(&o[0].t); /* twice is fine */
	assert_int_equal(run_idle(e), 0);
	sd_event_unref(e);
}

static void test_timer_callbacks(void **st)
{
	sd_event *e;
	struct fired log = {0};
	struct owner a = {.id = 1, .log = &log}, b = {.id = 2, .log = &log}, c = {.id = 3, .log = &log};

	(void)st;
	assert_int_equal(sd_event_new(&e), 0);
	sd_event_run(e, 0);
	/* a, due first, takes b back: b does not run. a arms itself for a
	 * time already past: it runs again, but in the next turn. */
	a.victim = &b;
	a.again = 1;
	assert_int_equal(timer_start(e, &a.t, 10, on_timer, &a), 0);
	assert_int_equal(timer_start(e, &b.t, 20, on_timer, &b), 0);
	assert_int_equal(timer_start(e, &c.t, 30, on_timer, &c), 0);
	assert_int_equal(sd_event_run(e, 1000000), 1);
	assert_int_equal(a.runs, 1);
	assert_int_equal(b.runs, 0);
	assert_int_equal(c.runs, 1);
	a.again = 0;
	assert_int_equal(sd_event_run(e, 1000000), 1);
	assert_int_equal(a.runs, 2);
	assert_int_equal(run_idle(e), 0);
	assert_int_equal(b.runs, 0);
	/* A timer stopped in its own callback, with the loop's last timer:
	 * the queue goes, and a new one comes with the next timer. */
	timer_stop(&c.t);
	a.victim = &a;
	timer_set(&a.t, 1);
	assert_int_equal(sd_event_run(e, 1000000), 1);
	assert_int_equal(a.runs, 3);
	assert_false(timer_armed(&a.t, NULL));
	a.victim = NULL;
	assert_int_equal(timer_start(e, &a.t, 1, on_timer, &a), 0);
	assert_int_equal(sd_event_run(e, 1000000), 1);
	assert_int_equal(a.runs, 4);
	timer_stop(&a.t);
	sd_event_unref(e);
}

/* Thousands of random arms, re-arms and stops: the timers due run each
 * once, in order of due time, and the others not. */
static void test_timer_heap(void **st)
{
	enum { N = 2000 };
	sd_event *e;
	struct owner *o = calloc(N, sizeof(*o));
	static struct fired log;
	bool armed[N] = {false};
	uint64_t due[N] = {0}, now;

	(void)st;
	assert_non_null(o);
	assert_int_equal(sd_event_new(&e), 0);
	sd_event_run(e, 0);
	now = now_usec(e);
	srand(7);
	for (int i = 0; i < N; i++) {
		o[i] = (struct owner){.id = i, .log = &log};
		due[i] = rand() % 2 ? now - 1 - (uint64_t)(rand() % 1000000) : now + 3600000000ULL + (uint64_t)rand();
		assert_int_equal(timer_start(e, &o[i].t, due[i], on_timer, &o[i]), 0);
		armed[i] = true;
	}
	for (int k = 0; k < 20000; k++) {
		int i = rand() % N, op = rand() % 8;

		if (op == 0) {
			timer_stop(&o[i].t);
			armed[i] = false;
			continue;
		}
		due[i] = rand() % 2 ? now - 1 - (uint64_t)(rand() % 1000000) : now + 3600000000ULL;
		if (armed[i])
			timer_set(&o[i].t, due[i]);
		else
			assert_int_equal(timer_start(e, &o[i].t, due[i], on_timer, &o[i]), 0);
		armed[i] = true;
	}
	/* In their turn, the due ones run once each, in order. */
	size_t expected = 0;

	for (int i = 0; i < N; i++)
		expected += armed[i] && due[i] < now;
	assert_true(expected > N / 10);
	log.n = 0;
	assert_int_equal(sd_event_run(e, 1000000), 1);
	assert_int_equal(log.n, expected);
	for (int i = 0; i < N; i++)
		assert_int_equal(o[i].runs, armed[i] && due[i] < now ? 1 : 0);
	for (size_t i = 1; i < log.n; i++)
		assert_true(log.due[i - 1] <= log.due[i]);
	for (int i = 0; i < N; i++)
		timer_stop(&o[i].t);
	assert_int_equal(run_idle(e), 0);
	sd_event_unref(e);
	free(o);
}

struct calls {
	int order[16];
	int n;
};

struct deferred {
	struct later l;
	int id;
	struct calls *log;
	struct deferred *post, *take_back;
};

static void on_later(struct later *l)
{
	struct deferred *d = (struct deferred *)((char *)l - offsetof(struct deferred, l));

	d->log->order[d->log->n++] = d->id;
	if (d->take_back)
		later_done(&d->take_back->l);
	if (d->post)
		later_post(&d->post->l);
}

static void test_laters(void **st)
{
	sd_event *e;
	struct calls log = {0};
	struct deferred d[4];

	(void)st;
	assert_int_equal(sd_event_new(&e), 0);
	for (int i = 0; i < 4; i++) {
		d[i] = (struct deferred){.id = i, .log = &log};
		assert_int_equal(later_init(e, &d[i].l, on_later), 0);
	}
	/* In the order posted, once however often posted, all in one turn. */
	later_post(&d[2].l);
	later_post(&d[0].l);
	later_post(&d[2].l);
	later_post(&d[1].l);
	assert_int_equal(log.n, 0);
	assert_int_equal(sd_event_run(e, 0), 1);
	assert_int_equal(log.n, 3);
	assert_int_equal(log.order[0], 2);
	assert_int_equal(log.order[1], 0);
	assert_int_equal(log.order[2], 1);
	assert_int_equal(run_idle(e), 0);

	/* One posted by a call runs in the next turn; one taken back by a
	 * call of the same turn does not run; one taken back before its turn
	 * does not either. */
	log.n = 0;
	d[0].post = &d[0];
	d[1].take_back = &d[2];
	later_post(&d[0].l);
	later_post(&d[1].l);
	later_post(&d[2].l);
	later_post(&d[3].l);
	later_done(&d[3].l);
	assert_int_equal(sd_event_run(e, 0), 1);
	assert_int_equal(log.n, 2);
	assert_int_equal(log.order[0], 0);
	assert_int_equal(log.order[1], 1);
	d[0].post = NULL;
	assert_int_equal(sd_event_run(e, 0), 1);
	assert_int_equal(log.n, 3);
	assert_int_equal(log.order[2], 0);
	assert_int_equal(run_idle(e), 0);
	/* Posting an unregistered one does nothing. */
	later_post(&d[3].l);
	assert_int_equal(run_idle(e), 0);
	assert_int_equal(log.n, 3);
	later_done(&d[0].l);
	later_done(&d[1].l);
	sd_event_unref(e);
}

/* Two loops keep two queues: one's timers never run on the other. */
static void test_two_loops(void **st)
{
	sd_event *e1, *e2;
	struct fired log = {0};
	struct owner a = {.id = 1, .log = &log}, b = {.id = 2, .log = &log};

	(void)st;
	assert_int_equal(sd_event_new(&e1), 0);
	assert_int_equal(sd_event_new(&e2), 0);
	assert_int_equal(timer_start(e1, &a.t, 1, on_timer, &a), 0);
	assert_int_equal(timer_start(e2, &b.t, 1, on_timer, &b), 0);
	assert_int_equal(sd_event_run(e1, 1000000), 1);
	assert_int_equal(a.runs, 1);
	assert_int_equal(b.runs, 0);
	assert_int_equal(sd_event_run(e2, 1000000), 1);
	assert_int_equal(b.runs, 1);
	timer_stop(&a.t);
	timer_stop(&b.t);
	sd_event_unref(e1);
	sd_event_unref(e2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timers_in_one_turn),
		cmocka_unit_test(test_timer_callbacks),
		cmocka_unit_test(test_timer_heap),
		cmocka_unit_test(test_laters),
		cmocka_unit_test(test_two_loops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
