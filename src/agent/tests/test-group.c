/* Unit tests of the group runtime (group.c, job.c): how
 * it evaluates, starts driver calls, completes them, reconciles an action
 * from before a restart and hands a call in flight over on a reload.
 *
 * The driver is a fake built into this program: driver_load() is wrapped
 * (-Wl,--wrap) to hand it out under the name "fake". It counts every call
 * it receives, per handle, and the test decides when a scale call returns
 * and whether it fails. The clock is virtual: clock_now(), clock_mono_ms()
 * and clock_wall_ms() are wrapped too, so that stabilization windows and
 * deadlines of many minutes pass in a step. An evaluation interval is a
 * step of the clock followed by a restart of the group's timers, which
 * evaluate at once (group_rt_start): the test, not the wall clock, says
 * when the group evaluates. The loop runs until a condition holds, within
 * a deadline of real time.
 *
 * The cases:
 *   - a scale-out is made once, held while it runs, and recorded when done;
 *   - a scale-in waits out its stabilization window, then is made once;
 *   - a failing scale-out (the first time part-way) is retried at the next
 *     evaluation, never sooner and never in the other direction;
 *   - a driver call that outlives the in-flight deadline is waited for:
 *     no second call, and its result is recorded when it ends;
 *   - a partial observation holds a scale-in, which happens once the
 *     whole pool is seen again;
 *   - an action from before a restart is reconciled with what is observed:
 *     done (no call), or pending until its deadline and then decided again
 *     (one call);
 *   - a reload while a scale-out runs adopts the call: through a new handle
 *     (changed driver options) the group opens it only once the call has
 *     ended and closes the old one after; with the same options it takes
 *     the handle over. Either way: one set_capacity, never two calls at
 *     once;
 *   - many groups on one driver: never more calls at once than the
 *     driver's limit (agent.driver_concurrency), every group served;
 *   - a call still queued when its group goes is never made;
 *   - the scale-outs of groups whose observations end together are synced
 *     to their state files together (one sync of the directory), and
 *     every one is on disk before any of their calls starts; one call a
 *     group. */
#include <errno.h>
#include <pthread.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <cmocka.h>
#include <systemd/sd-event.h>

#include "base/iso8601.h"
#include "config/config.h"
#include "agent/driver.h"
#include "agent/group-private.h"
#include "base/file.h"
#include "agent/state-writer.h"
#include "log/log.h"
#include "state/state.h"

/* ------------------------------------------------------------ the clock */

/* Far from zero on both clocks, as on a machine that has run a while. */
#define T0_MONO_MS ((int64_t)5000000)
#define T0_WALL_MS ((int64_t)1780000000000)

static int64_t vclock_ms; /* virtual time elapsed since T0 */
static int64_t wall_step_ms; /* how far the wall clock was stepped on its own */

struct clock_now __wrap_clock_now(void);
int64_t __wrap_clock_mono_ms(void);
int64_t __wrap_clock_wall_ms(void);

struct clock_now __wrap_clock_now(void)
{
	return (struct clock_now){.wall_ms = T0_WALL_MS + vclock_ms + wall_step_ms, .mono_ms = T0_MONO_MS + vclock_ms};
}

int64_t __wrap_clock_mono_ms(void)
{
	return T0_MONO_MS + vclock_ms;
}

int64_t __wrap_clock_wall_ms(void)
{
	return T0_WALL_MS + vclock_ms + wall_step_ms;
}

/* Real time, for the tests' own deadlines. */
static int64_t real_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------- the fake driver */

#define FAKE_MAX_HANDLES 8

struct autoscaled_driver_instance {
	int id; /* 1 for the first handle opened in a test, 2 for the next ... */
};

/* Everything the fake knows, shared by the test's thread and the worker
 * threads the calls run on. */
static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fake_cond = PTHREAD_COND_INITIALIZER;
static struct fake {
	/* The pool. */
	int size;
	int load;          /* total CPU in percent: each member runs at load / size */
	bool stable;
	bool partial;
	/* What the next calls do. */
	int fail_scale;    /* the next N scale calls fail with -EIO ... */
	int create_on_fail; /* ... after creating this many instances (once) */
	bool hold_scale;   /* scale calls wait for fake_release() */
	int releases;
	bool waiting;      /* a scale call is waiting for its release */
	/* What the calls were. */
	int n_open, n_close, n_check, n_observe, n_sampled, n_set_capacity, n_remove;
	int observe_on[FAKE_MAX_HANDLES + 1]; /* observations per handle id */
	int scale_on[FAKE_MAX_HANDLES + 1];   /* scale calls per handle id */
	int closed_at_open[FAKE_MAX_HANDLES + 1]; /* n_open when handle i was closed */
	int last_capacity;
	int last_remove;
	size_t last_remove_ids;
	int busy, max_busy; /* calls running at once */
	bool hold_observe;  /* observations wait for an observe release */
	int observe_releases;
	int observe_held;   /* observations waiting now */
	bool reverse;       /* observations list the members last first */
	/* Groups g0 ... g<intents - 1> (of intents_conf) whose state files
	 * must hold a scale-out in flight when a scale call starts, and how
	 * many files did not at one. */
	int intents;
	int missing_intents;
} fake;
static const struct config *intents_conf;

static void check_intents(void);

/* Between cases, when no call runs. */
static void fake_reset(void)
{
	pthread_mutex_lock(&fake_lock);
	fake = (struct fake){.stable = true};
	pthread_mutex_unlock(&fake_lock);
}

static void call_begin(void)
{
	if (++fake.busy > fake.max_busy)
		fake.max_busy = fake.busy;
}

static int fake_open(const struct autoscaled_host *host, const struct autoscaled_option *options, size_t n_options,
		     struct autoscaled_driver_instance **ret)
{
	struct autoscaled_driver_instance *h = calloc(1, sizeof(*h));

	(void)host;
	(void)options;
	(void)n_options;
	if (!h)
		return -ENOMEM;
	pthread_mutex_lock(&fake_lock);
	call_begin();
	h->id = ++fake.n_open;
	fake.busy--;
	pthread_mutex_unlock(&fake_lock);
	*ret = h;
	return 0;
}

static void fake_close(struct autoscaled_driver_instance *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&fake_lock);
	fake.n_close++;
	if (h->id <= FAKE_MAX_HANDLES)
		fake.closed_at_open[h->id] = fake.n_open;
	pthread_mutex_unlock(&fake_lock);
	free(h);
}

static int fake_check(const struct autoscaled_host *host, const struct autoscaled_option *options, size_t n_options)
{
	(void)host;
	(void)options;
	(void)n_options;
	pthread_mutex_lock(&fake_lock);
	fake.n_check++;
	pthread_mutex_unlock(&fake_lock);
	return 0;
}

static void member_id(char *buf, size_t len, int i)
{
	snprintf(buf, len, "vm-%d", i + 1);
}

/* Member i's place: none for every third, else one of two racks in runs. */
static const char *fake_location(int i)
{
	if (i % 3 == 0)
		return NULL;
	return i % 4 < 2 ? "qemu+ssh://rack-2.example/system" : "qemu+ssh://rack-3.example/system";
}

#define FAKE_CPU_SOURCE "fake_cpu"

static int fake_observe(struct autoscaled_driver_instance *h, autoscaled_instance_fn fn, autoscaled_sample_fn sample,
			void *ctx, struct autoscaled_observation *ret)
{
	int r = 0;

	pthread_mutex_lock(&fake_lock);
	call_begin();
	if (fake.hold_observe) {
		fake.observe_held++;
		pthread_cond_broadcast(&fake_cond);
		while (fake.observe_releases == 0)
			pthread_cond_wait(&fake_cond, &fake_lock);
		fake.observe_releases--;
		fake.observe_held--;
	}
	fake.n_observe++;
	fake.observe_on[h->id <= FAKE_MAX_HANDLES ? h->id : 0]++;
	if (sample)
		fake.n_sampled++;
	for (int k = 0; fn && r >= 0 && k < fake.size; k++) {
		int i = fake.reverse ? fake.size - 1 - k : k;
		char id[16];

		member_id(id, sizeof(id), i);
		/* Running for an hour: past any initialization period. */
		r = fn(ctx, &(struct autoscaled_instance){
				    .id = id,
				    .state = AUTOSCALED_INSTANCE_RUNNING,
				    .created_ms = T0_WALL_MS - 3600 * 1000 + i,
				    .running_since_ms = T0_WALL_MS - 3600 * 1000 + i,
				    .ready = true,
				    .location = fake_location(i),
			    });
		/* Each member's CPU after it, as the driver's source. */
		if (r >= 0 && sample)
			r = sample(ctx, FAKE_CPU_SOURCE, id, (double)fake.load / fake.size);
	}
	*ret = (struct autoscaled_observation){.target_size = fake.size, .stable = fake.stable, .partial = fake.partial};
	fake.busy--;
	pthread_mutex_unlock(&fake_lock);
	return r;
}

