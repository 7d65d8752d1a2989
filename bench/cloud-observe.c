/* cloud-observe: how long one full observe cycle of many cloud groups takes
 * when each group is observed on its own thread, or on the daemon's bounded
 * pool of driver calls (src/agent/workers.c) with --pool.
 *
 *   cloud-observe [--pool LIMIT] DRIVER GROUPS key=value...
 *       (loaded from $AUTOSCALED_DRIVER_DIR)
 *
 * With --pool, every group's observe is queued at once on one pool of
 * LIMIT threads, as the daemon queues one cycle's calls of one driver;
 * LIMIT 0 is the daemon's default for the driver (job_default_limit()).
 * "%d" in an option value becomes the group's index. Opens GROUPS handles,
 * then runs two cycles: cold (tokens fetched, connections opened) and warm
 * (with --pool, once the pool's threads have ended, as between the daemon's
 * cycles).
 * Prints one JSON line with the wall time of each cycle. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "autoscaled/driver.h"
#include "agent/driver.h"
#include "agent/group-private.h"
#include "agent/workers.h"

#define MAX_GROUPS 2000
#define MAX_OPTS 32

struct group {
	struct workers_task task;
	struct autoscaled_host host;
	char name[32];
	struct autoscaled_driver_instance *h;
	pthread_t tid;
	int rc;
	int instances;
};

static const struct autoscaled_driver *drv;
static pthread_barrier_t barrier;

static void quiet_log(const struct autoscaled_host *host, enum autoscaled_log_level level, const char *fmt, ...)
{
	va_list ap;

	if (level < AUTOSCALED_LOG_WARNING)
		return;
	fprintf(stderr, "[%s] ", host->group);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static int count(void *ctx, const struct autoscaled_instance *in)
{
	(*(int *)ctx)++;
	return 0;
}

static void *observe_one(void *arg)
{
	struct group *g = arg;
	struct autoscaled_observation obs;

	pthread_barrier_wait(&barrier);
	g->instances = 0;
	g->rc = drv->observe(g->h, count, NULL, &g->instances, &obs);
	return NULL;
}

/* --pool: the pool, and how many of its calls have ended. */
static struct workers *pool;
static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cond = PTHREAD_COND_INITIALIZER;
static int n_done;

static void observe_task(struct workers_task *t)
{
	struct group *g = (struct group *)t;
	struct autoscaled_observation obs;

	g->instances = 0;
	g->rc = drv->observe(g->h, count, NULL, &g->instances, &obs);
	pthread_mutex_lock(&done_lock);
	n_done++;
	pthread_cond_signal(&done_cond);
	pthread_mutex_unlock(&done_lock);
}

static double pool_cycle(struct group *groups, int n)
{
	double start = now_ms();

	n_done = 0;
	for (int i = 0; i < n; i++) {
		groups[i].task.run = observe_task;
		if (workers_submit(pool, &groups[i].task) < 0)
			exit(2);
	}
	pthread_mutex_lock(&done_lock);
	while (n_done < n)
		pthread_cond_wait(&done_cond, &done_lock);
	pthread_mutex_unlock(&done_lock);
	return now_ms() - start;
}

static double cycle(struct group *groups, int n, int *errors)
{
	double start;

	if (pool) {
		start = pool_cycle(groups, n);
		*errors = 0;
		for (int i = 0; i < n; i++)
			*errors += groups[i].rc != 0;
		return start;
	}

	pthread_barrier_init(&barrier, NULL, (unsigned)n + 1);
	for (int i = 0; i < n; i++)
		if (pthread_create(&groups[i].tid, NULL, observe_one, &groups[i]) != 0)
			exit(2);
	pthread_barrier_wait(&barrier);
	start = now_ms();
	for (int i = 0; i < n; i++)
		pthread_join(groups[i].tid, NULL);
	pthread_barrier_destroy(&barrier);
	*errors = 0;
	for (int i = 0; i < n; i++)
		*errors += groups[i].rc != 0;
	return now_ms() - start;
}