/* A scale call: waits for its release when the test holds scale calls,
 * then fails or changes the pool. Called with the lock held. */
static int fake_scale(struct autoscaled_driver_instance *h, int delta, autoscaled_instance_fn fn, void *ctx)
{
	call_begin();
	fake.scale_on[h->id <= FAKE_MAX_HANDLES ? h->id : 0]++;
	if (fake.hold_scale) {
		fake.waiting = true;
		pthread_cond_broadcast(&fake_cond);
		while (fake.releases == 0)
			pthread_cond_wait(&fake_cond, &fake_lock);
		fake.releases--;
		fake.waiting = false;
	}
	fake.busy--;
	if (fake.fail_scale > 0) {
		int n = delta > 0 ? fake.create_on_fail : 0;

		fake.fail_scale--;
		fake.create_on_fail = 0;
		for (int i = 0; i < n; i++) {
			char id[16];

			member_id(id, sizeof(id), fake.size++);
			if (fn)
				fn(ctx, &(struct autoscaled_instance){.id = id, .state = AUTOSCALED_INSTANCE_PROVISIONING});
		}
		return -EIO;
	}
	for (int i = 0; i < (delta < 0 ? -delta : delta); i++) {
		char id[16];

		member_id(id, sizeof(id), delta > 0 ? fake.size : fake.size - 1);
		fake.size += delta > 0 ? 1 : -1;
		if (fn)
			fn(ctx, &(struct autoscaled_instance){.id = id, .state = AUTOSCALED_INSTANCE_RUNNING});
	}
	return 0;
}

static int fake_set_capacity(struct autoscaled_driver_instance *h, int count, autoscaled_instance_fn fn, void *ctx)
{
	int r;

	pthread_mutex_lock(&fake_lock);
	fake.n_set_capacity++;
	fake.last_capacity = count;
	check_intents();
	/* The ABI's rule: set_capacity only ever grows. */
	if (count < fake.size) {
		pthread_mutex_unlock(&fake_lock);
		return -ERANGE;
	}
	r = fake_scale(h, count - fake.size, fn, ctx);
	pthread_mutex_unlock(&fake_lock);
	return r;
}

static int fake_remove_instances(struct autoscaled_driver_instance *h, int count, const char *const *ids, size_t n_ids,
				 autoscaled_instance_fn fn, void *ctx)
{
	int r;

	(void)ids;
	pthread_mutex_lock(&fake_lock);
	fake.n_remove++;
	fake.last_remove = count;
	fake.last_remove_ids = n_ids;
	r = fake_scale(h, -(n_ids ? (int)n_ids : count), fn, ctx);
	pthread_mutex_unlock(&fake_lock);
	return r;
}

static const struct autoscaled_source fake_sources[] = {
	{ FAKE_CPU_SOURCE, "each member's CPU, load / size" },
};

static const struct autoscaled_driver fake_ops = {
	.abi_version = AUTOSCALED_DRIVER_ABI_VERSION,
	.struct_size = sizeof(struct autoscaled_driver),
	.name = "fake",
	.description = "the group runtime's unit test driver",
	.open = fake_open,
	.close = fake_close,
	.observe = fake_observe,
	.set_capacity = fake_set_capacity,
	.remove_instances = fake_remove_instances,
	.sources = fake_sources,
	.n_sources = 1,
	.check = fake_check,
};

int __wrap_driver_load(const char *name, const char *configured, const struct driver **ret, char *err,
		       size_t errlen);
int __real_driver_load(const char *name, const char *configured, const struct driver **ret, char *err,
		       size_t errlen);

int __wrap_driver_load(const char *name, const char *configured, const struct driver **ret, char *err,
		       size_t errlen)
{
	static const struct driver fake_driver = {.name = "fake", .path = "(built in)", .ops = &fake_ops};

	if (strcmp(name, "fake") != 0)
		return __real_driver_load(name, configured, ret, err, errlen);
	*ret = &fake_driver;
	return 0;
}

/* Reads a counter of the fake under its lock. */
#define FAKE(field)                                     \
	({                                              \
		pthread_mutex_lock(&fake_lock);         \
		__typeof__(fake.field) v_ = fake.field; \
		pthread_mutex_unlock(&fake_lock);       \
		v_;                                     \
	})

static void fake_release(void)
{
	pthread_mutex_lock(&fake_lock);
	fake.releases++;
	pthread_cond_broadcast(&fake_cond);
	pthread_mutex_unlock(&fake_lock);
}

/* Lets one held observation end (fake.hold_observe). */
static void fake_release_observe(void)
{
	pthread_mutex_lock(&fake_lock);
	fake.observe_releases++;
	pthread_cond_broadcast(&fake_cond);
	pthread_mutex_unlock(&fake_lock);
}

static void fake_set(int *field, int v)
{
	pthread_mutex_lock(&fake_lock);
	*field = v;
	pthread_mutex_unlock(&fake_lock);
}

static void fake_set_bool(bool *field, bool v)
{
	pthread_mutex_lock(&fake_lock);
	*field = v;
	pthread_mutex_unlock(&fake_lock);
}

/* ------------------------------------------------------------ the loop */

static sd_event *event;
static char dir[64];

/* Counts the files of groups g0 ... g<fake.intents - 1> that do not hold
 * a scale-out in flight (with the lock held, on the call's thread). */
static void check_intents(void)
{
	for (int i = 0; i < fake.intents; i++) {
		char path[PATH_MAX], why[256];
		struct group_state s;

		if (state_path(dir, intents_conf->groups[i].name, path, sizeof(path)) < 0 ||
		    state_read_file(path, &intents_conf->groups[i], __wrap_clock_now(), &s, why, sizeof(why)) < 0 ||
		    s.in_flight.direction != DIR_OUT)
			fake.missing_intents++;
	}
}

/* Runs the loop until cond(arg) holds; false after 10 s of real time. */
static bool run_until(bool (*cond)(void *), void *arg)
{
	int64_t end = real_mono_ms() + 10000;

	while (!cond(arg)) {
		if (real_mono_ms() > end)
			return false;
		sd_event_run(event, 20 * 1000);
	}
	return true;
}

static bool scale_waiting(void *arg)
{
	(void)arg;
	return FAKE(waiting);
}

static bool idle(void *arg)
{
	const struct group_rt *g = arg;

	return !g->job;
}

/* The group's last decision (group_rt_last()), made whole in a buffer of
 * the test's: read it before the next call. */
static const struct decision *last_of(const struct group_rt *g)
{
	static struct decision buf;

	return group_rt_last(g, &buf);
}

/* The group decided at the virtual clock's present time and started no
 * observation after it. */
static bool evaluated_now(void *arg)
{
	const struct group_rt *g = arg;
	const struct decision *d = last_of(g);

	return d && d->time_ms == __wrap_clock_wall_ms() && (!g->job || g->job->kind != JOB_OBSERVE);
}

/* One evaluation interval: the clock moves on by step_ms (> 0) and the
 * group evaluates: on a fresh observation, or on the last one while a
 * driver call runs. Returns its decision. */
static const struct decision *tick(struct group_rt *g, int64_t step_ms)
{
	vclock_ms += step_ms;
	group_rt_stop(g);
	group_rt_start(g);
	assert_true(run_until(evaluated_now, g));
	return last_of(g);
}

/* Writes and loads a configuration with one group "web" on the fake
 * driver: min 1, max 10, one CPU signal read through the driver with a
 * target of 50 %, averaged over `window`, scale-in stabilization of 5
 * minutes and no rate limits. `generation` is a driver option. */
static struct config *load(int generation, double target, const char *window)
{
	char path[128];
	struct config_errors errs = {0};
	struct config *c = NULL;
	FILE *f;
	int r;

	snprintf(path, sizeof(path), "%s/autoscaled.conf", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f,
		"agent = { interval = \"15s\"; state_directory = \"%s\"; };\n"
		"groups = ( {\n"
		"  name = \"web\"; driver = \"fake\"; min = 1; max = 10;\n"
		"  driver_options = { generation = %d; };\n"
		"  signals = ( { name = \"cpu\"; source = \"fake_cpu\"; type = \"utilization\"; target = %g;\n"
		"    window = \"%s\"; poll_interval = \"15s\"; staleness = \"1h\"; } );\n"
		"  behavior = { initialization_period = \"0s\";\n"
		"    scale_out = { stabilization = 0; policies = ( ); };\n"
		"    scale_in = { stabilization = \"300s\"; policies = ( ); }; };\n"
		"} );\n",
		dir, generation, target, window);
	fclose(f);
	r = config_load(path, &c, &errs);
	for (size_t i = 0; i < errs.n; i++)
		fprintf(stderr, "# %s\n", errs.v[i]);
	config_errors_clear(&errs);
	assert_int_equal(r, 0);
	return c;
}

struct fixture {
	struct config *c;
	struct group_ctx ctx;
	struct group_rt *g;
};

static int setup(void **state)
{
	static struct fixture fx;

	snprintf(dir, sizeof(dir), "/tmp/test-group.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	vclock_ms = 0;
	wall_step_ms = 0;
	fake_reset();
	fx = (struct fixture){0};
	*state = &fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	char cmd[128];

	if (fx->g) {
		group_rt_stop(fx->g);
		/* A call still running would be dropped with its group; every
		 * case ends with none. */
		assert_null(fx->g->job);
		group_rt_free(fx->g);
	}
	config_free(fx->c);
	assert_int_equal(FAKE(max_busy), 1);
	/* As the daemon does when it stops: the evaluations' saves land
	 * before the directory goes. */
	state_writer_flush();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Builds and starts the group of `load(1, 50, window)` on a pool of
 * `size` members with `cpu` (total percent) load, and waits for its first
 * evaluation. */
static const struct decision *start_window(struct fixture *fx, int size, int cpu, const char *window)
{
	pthread_mutex_lock(&fake_lock);
	fake.size = size;
	fake.load = cpu;
	pthread_mutex_unlock(&fake_lock);
	fx->c = load(1, 50, window);
	fx->ctx = (struct group_ctx){.event = event, .agent_conf = &fx->c->agent};
	assert_int_equal(group_rt_new(&fx->ctx, &fx->c->groups[0], NULL, &fx->g), 0);
	group_rt_start(fx->g);
	assert_true(run_until(evaluated_now, fx->g));
	return last_of(fx->g);
}

/* Samples older than an evaluation interval are out of the window. */
static const struct decision *start(struct fixture *fx, int size, int cpu)
{
	return start_window(fx, size, cpu, "15s");
}

/* ---------------------------------------------------------------- cases */

#define N_BOUNDED 12

static bool observes_held(void *arg)
{
	return FAKE(observe_held) == *(const int *)arg;
}

static bool observed(void *arg)
{
	return FAKE(n_observe) == *(const int *)arg;
}

static bool all_asked(void *arg)
{
	struct group_rt *const *gs = arg;

	for (int i = 0; gs[i]; i++)
		if (!gs[i]->job)
			return false;
	return true;
}

/* Loads `n` groups g0, g1 ... on the fake driver, limited to `limit`
 * calls at once, each on a pool of 2 members at 50 % (no action). */
static void load_many(struct fixture *fx, int n, int limit)
{
	struct config_errors errs = {0};
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/autoscaled.conf", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f,
		"agent = { interval = \"15s\"; state_directory = \"%s\"; driver_concurrency = { fake = %d; }; };\n"
		"groups = (\n",
		dir, limit);
	for (int i = 0; i < n; i++)
		fprintf(f,
			"  { name = \"g%d\"; driver = \"fake\"; min = 1; max = 10;\n"
			"    signals = ( { name = \"cpu\"; source = \"fake_cpu\"; type = \"utilization\"; target = 50;"
			" poll_interval = \"15s\"; staleness = \"1h\"; } ); }%s\n",
			i, i < n - 1 ? "," : "");
	fprintf(f, ");\n");
	fclose(f);
	assert_int_equal(config_load(path, &fx->c, &errs), 0);
	fx->ctx = (struct group_ctx){.event = event, .agent_conf = &fx->c->agent};
	pthread_mutex_lock(&fake_lock);
	fake.size = 2;
	fake.load = 100;
	pthread_mutex_unlock(&fake_lock);
}

/* Builds and starts groups g0 ... g<n - 1> of load_many() into GS. */
static void start_many(struct fixture *fx, struct group_rt **gs, int n)
{
	for (int i = 0; i < n; i++)
		assert_int_equal(group_rt_new(&fx->ctx, &fx->c->groups[i], NULL, &gs[i]), 0);
	for (int i = 0; i < n; i++)
		group_rt_start(gs[i]);
}

static bool pool_threads_ended(void *arg)
{
	struct workers_stats st;

	workers_stats(arg, &st);
	return st.threads == 0;
}

/* Twelve groups on one driver that agent.driver_concurrency limits to 3
 * calls at once: three observations run, the nine others wait in the
 * driver's queue, and as each call ends the next group's starts; never
 * more than three at once, and every group gets its turn. */
static void test_driver_calls_bounded(void **state)
{
	struct fixture *fx = *state;
	struct group_rt *gs[N_BOUNDED + 1] = {0};
	struct workers_stats st;
	struct workers *pool;
	int want;

	load_many(fx, N_BOUNDED, 3);
	assert_int_equal(job_driver_limit(&fx->c->agent, "fake"), 3);
	fake_set_bool(&fake.hold_observe, true);
	start_many(fx, gs, N_BOUNDED);

	want = 3;
	assert_true(run_until(observes_held, &want));
	/* Every group asks (its job is queued), three calls run. */
	assert_true(run_until(all_asked, gs));
	pool = gs[0]->job->pool;
	workers_stats(pool, &st);
	assert_int_equal(st.running, 3);
	assert_int_equal(st.queued, N_BOUNDED - 3);
	assert_true(st.threads <= 3);

	/* One call ends at a time: the next queued group's starts. */
	for (int k = 1; k <= N_BOUNDED; k++) {
		fake_release_observe();
		assert_true(run_until(observed, &k));
		want = N_BOUNDED - k < 3 ? N_BOUNDED - k : 3;
		assert_true(run_until(observes_held, &want));
	}
	for (int i = 0; i < N_BOUNDED; i++)
		assert_true(run_until(idle, gs[i]));
	/* The pool's threads end once idle (JOB_WORKER_IDLE_MS: two seconds,
	 * so that the caches of freed blocks glibc keeps in each thread go
	 * back to the heap between cycles), well within run_until()'s 10 s. */
	assert_true(JOB_WORKER_IDLE_MS <= 5000);
	assert_true(run_until(pool_threads_ended, pool));
	assert_int_equal(FAKE(max_busy), 3);
	assert_int_equal(FAKE(n_observe), N_BOUNDED);
	for (int i = 0; i < N_BOUNDED; i++) {
		group_rt_stop(gs[i]);
		group_rt_free(gs[i]);
	}
	/* The one-call-per-group rule, which teardown checks, is not what
	 * this case is about. */
	fake_set(&fake.max_busy, 1);
}

#define N_TOGETHER 8

/* No call of the pool runs or waits (each has passed its job to the loop). */
static bool calls_ended(void *arg)
{
	struct workers_stats st;

	workers_stats(arg, &st);
	return st.running == 0 && st.queued == 0;
}

static bool set_capacity_calls(void *arg)
{
	return FAKE(n_set_capacity) == *(const int *)arg;
}

/* Waits, without running the loop, until cond(arg) holds; false after
 * 10 s of real time. */
static bool wait_real(bool (*cond)(void *), void *arg)
{
	int64_t end = real_mono_ms() + 10000;

	while (!cond(arg)) {
		struct timespec ts = {0, 1000 * 1000};

		if (real_mono_ms() > end)
			return false;
		nanosleep(&ts, NULL);
	}
	return true;
}

/* Eight groups whose observations end before the loop learns of any, each
 * of two members at 95 % (four wanted): the loop evaluates the eight in one
 * turn, and their scale-outs are synced to their state files together,
 * with one sync of the directory, before the first call starts (every
 * call finds all eight files holding their scale-out in flight). One call
 * a group. */
static void test_actions_synced_together(void **state)
{
	struct fixture *fx = *state;
	struct group_rt *gs[N_TOGETHER + 1] = {0};
	struct workers *pool;
	uint64_t syncs;
	int want = N_TOGETHER;

	load_many(fx, N_TOGETHER, N_TOGETHER);
	fake_set(&fake.load, 190);
	fake_set_bool(&fake.hold_observe, true);
	start_many(fx, gs, N_TOGETHER);
	assert_true(run_until(observes_held, &want));
	assert_true(run_until(all_asked, gs));
	pool = gs[0]->job->pool;
	intents_conf = fx->c;
	fake_set(&fake.intents, N_TOGETHER);
	state_writer_flush();
	syncs = state_writer_dir_syncs();
	pthread_mutex_lock(&fake_lock);
	fake.observe_releases = N_TOGETHER;
	pthread_cond_broadcast(&fake_cond);
	pthread_mutex_unlock(&fake_lock);
	assert_true(wait_real(calls_ended, pool));
	assert_int_equal(FAKE(n_set_capacity), 0);

	assert_true(run_until(set_capacity_calls, &want));
	for (int i = 0; i < N_TOGETHER; i++) {
		assert_true(run_until(idle, gs[i]));
		assert_int_equal(group_rt_state(gs[i])->engine.last_action_dir, DIR_OUT);
	}
	assert_int_equal(state_writer_dir_syncs() - syncs, 1);
	assert_int_equal(FAKE(missing_intents), 0);
	assert_int_equal(FAKE(n_set_capacity), N_TOGETHER);
	for (int i = 1; i <= N_TOGETHER; i++)
		assert_int_equal(FAKE(scale_on[i]), 1);
	for (int i = 0; i < N_TOGETHER; i++) {
		group_rt_stop(gs[i]);
		group_rt_free(gs[i]);
	}
	fake_set(&fake.intents, 0);
	/* As in test_driver_calls_bounded. */
	fake_set(&fake.max_busy, 1);
}

/* A group that goes away (a reload removes it, or the daemon stops) while
 * its call waits in the driver's queue: the call is never made, and the
 * group's handle is closed at once, as for a group with no call; a group
 * of that name added again has no call to wait for. */
static void test_queued_call_cancelled(void **state)
{
	struct fixture *fx = *state;
	struct group_rt *gs[3] = {0}, *queued = NULL, *running = NULL;
	int want = 1, closed, id;

	load_many(fx, 2, 1);
	fake_set_bool(&fake.hold_observe, true);
	start_many(fx, gs, 2);
	assert_true(run_until(observes_held, &want));
	assert_true(run_until(all_asked, gs));
	for (int i = 0; i < 2; i++) {
		if (gs[i]->job->task.queued)
			queued = gs[i];
		else
			running = gs[i];
	}
	assert_non_null(queued);
	assert_non_null(running);
	id = queued->handle->id;
	closed = FAKE(n_close);
	group_rt_stop(queued);
	group_rt_free(queued);
	assert_int_equal(FAKE(n_close), closed + 1);
	assert_false(job_orphan_running(queued == gs[0] ? "g0" : "g1"));

	fake_release_observe();
	assert_true(run_until(idle, running));
	assert_int_equal(FAKE(n_observe), 1);
	assert_int_equal(FAKE(observe_on[id]), 0);
	group_rt_stop(running);
	group_rt_free(running);
}

#define N_ADMIT 40
#define ADMIT_ROOM 16 /* job.c's JOB_ADMIT_MIN: the room of a driver limited to one call */

struct admit_want {
	unsigned admitted;
	size_t waiting;
};

static bool admit_is(void *arg)
{
	const struct admit_want *want = arg;
	unsigned admitted;
	size_t waiting;

	job_admit_stats("fake", &admitted, &waiting);
	return admitted == want->admitted && waiting == want->waiting;
}

static bool all_evaluated(void *arg)
{
	struct group_rt *const *gs = arg;

	for (int i = 0; i < N_ADMIT; i++)
		if (gs[i] && (gs[i]->job || gs[i]->admit_pprev || !last_of(gs[i])))
			return false;
	return true;
}

/* Forty groups tick together on a driver limited to one call at once:
 * sixteen observations are let into its pool (one runs, fifteen are
 * queued) and the other groups wait their turn without a job, in the
 * order they asked. A waiting group that goes away leaves the line; a
 * group whose queued call is cancelled gives its room to the first in
 * line. As each call ends the next group is let in, never more than
 * sixteen at once, and every group observes once and decides. */
static void test_observations_admitted(void **state)
{
	struct fixture *fx = *state;
	struct group_rt *gs[N_ADMIT] = {0}, *first = NULL, *second, *third, *queued = NULL;
	int want = 1, n_left = N_ADMIT - 2, n_jobs = 0;
	unsigned admitted;
	size_t waiting;

	load_many(fx, N_ADMIT, 1);
	fake_set_bool(&fake.hold_observe, true);
	start_many(fx, gs, N_ADMIT);
	assert_true(run_until(observes_held, &want));
	assert_true(run_until(admit_is, &(struct admit_want){ADMIT_ROOM, N_ADMIT - ADMIT_ROOM}));
	for (int i = 0; i < N_ADMIT; i++) {
		bool linked = false;

		/* Each group has a call or waits, never both. */
		assert_true(!gs[i]->job != !gs[i]->admit_pprev);
		n_jobs += gs[i]->job != NULL;
		if (gs[i]->job && gs[i]->job->task.queued)
			queued = gs[i];
		/* The first in line is the one no other group points to. */
		for (int k = 0; gs[i]->admit_pprev && k < N_ADMIT; k++)
			linked |= gs[i]->admit_pprev == &gs[k]->admit_next;
		if (gs[i]->admit_pprev && !linked) {
			assert_null(first);
			first = gs[i];
		}
	}
	assert_int_equal(n_jobs, ADMIT_ROOM);
	assert_non_null(first);
	assert_non_null(queued);
	second = first->admit_next;
	third = second->admit_next;

	/* The third in line leaves; a queued call is cancelled with its
	 * group, and the first in line takes the room. */
	for (int i = 0; i < N_ADMIT; i++)
		if (gs[i] == third || gs[i] == queued) {
			group_rt_stop(gs[i]);
			group_rt_free(gs[i]);
			gs[i] = NULL;
		}
	assert_true(run_until(admit_is, &(struct admit_want){ADMIT_ROOM, N_ADMIT - ADMIT_ROOM - 2}));
	assert_non_null(first->job);
	assert_null(first->admit_pprev);
	assert_null(second->job);
	assert_non_null(second->admit_pprev);

	for (int k = 1; k <= n_left; k++) {
		fake_release_observe();
		assert_true(run_until(observed, &k));
		job_admit_stats("fake", &admitted, &waiting);
		assert_true(admitted <= ADMIT_ROOM);
	}
	assert_true(run_until(all_evaluated, gs));
	assert_int_equal(FAKE(n_observe), n_left);
	job_admit_stats("fake", &admitted, &waiting);
	assert_int_equal(admitted, 0);
	assert_int_equal(waiting, 0);
	for (int i = 0; i < N_ADMIT; i++)
		if (gs[i]) {
			group_rt_stop(gs[i]);
			group_rt_free(gs[i]);
		}
}

/* Each group's state rests packed and one at a time is unpacked in full
 * (group.c): what is set on one group stays with it, whichever group was
 * read or changed in between, whichever is in full when a group goes
 * away, and a reload's new runtime takes the old one's state, not the
 * fresh one it started with. */
static void test_states_kept_apart(void **state)
{
	struct fixture *fx = *state;
	struct group_rt *gs[3] = {0}, *again = NULL;

	load_many(fx, 3, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(group_rt_new(&fx->ctx, &fx->c->groups[i], NULL, &gs[i]), 0);
	for (int i = 0; i < 3; i++) {
		struct group_state *st = group_rt_state(gs[i]);

		st->pin.active = true;
		st->pin.count = 3 + i;
		for (int k = 0; k <= i; k++)
			engine_record_action(&st->engine, 1000 * (k + 1), 2, 3 + k);
		st->dry_run = i == 1 ? STATE_DRY_RUN_ON : STATE_DRY_RUN_OFF;
	}
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 2; i >= 0; i--) {
			const struct group_state *st = group_rt_state(gs[i]);

			assert_true(st->pin.active);
			assert_int_equal(st->pin.count, 3 + i);
			assert_int_equal(st->engine.n_events, i + 1);
			assert_int_equal(st->engine.events[i].delta, 1 + i);
		}
		/* Read from the packed state for every group but the one in
		 * full (gs[0], read last above). */
		for (int i = 0; i < 3; i++)
			assert_int_equal(group_rt_dry_run(gs[i]), i == 1);
	}

	/* The group in full goes away; the others keep theirs. */
	assert_int_equal(group_rt_state(gs[1])->pin.count, 4);
	group_rt_free(gs[1]);
	assert_int_equal(group_rt_state(gs[0])->pin.count, 3);
	assert_int_equal(group_rt_state(gs[2])->pin.count, 5);

	/* A reload's runtime for gs[2], made (its fresh state in full) after
	 * gs[2]'s was packed, takes gs[2]'s. */
	assert_int_equal(group_rt_new(&fx->ctx, &fx->c->groups[2], gs[2], &again), 0);
	assert_false(group_rt_state(again)->pin.active);
	group_rt_adopt(again, gs[2]);
	group_rt_free(gs[2]);
	assert_int_equal(group_rt_state(gs[0])->pin.count, 3);
	assert_int_equal(group_rt_state(again)->pin.count, 5);
	assert_int_equal(group_rt_state(again)->engine.n_events, 3);
	group_rt_free(again);
	group_rt_free(gs[0]);
}