int main(int argc, char **argv)
{
	static char values[MAX_OPTS][256];
	struct autoscaled_option opts[MAX_OPTS];
	const struct driver *loaded;
	char err[1024];
	struct group *groups;
	int n, n_opts, cold_err, warm_err, total = 0, limit = -1;
	double cold, warm;

	if (argc > 2 && strcmp(argv[1], "--pool") == 0) {
		limit = atoi(argv[2]);
		argc -= 2;
		argv += 2;
	}
	n_opts = argc - 3;
	if (limit < -1 || argc < 3 || (n = atoi(argv[2])) < 1 || n > MAX_GROUPS || n_opts > MAX_OPTS) {
		fprintf(stderr, "usage: cloud-observe [--pool LIMIT] DRIVER GROUPS key=value...\n");
		return 2;
	}
	if (driver_load(argv[1], NULL, &loaded, err, sizeof(err)) < 0) {
		fprintf(stderr, "cloud-observe: %s\n", err);
		return 2;
	}
	drv = loaded->ops;
	if (limit >= 0) {
		if (limit == 0)
			limit = job_default_limit(argv[1]);
		if (workers_new(argv[1], limit, JOB_WORKER_IDLE_MS, &pool) < 0)
			return 2;
	}
	groups = calloc((size_t)n, sizeof(*groups));
	if (!groups)
		return 2;
	for (int i = 0; i < n; i++) {
		struct group *g = &groups[i];

		snprintf(g->name, sizeof(g->name), "g%d", i);
		g->host = (struct autoscaled_host){ .abi_version = AUTOSCALED_DRIVER_ABI_VERSION,
						    .struct_size = sizeof(g->host), .group = g->name, .log = quiet_log };
		for (int k = 0; k < n_opts; k++) {
			char *eq = strchr(argv[3 + k], '='), *pct;

			if (!eq)
				return 2;
			snprintf(values[k], sizeof(values[k]), "%s", eq + 1);
			pct = strstr(values[k], "%d");
			if (pct) {
				char tail[256];

				snprintf(tail, sizeof(tail), "%s", pct + 2);
				snprintf(pct, sizeof(values[k]) - (size_t)(pct - values[k]), "%d%s", i, tail);
			}
			/* Copies, since every group needs its own values. */
			opts[k] = (struct autoscaled_option){ .key = strndup(argv[3 + k], (size_t)(eq - argv[3 + k])),
							      .value = strdup(values[k]) };
		}
		if (drv->open(&g->host, opts, (size_t)n_opts, &g->h) < 0) {
			fprintf(stderr, "cloud-observe: open of group %d failed\n", i);
			return 1;
		}
	}
	cold = cycle(groups, n, &cold_err);
	/* The daemon's next cycle comes an interval later, after its pool's
	 * idle threads have ended (JOB_WORKER_IDLE_MS): the warm cycle keeps
	 * the connections and tokens, and starts its threads anew. */
	for (struct workers_stats st = {.threads = 1}; pool && st.threads > 0;) {
		struct timespec pause = {.tv_nsec = 50 * 1000000L};

		workers_stats(pool, &st);
		if (st.threads > 0)
			nanosleep(&pause, NULL);
	}
	warm = cycle(groups, n, &warm_err);
	for (int i = 0; i < n; i++) {
		total += groups[i].instances;
		drv->close(groups[i].h);
	}
	printf("{\"driver\":\"%s\",\"groups\":%d,\"pool\":%d,\"instances\":%d,\"cold_cycle_ms\":%.0f,"
	       "\"warm_cycle_ms\":%.0f,\"errors\":%d}\n",
	       drv->name, n, pool ? limit : 0, total, cold, warm, cold_err + warm_err);
	workers_free(pool);
	free(groups);
	return cold_err + warm_err ? 1 : 0;
}