/* An observation's members, kept in one block with their names (job.c):
 * every id and location as the driver gave it, past the sizes at which
 * the arrays grow; a place named as the member before with a place named
 * it is kept once. */
static void test_members_kept_with_names(void **state)
{
	struct fixture *fx = *state;
	const char *prev = NULL;
	char id[16];

	start(fx, 40, 40 * 50);
	assert_int_equal(fx->g->n_instances, 40);
	for (int i = 0; i < 40; i++) {
		const struct instance_obs *in = &fx->g->instances[i];

		member_id(id, sizeof(id), i);
		assert_string_equal(in->id, id);
		if (fake_location(i)) {
			assert_string_equal(in->location, fake_location(i));
			if (prev && strcmp(prev, in->location) == 0)
				assert_ptr_equal(in->location, prev);
			else if (prev)
				assert_ptr_not_equal(in->location, prev);
			prev = in->location;
		} else {
			assert_null(in->location);
		}
		assert_int_equal(in->state, INSTANCE_RUNNING);
		assert_int_equal(in->created_ms, T0_WALL_MS - 3600 * 1000 + i);
	}
	/* 40 is above the group's max: the scale-in it starts ends first. */
	assert_true(run_until(idle, fx->g));
}

/* Each member's start times are mapped to the monotonic clock once and
 * kept while the driver reports the same times, in whatever order it
 * lists the members (a step of the wall clock moves no member's age);
 * the previous list is sorted only when the order changed. */
static void test_members_start_times_kept(void **state)
{
	struct fixture *fx = *state;
	int64_t created[8], running[8];
	char id[16];

	start(fx, 8, 8 * 50);
	assert_int_equal(fx->g->n_instances, 8);
	for (int i = 0; i < 8; i++) {
		created[i] = fx->g->instances[i].created_mono_ms;
		running[i] = fx->g->instances[i].running_since_mono_ms;
		assert_int_equal(created[i], T0_MONO_MS - 3600 * 1000 + i);
	}
	/* The wall clock steps back an hour: the same members, the same
	 * mapping. */
	wall_step_ms = -3600 * 1000;
	for (int round = 0; round < 3; round++) {
		const struct decision *d;

		/* The third lists them last first. */
		fake_set_bool(&fake.reverse, round == 2);
		d = tick(fx->g, 15000);
		assert_int_equal(FAKE(n_observe), 2 + round);
		assert_int_equal(d->action, DIR_NONE);
		assert_int_equal(fx->g->n_instances, 8);
		for (int k = 0; k < 8; k++) {
			const struct instance_obs *in = &fx->g->instances[k];
			int i = round == 2 ? 7 - k : k;

			member_id(id, sizeof(id), i);
			assert_string_equal(in->id, id);
			if (fake_location(i)) {
				assert_string_equal(in->location, fake_location(i));
			} else {
				assert_null(in->location);
			}
			assert_int_equal(in->created_mono_ms, created[i]);
			assert_int_equal(in->running_since_mono_ms, running[i]);
		}
	}
}

/* The group's state file, once the writer has written what is queued. */
static const char *state_file_path(char *path, size_t len)
{
	state_writer_flush();
	assert_int_equal(state_path(dir, "web", path, len), 0);
	return path;
}

/* The action in flight as the group's state file has it, once the
 * writer has written what is queued. */
static enum scale_direction file_in_flight(struct fixture *fx)
{
	char path[PATH_MAX], why[256];
	struct group_state s;

	assert_int_equal(state_read_file(state_file_path(path, sizeof(path)), fx->g->gc, __wrap_clock_now(), &s, why, sizeof(why)), 0);
	return s.in_flight.direction;
}

static void test_scale_out_completes(void **state)
{
	struct fixture *fx = *state;
	const struct decision *d;

	fake.hold_scale = true;
	/* Two members at 95 % against a target of 50 %: four (3.8, away
	 * from a rounding edge). */
	d = start(fx, 2, 190);
	assert_int_equal(d->action, DIR_OUT);
	assert_int_equal(d->desired, 4);
	assert_true(run_until(scale_waiting, NULL));
	assert_int_equal(FAKE(n_set_capacity), 1);
	assert_int_equal(FAKE(last_capacity), 4);
	/* In the state file before the call returns. */
	assert_int_equal(group_rt_state(fx->g)->in_flight.direction, DIR_OUT);
	assert_int_equal(file_in_flight(fx), DIR_OUT);

	/* While it runs the group evaluates on its last observation and
	 * holds. */
	d = tick(fx->g, 5000);
	assert_int_equal(d->action, DIR_NONE);
	assert_int_equal(d->hold, HOLD_IN_FLIGHT);
	assert_int_equal(FAKE(n_set_capacity), 1);
	assert_int_equal(FAKE(n_observe), 1);

	fake_release();
	assert_true(run_until(idle, fx->g));
	assert_int_equal(group_rt_state(fx->g)->in_flight.direction, DIR_NONE);
	assert_int_equal(group_rt_state(fx->g)->engine.last_action_dir, DIR_OUT);
	assert_int_equal(fx->g->last_error.time_ms, 0);

	/* Four members at 47.5 %: within the tolerance, nothing to do. */
	d = tick(fx->g, 15000);
	assert_int_equal(d->current, 4);
	assert_int_equal(d->action, DIR_NONE);
	assert_int_equal(FAKE(size), 4);
	assert_int_equal(FAKE(n_set_capacity), 1);
	assert_int_equal(FAKE(n_remove), 0);
	assert_int_equal(FAKE(n_observe), 2);
	assert_int_equal(FAKE(n_sampled), 2);
	assert_int_equal(FAKE(n_open), 1);
	assert_int_equal(FAKE(n_close), 0);
}

/* The save when an action's call ends is not synced (SAVE_SETTLED in
 * group.c). A power loss that takes it leaves the file as the synced save
 * before the call had it, the action in flight: the restart settles that
 * action from what it observes, records it as the group's last action
 * (what the cooldowns and the flapping guard count from), and makes no
 * second call. */
static void test_lost_settled_save(void **state)
{
	struct fixture *fx = *state;
	char path[PATH_MAX], *before = NULL;
	struct group_rt *g = NULL;
	FILE *f;
	const struct decision *d;

	fake.hold_scale = true;
	d = start(fx, 2, 190);
	assert_int_equal(d->action, DIR_OUT);
	assert_true(run_until(scale_waiting, NULL));
	assert_int_equal(file_in_flight(fx), DIR_OUT);
	assert_int_equal(file_read_all(state_file_path(path, sizeof(path)), 0, 1 << 20, &before, NULL, NULL), 0);
	fake_release();
	assert_true(run_until(idle, fx->g));
	/* The settled save lands in the writer's turn. */
	assert_int_equal(file_in_flight(fx), DIR_NONE);
	assert_int_equal(FAKE(n_set_capacity), 1);
	assert_int_equal(FAKE(size), 4);

	/* The power goes: the file is as it was synced before the call. */
	group_rt_stop(fx->g);
	group_rt_free(fx->g);
	fx->g = NULL;
	f = fopen(state_file_path(path, sizeof(path)), "w");
	assert_non_null(f);
	assert_true(fputs(before, f) >= 0);
	assert_int_equal(fclose(f), 0);
	free(before);
	vclock_ms += 20000;
	assert_int_equal(group_rt_new(&fx->ctx, &fx->c->groups[0], NULL, &g), 0);
	fx->g = g;
	group_rt_start(g);
	assert_true(run_until(evaluated_now, g));
	assert_int_equal(g->origin, STATE_RESTORED);
	d = last_of(g);
	assert_int_equal(d->current, 4);
	assert_int_equal(d->action, DIR_NONE);
	assert_int_equal(group_rt_state(g)->in_flight.direction, DIR_NONE);
	assert_int_equal(group_rt_state(g)->engine.last_action_dir, DIR_OUT);
	assert_int_equal(file_in_flight(fx), DIR_NONE);
	assert_int_equal(FAKE(n_set_capacity), 1);
	assert_int_equal(FAKE(n_remove), 0);
}

static void test_scale_in_after_stabilization(void **state)
{
	struct fixture *fx = *state;
	const struct decision *d;

	/* Four members at 50 %: the recommendation is 4. */
	d = start(fx, 4, 200);
	assert_int_equal(d->action, DIR_NONE);
	/* The load drops to 10 % each: 1 is recommended, but 4 was within
	 * the last 5 minutes. */
	fake_set(&fake.load, 40);
	for (int i = 0; i < 4; i++) {
		d = tick(fx->g, 60000);
		assert_int_equal(d->action, DIR_NONE);
		assert_int_equal(d->hold, HOLD_STABILIZATION);
	}
	assert_int_equal(FAKE(n_remove), 0);
	/* 5 minutes and a bit after the last recommendation of 4. */
	d = tick(fx->g, 61000);
	assert_int_equal(d->action, DIR_IN);
	assert_int_equal(d->desired, 1);
	assert_true(run_until(idle, fx->g));
	assert_int_equal(FAKE(n_remove), 1);
	/* No pre-scale-in hook: the driver chooses the three victims. */
	assert_int_equal(FAKE(last_remove), 3);
	assert_int_equal(FAKE(last_remove_ids), 0);
	assert_int_equal(group_rt_state(fx->g)->in_flight.direction, DIR_NONE);

	d = tick(fx->g, 15000);
	assert_int_equal(d->current, 1);
	assert_int_equal(d->action, DIR_NONE);
	assert_int_equal(FAKE(n_remove), 1);
	assert_int_equal(FAKE(n_set_capacity), 0);
	assert_int_equal(FAKE(n_observe), 7);
}

/* The group's decision history (the admin API's): how many records, and
 * whether the newest is of decision D and shows a failed operation. */
static int history(const struct group_rt *g, const struct decision *d, bool *error)
{
	cJSON *o = group_admin_decisions(g), *a = cJSON_GetObjectItem(o, "decisions"), *newest;
	int n = cJSON_GetArraySize(a);
	char when[48];

	assert_non_null(a);
	assert_true(n > 0);
	newest = cJSON_GetArrayItem(a, n - 1);
	assert_int_equal(iso8601_format(d->time_ms, ISO8601_MILLIS, when, sizeof(when)), 0);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(newest, "time")), when);
	assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(newest, "desired")), d->desired);
	*error = !cJSON_IsNull(cJSON_GetObjectItem(newest, "last_error"));
	cJSON_Delete(o);
	return n;
}

/* A steady group's records are made when something reads them or when
 * the history keeps them, not at each evaluation: with room for many,
 * every decision is in the history; with room for one, the newest
 * (pending, not made) is the only one, and nothing was made for the
 * others. With --verbose the log wants each record, made at once. */
static void test_records_made_when_read(void **state)
{
	struct fixture *fx = *state;
	const struct decision *d;
	bool error;

	d = start(fx, 2, 100);
	/* The first decision is logged at INFO: made at once. */
	assert_false(fx->g->record_pending);
	assert_int_equal(fx->g->ring.n, 1);
	for (int i = 0; i < 3; i++) {
		d = tick(fx->g, 15000);
		assert_int_equal(d->action, DIR_NONE);
		assert_true(fx->g->record_pending);
		assert_int_equal(history(fx->g, d, &error), 2 + i);
		assert_false(error);
		/* Reading it made a copy, not the ring's record. */
		assert_int_equal(fx->g->ring.n, 1 + i);
	}

	/* A budget too small for two records. */
	fx->ctx.history_bytes = 64;
	for (int i = 0; i < 3; i++) {
		d = tick(fx->g, 15000);
		assert_true(fx->g->record_pending);
		assert_int_equal(fx->g->ring.n, 0);
		assert_int_equal(history(fx->g, d, &error), 1);
	}

	log_set_verbose(true);
	d = tick(fx->g, 15000);
	log_set_verbose(false);
	assert_false(fx->g->record_pending);
	assert_int_equal(fx->g->ring.n, 1);
	assert_int_equal(history(fx->g, d, &error), 1);
}

/* A record not made yet shows the failed operation of its own time: the
 * failure that comes after it is in the next records, not in it. */
static void test_pending_record_keeps_its_error(void **state)
{
	struct fixture *fx = *state;
	const struct decision *d, *held;
	struct decision copy;
	bool error;

	fake.hold_scale = true;
	fake.fail_scale = 1;
	d = start(fx, 2, 190);
	assert_int_equal(d->action, DIR_OUT);
	assert_true(run_until(scale_waiting, NULL));
	/* The first hold is a change (INFO); the second is not. */
	tick(fx->g, 5000);
	held = tick(fx->g, 5000);
	assert_int_equal(held->hold, HOLD_IN_FLIGHT);
	assert_true(fx->g->record_pending);
	copy = *held;
	fake_release();
	assert_true(run_until(idle, fx->g));
	assert_int_not_equal(fx->g->last_error.time_ms, 0);
	/* Made when the failure came, without it. */
	assert_false(fx->g->record_pending);
	assert_int_equal(history(fx->g, &copy, &error), 3);
	assert_false(error);

	d = tick(fx->g, 15000);
	assert_int_equal(d->action, DIR_OUT);
	assert_int_equal(history(fx->g, d, &error), 4);
	assert_true(error);
	assert_true(run_until(scale_waiting, NULL));
	fake_release();
	assert_true(run_until(idle, fx->g));
}

/* The state file of group "web" as written so far: its saved_ms and its
 * refresh_ms (0 when it has none). */
static void state_file(int64_t *saved_ms, int64_t *refresh_ms)
{
	char path[128], *text;
	cJSON *j;

	snprintf(path, sizeof(path), "%s/web.state", dir);
	state_writer_sync(path);
	assert_int_equal(state_read_text(path, &text), 0);
	j = cJSON_Parse(text);
	assert_non_null(j);
	*saved_ms = (int64_t)cJSON_GetObjectItem(j, "saved_ms")->valuedouble;
	*refresh_ms = cJSON_GetObjectItem(j, "refresh_ms") ? (int64_t)cJSON_GetObjectItem(j, "refresh_ms")->valuedouble
							   : 0;
	cJSON_Delete(j);
	free(text);
}

/* A steady group's evaluations only move its newest recommendations on:
 * their saves are written once a minute (STATE_REFRESH_MS), saying so; any
 * other change is written at once, and a clean stop writes the state as it
 * is, with nothing left unwritten. */
static void test_steady_saves_refresh(void **state)
{
	struct fixture *fx = *state;
	const struct decision *d;
	int64_t saved, refresh;

	d = start(fx, 2, 100);
	assert_int_equal(d->action, DIR_NONE);
	state_file(&saved, &refresh);
	assert_int_equal(saved, T0_WALL_MS);
	assert_int_equal(refresh, STATE_REFRESH_MS);
	for (int i = 0; i < 3; i++) {
		d = tick(fx->g, 15000);
		assert_int_equal(d->action, DIR_NONE);
		state_file(&saved, &refresh);
		assert_int_equal(saved, T0_WALL_MS);
	}
	d = tick(fx->g, 15000);
	state_file(&saved, &refresh);
	assert_int_equal(saved, T0_WALL_MS + 60000);

	/* The load falls: a new recommendation in the scale-in window. */
	fake_set(&fake.load, 40);
	d = tick(fx->g, 15000);
	assert_int_equal(d->hold, HOLD_STABILIZATION);
	state_file(&saved, &refresh);
	assert_int_equal(saved, T0_WALL_MS + 75000);
	d = tick(fx->g, 15000);
	state_file(&saved, &refresh);
	assert_int_equal(saved, T0_WALL_MS + 75000);

	group_rt_stop(fx->g);
	group_rt_save_final(fx->g);
	state_file(&saved, &refresh);
	assert_int_equal(saved, T0_WALL_MS + 90000);
	assert_int_equal(refresh, 0);
}

/* The inode of group "web"'s state file, once the writer is done. */
static ino_t state_inode(void)
{
	char path[128];
	struct stat sb;

	snprintf(path, sizeof(path), "%s/web.state", dir);
	state_writer_sync(path);
	assert_int_equal(stat(path, &sb), 0);
	return sb.st_ino;
}

/* A routine save of a state that holds only history overwrites the file
 * in place; one that holds an operator's override (or an action in
 * flight) is renamed over it, so that a power loss cannot tear it. */
static void test_routine_saves_in_place(void **state)
{
	struct fixture *fx = *state;
	int64_t saved, refresh;
	ino_t ino;

	start(fx, 2, 100);
	ino = state_inode();
	fake_set(&fake.load, 40);
	tick(fx->g, 15000);
	state_file(&saved, &refresh);
	assert_int_equal(saved, T0_WALL_MS + 15000);
	assert_int_equal(state_inode(), ino);
	/* A dry-run override, set as the admin API would but without its
	 * save: the next routine save is a rename. */
	group_rt_state(fx->g)->dry_run = STATE_DRY_RUN_ON;
	fake_set(&fake.load, 30);
	tick(fx->g, 15000);
	state_file(&saved, &refresh);
	assert_int_equal(saved, T0_WALL_MS + 30000);
	assert_int_not_equal(state_inode(), ino);
}

/* The save when an action's call ends holds no action in flight any more:
 * in place when it holds nothing but history, like a routine save;
 * replaced whole (through the spare, a new inode) when it holds an
 * operator's override, which a torn page could lose. */
static void test_settled_save_in_place(void **state)
{
	struct fixture *fx = *state;
	const struct decision *d;
	ino_t ino;

	fake.hold_scale = true;
	d = start(fx, 2, 190);
	assert_int_equal(d->action, DIR_OUT);
	assert_true(run_until(scale_waiting, NULL));
	assert_int_equal(file_in_flight(fx), DIR_OUT);
	ino = state_inode();
	fake_release();
	assert_true(run_until(idle, fx->g));
	assert_int_equal(file_in_flight(fx), DIR_NONE);
	assert_int_equal(state_inode(), ino);
	assert_int_equal(FAKE(n_set_capacity), 1);

	/* The next action ends with a pin set (as the admin API would, but
	 * without its save): replaced whole. */
	fake_set(&fake.load, 300);
	d = tick(fx->g, 15000);
	assert_int_equal(d->action, DIR_OUT);
	assert_true(run_until(scale_waiting, NULL));
	assert_int_equal(file_in_flight(fx), DIR_OUT);
	ino = state_inode();
	group_rt_state(fx->g)->pin.active = true;
	group_rt_state(fx->g)->pin.count = d->desired;
	fake_release();
	assert_true(run_until(idle, fx->g));
	assert_int_equal(file_in_flight(fx), DIR_NONE);
	assert_int_not_equal(state_inode(), ino);
	assert_int_equal(FAKE(n_set_capacity), 2);
}

static void test_failing_scale_out_retried(void **state)
{
	struct fixture *fx = *state;
	const struct decision *d;

	/* The first call creates one member and fails, the second fails
	 * outright, the third succeeds. */
	fake.fail_scale = 2;
	fake.create_on_fail = 1;
	d = start(fx, 2, 190);
	assert_int_equal(d->action, DIR_OUT);
	assert_true(run_until(idle, fx->g));
	assert_int_equal(FAKE(n_set_capacity), 1);
	assert_int_equal(FAKE(size), 3);
	/* The failure is kept for the records, the action is not in flight
	 * any more, the part done is recorded for the rate limits, and no
	 * call is retried before the next evaluation. */
	assert_int_not_equal(fx->g->last_error.time_ms, 0);
	assert_int_equal(fx->g->last_error.kind, JOB_SCALE_OUT);
	assert_int_equal(fx->g->last_error.err, -EIO);
	assert_int_equal(group_rt_state(fx->g)->in_flight.direction, DIR_NONE);
	assert_int_equal(group_rt_state(fx->g)->engine.last_action_dir, DIR_OUT);
	assert_null(fx->g->job);

	/* Three members at 63 %: still four. */
	d = tick(fx->g, 15000);
	assert_int_equal(d->current, 3);
	assert_int_equal(d->action, DIR_OUT);
	assert_int_equal(d->desired, 4);
	assert_true(run_until(idle, fx->g));
	assert_int_equal(FAKE(n_set_capacity), 2);
	assert_int_equal(FAKE(last_capacity), 4);
	assert_int_not_equal(fx->g->last_error.time_ms, 0);

	d = tick(fx->g, 15000);
	assert_int_equal(d->action, DIR_OUT);
	assert_true(run_until(idle, fx->g));
	assert_int_equal(FAKE(n_set_capacity), 3);
	/* The success clears the failure. */
	assert_int_equal(fx->g->last_error.time_ms, 0);

	d = tick(fx->g, 15000);
	assert_int_equal(d->current, 4);
	assert_int_equal(d->action, DIR_NONE);
	assert_int_equal(FAKE(size), 4);
	assert_int_equal(FAKE(n_set_capacity), 3);
	assert_int_equal(FAKE(n_remove), 0);
}

static void test_call_outlives_deadline(void **state)
{
	struct fixture *fx = *state;
	const struct decision *d;

	fake.hold_scale = true;
	/* A window of an hour: the samples from before the call stay in it, so
	 * that every evaluation while the call runs asks for the scale-out
	 * again, and only the call in flight holds it. */
	d = start_window(fx, 2, 190, "1h");
	assert_int_equal(d->action, DIR_OUT);
	assert_true(run_until(scale_waiting, NULL));

	/* Twenty minutes, past the 15-minute deadline of an action in
	 * flight: a call of this process is waited for, however long. */
	for (int i = 0; i < 5; i++) {
		d = tick(fx->g, 4 * 60000);
		assert_int_equal(d->action, DIR_NONE);
		assert_int_equal(d->hold, HOLD_IN_FLIGHT);
	}
	assert_true(vclock_ms > STATE_IN_FLIGHT_DEADLINE_MS);
	assert_int_equal(group_rt_state(fx->g)->in_flight.direction, DIR_OUT);
	assert_int_equal(FAKE(n_set_capacity), 1);
	assert_int_equal(FAKE(n_observe), 1);

	fake_release();
	assert_true(run_until(idle, fx->g));
	assert_int_equal(group_rt_state(fx->g)->in_flight.direction, DIR_NONE);
	assert_int_equal(group_rt_state(fx->g)->engine.last_action_dir, DIR_OUT);
	assert_int_equal(fx->g->current, 4);
	assert_int_equal(FAKE(size), 4);
	assert_int_equal(FAKE(n_set_capacity), 1);
	assert_int_equal(FAKE(n_remove), 0);
	assert_int_equal(FAKE(n_observe), 1);
}

static void test_partial_observation_holds_scale_in(void **state)
{
	struct fixture *fx = *state;
	const struct decision *d;

	fake.partial = true;
	/* Four members at 10 %, on a fresh state: the engine asks for 1,
	 * but some hosts could not be seen. */
	d = start(fx, 4, 40);
	assert_int_equal(d->action, DIR_NONE);
	assert_int_equal(d->desired, 4);
	for (int i = 0; i < 6; i++) {
		d = tick(fx->g, 60000);
		assert_int_equal(d->action, DIR_NONE);
	}
	assert_int_equal(FAKE(n_remove), 0);
	assert_int_equal(group_rt_state(fx->g)->in_flight.direction, DIR_NONE);

	fake_set_bool(&fake.partial, false);
	d = tick(fx->g, 15000);
	assert_int_equal(d->action, DIR_IN);
	assert_int_equal(d->desired, 1);
	assert_true(run_until(idle, fx->g));
	assert_int_equal(FAKE(n_remove), 1);
	d = tick(fx->g, 15000);
	assert_int_equal(d->current, 1);
	assert_int_equal(d->action, DIR_NONE);
	assert_int_equal(FAKE(n_remove), 1);
	assert_int_equal(FAKE(n_set_capacity), 0);
	assert_int_equal(FAKE(n_observe), 9);
}

/* Writes a state file with a scale-out from 2 to 4 in flight, started
 * now, as a daemon that stopped during it would have left it. */
static void save_in_flight(const struct config *c)
{
	struct group_state s;

	state_init(&s);
	s.in_flight = (struct state_action){
		.direction = DIR_OUT,
		.from = 2,
		.to = 4,
		.started_ms = __wrap_clock_mono_ms(),
		.deadline_ms = __wrap_clock_mono_ms() + STATE_IN_FLIGHT_DEADLINE_MS,
	};
	assert_int_equal(state_save(c->agent.state_directory, "web", &s, __wrap_clock_now()), 0);
}

static void test_restored_action_done(void **state)
{
	struct fixture *fx = *state;
	struct config *c = load(1, 50, "15s");
	const struct decision *d;

	save_in_flight(c);
	config_free(c);
	/* The pool reached 4 while the daemon was away; at 50 % each. */
	d = start(fx, 4, 200);
	assert_int_equal(fx->g->origin, STATE_RESTORED);
	assert_int_equal(d->action, DIR_NONE);
	assert_int_equal(group_rt_state(fx->g)->in_flight.direction, DIR_NONE);
	assert_int_equal(file_in_flight(fx), DIR_NONE);
	/* Recorded as the group's last action, made by nobody here. */
	assert_int_equal(group_rt_state(fx->g)->engine.last_action_dir, DIR_OUT);
	assert_int_equal(FAKE(n_set_capacity), 0);
	assert_int_equal(FAKE(n_remove), 0);
}

static void test_restored_action_expires(void **state)
{
	struct fixture *fx = *state;
	struct config *c = load(1, 50, "15s");
	const struct decision *d;

	save_in_flight(c);
	config_free(c);
	/* Still at 2 and converging: the action may yet complete. */
	fake.stable = false;
	d = start(fx, 2, 190);
	assert_int_equal(d->action, DIR_NONE);
	assert_int_equal(d->hold, HOLD_IN_FLIGHT);
	for (int i = 0; i < 3; i++) {
		d = tick(fx->g, 4 * 60000);
		assert_int_equal(d->action, DIR_NONE);
		assert_int_equal(group_rt_state(fx->g)->in_flight.direction, DIR_OUT);
	}
	assert_int_equal(FAKE(n_set_capacity), 0);
	/* Past its deadline: decided again from what is observed, once. */
	d = tick(fx->g, 4 * 60000);
	assert_int_equal(d->action, DIR_OUT);
	assert_int_equal(d->desired, 4);
	assert_true(run_until(idle, fx->g));
	assert_int_equal(FAKE(n_set_capacity), 1);
	fake_set_bool(&fake.stable, true);
	d = tick(fx->g, 15000);
	assert_int_equal(d->current, 4);
	assert_int_equal(d->action, DIR_NONE);
	assert_int_equal(FAKE(n_set_capacity), 1);
}

/* A reload while a scale-out runs, the steps as agent_reload() takes them:
 * a new runtime for the new configuration, the swap, the old one stopped
 * and freed, the new one started. */
static struct group_rt *reload(struct fixture *fx, struct config *c)
{
	struct group_rt *g = NULL;

	fx->ctx.agent_conf = &c->agent;
	assert_int_equal(group_rt_new(&fx->ctx, &c->groups[0], fx->g, &g), 0);
	group_rt_adopt(g, fx->g);
	group_rt_stop(fx->g);
	group_rt_free(fx->g);
	config_free(fx->c);
	fx->c = c;
	fx->g = g;
	vclock_ms += 1000;
	group_rt_start(g);
	assert_true(run_until(evaluated_now, g));
	return g;
}

static bool observed_on_new_handle(void *arg)
{
	return FAKE(observe_on[2]) == 1 && idle(arg);
}

static void test_reload_new_handle_adopts_call(void **state)
{
	struct fixture *fx = *state;
	const struct decision *d;
	struct group_rt *g;

	fake.hold_scale = true;
	d = start(fx, 2, 190);
	assert_int_equal(d->action, DIR_OUT);
	assert_true(run_until(scale_waiting, NULL));

	/* Other driver options: a new handle, but not while the call runs
	 * on the old one; the options are checked at once. */
	g = reload(fx, load(2, 50, "15s"));
	assert_int_equal(FAKE(n_open), 1);
	assert_int_equal(FAKE(n_check), 1);
	d = last_of(g);
	assert_int_equal(d->action, DIR_NONE);
	assert_int_equal(d->hold, HOLD_IN_FLIGHT);
	assert_int_equal(group_rt_state(g)->in_flight.direction, DIR_OUT);

	/* The call ends: recorded by the new runtime, which opens its
	 * handle, closes the old one after that, and observes through the
	 * new one. */
	vclock_ms += 15000;
	fake_release();
	assert_true(run_until(observed_on_new_handle, g));
	assert_int_equal(FAKE(n_open), 2);
	assert_int_equal(FAKE(n_close), 1);
	assert_int_equal(FAKE(closed_at_open[1]), 2);
	assert_int_equal(FAKE(scale_on[1]), 1);
	assert_int_equal(FAKE(observe_on[2]), 1);
	assert_int_equal(group_rt_state(g)->in_flight.direction, DIR_NONE);
	assert_int_equal(group_rt_state(g)->engine.last_action_dir, DIR_OUT);

	d = tick(g, 15000);
	assert_int_equal(d->current, 4);
	assert_int_equal(d->action, DIR_NONE);
	assert_int_equal(FAKE(n_set_capacity), 1);
	assert_int_equal(FAKE(n_remove), 0);
	assert_int_equal(FAKE(observe_on[1]), 1);
	assert_int_equal(FAKE(observe_on[2]), 2);
}

static void test_reload_same_handle_adopts_call(void **state)
{
	struct fixture *fx = *state;
	const struct decision *d;
	struct group_rt *g;

	fake.hold_scale = true;
	d = start(fx, 2, 190);
	assert_int_equal(d->action, DIR_OUT);
	assert_true(run_until(scale_waiting, NULL));

	/* Only the signal's target changes: the handle and its call go over
	 * as they are. */
	g = reload(fx, load(1, 60, "15s"));
	d = last_of(g);
	assert_int_equal(d->action, DIR_NONE);
	assert_int_equal(d->hold, HOLD_IN_FLIGHT);

	fake_release();
	assert_true(run_until(idle, g));
	assert_int_equal(group_rt_state(g)->in_flight.direction, DIR_NONE);
	/* At 50 % against 60 % four stay four. */
	d = tick(g, 15000);
	assert_int_equal(d->current, 4);
	assert_int_equal(d->action, DIR_NONE);
	assert_int_equal(FAKE(n_open), 1);
	assert_int_equal(FAKE(n_close), 0);
	assert_int_equal(FAKE(n_check), 0);
	assert_int_equal(FAKE(n_set_capacity), 1);
	assert_int_equal(FAKE(n_remove), 0);
	assert_int_equal(FAKE(observe_on[1]), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_scale_out_completes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_settled_save, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scale_in_after_stabilization, setup, teardown),
		cmocka_unit_test_setup_teardown(test_steady_saves_refresh, setup, teardown),
		cmocka_unit_test_setup_teardown(test_routine_saves_in_place, setup, teardown),
		cmocka_unit_test_setup_teardown(test_settled_save_in_place, setup, teardown),
		cmocka_unit_test_setup_teardown(test_records_made_when_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pending_record_keeps_its_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failing_scale_out_retried, setup, teardown),
		cmocka_unit_test_setup_teardown(test_call_outlives_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_partial_observation_holds_scale_in, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restored_action_done, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restored_action_expires, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload_new_handle_adopts_call, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload_same_handle_adopts_call, setup, teardown),
		cmocka_unit_test_setup_teardown(test_driver_calls_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_queued_call_cancelled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_actions_synced_together, setup, teardown),
		cmocka_unit_test_setup_teardown(test_observations_admitted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_states_kept_apart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_members_kept_with_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_members_start_times_kept, setup, teardown),
	};
	int r;

	if (sd_event_default(&event) < 0)
		return 1;
	r = cmocka_run_group_tests(tests, NULL, NULL);
	sd_event_unref(event);
	return r;
}
