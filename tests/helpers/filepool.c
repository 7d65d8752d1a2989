/* filepool: a test driver whose pool lives in a text file, so that it
 * outlives the daemon's process (kill -9 and restart) the way a real
 * backend does, and whose every call is appended to a log file, so that a
 * test can count actions.
 *
 * Options:
 *   pool    = path of the pool file: one line "ID CREATED_MS" per instance
 *   calls   = path of the call log: "set_capacity FROM TO", "remove N ids..."
 *   step_ms = time each instance takes to be created or removed (default 0),
 *             so that a test can kill the daemon in the middle of an action
 *   fail    = path of a fault file (optional): while it exists and its line
 *             is "OPERATION REASON..." (observe, set_capacity or remove),
 *             that operation logs REASON as an error and fails with ENOSPC,
 *             the way a cloud refuses an operation
 *   load    = path of a file of members' values (optional): lines "ID VALUE",
 *             which observe() reports as the source filepool_load when a
 *             signal reads it; a member without a line has no value
 *   partial = path of a file (optional): while it exists, observe reports a
 *             partial observation, as libvirt does with a host down
 *
 * set_capacity only grows the pool, as the ABI has it: a smaller count is
 * logged ("set_capacity FROM TO") and refused with ERANGE.
 *
 * Instances are created and removed one at a time, each written to the
 * pool file at once (as libvirt defines one domain after the other), so a
 * crash leaves the pool part of the way. The driver's own victims are the
 * newest instances. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "autoscaled/driver.h"

#define MAX_INSTANCES 256

/* The paths are copies in `text`, allocated with the handle ("" for an
 * option not given): a soak of thousands of groups measures the daemon,
 * not 2.5 KB of fixed buffers in each of this driver's handles. */
struct autoscaled_driver_instance {
	const struct autoscaled_host *host;
	long step_ms;
	char *pool, *calls, *fail, *load, *partial;
	char text[];
};

static const char *const fp_paths[] = { "pool", "calls", "fail", "load", "partial" };
#define FP_PATHS (sizeof(fp_paths) / sizeof(fp_paths[0]))

struct pool {
	char id[MAX_INSTANCES][32];
	long long created[MAX_INSTANCES];
	int n;
	int next;
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void pause_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};

	while (ms > 0 && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* A missing file is an empty pool. */
static int pool_read(const struct autoscaled_driver_instance *h, struct pool *p)
{
	FILE *f = fopen(h->pool, "r");
	char id[32];
	long long c;

	memset(p, 0, sizeof(*p));
	p->next = 1;
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	if (fscanf(f, "next %d\n", &p->next) != 1)
		p->next = 1;
	while (p->n < MAX_INSTANCES && fscanf(f, "%31s %lld\n", id, &c) == 2) {
		snprintf(p->id[p->n], sizeof(p->id[p->n]), "%s", id);
		p->created[p->n++] = c;
	}
	fclose(f);
	return 0;
}

/* Writes the pool through a temporary file and a rename, as a backend's
 * own state would be. */
static int pool_write(const struct autoscaled_driver_instance *h, const struct pool *p)
{
	char tmp[PATH_MAX];
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", h->pool) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "next %d\n", p->next);
	for (int i = 0; i < p->n; i++)
		fprintf(f, "%s %lld\n", p->id[i], p->created[i]);
	if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	return rename(tmp, h->pool) < 0 ? -errno : 0;
}

static void log_call(const struct autoscaled_driver_instance *h, const char *line)
{
	FILE *f = fopen(h->calls, "a");

	if (!f)
		return;
	fprintf(f, "%lld %s\n", now_ms(), line);
	fflush(f);
	fsync(fileno(f));
	fclose(f);
}

/* Members live in the pool file: its path is their location. */
static void report(const struct autoscaled_driver_instance *h, const struct pool *p, int i, autoscaled_instance_fn fn,
		   void *ctx)
{
	struct autoscaled_instance in = {
		.id = p->id[i],
		.state = AUTOSCALED_INSTANCE_RUNNING,
		.created_ms = p->created[i],
		.running_since_ms = p->created[i],
		.ready = true,
		.location = h->pool,
	};

	if (fn)
		fn(ctx, &in);
}

static int fp_open(const struct autoscaled_host *host, const struct autoscaled_option *options, size_t n_options,
		   struct autoscaled_driver_instance **ret)
{
	const char *v[FP_PATHS] = { "", "", "", "", "" };
	struct autoscaled_driver_instance *h;
	char **field[FP_PATHS], *p;
	size_t size = 0, k;
	long step_ms = 0;

	for (size_t i = 0; i < n_options; i++) {
		const char *val = options[i].value ? options[i].value : "";

		for (k = 0; k < FP_PATHS && strcmp(options[i].key, fp_paths[k]) != 0; k++)
			;
		if (k < FP_PATHS)
			v[k] = val;
		else if (strcmp(options[i].key, "step_ms") == 0)
			step_ms = strtol(val, NULL, 10);
		else {
			host->log(host, AUTOSCALED_LOG_ERROR, "filepool: unknown option '%s'", options[i].key);
			return -EINVAL;
		}
	}
	if (!v[0][0] || !v[1][0]) {
		host->log(host, AUTOSCALED_LOG_ERROR, "filepool: 'pool' and 'calls' are required");
		return -EINVAL;
	}
	for (k = 0; k < FP_PATHS; k++)
		size += strlen(v[k]) + 1;
	if (!(h = calloc(1, sizeof(*h) + size)))
		return -ENOMEM;
	h->host = host;
	h->step_ms = step_ms;
	field[0] = &h->pool;
	field[1] = &h->calls;
	field[2] = &h->fail;
	field[3] = &h->load;
	field[4] = &h->partial;
	p = h->text;
	for (k = 0; k < FP_PATHS; k++) {
		*field[k] = p;
		p = stpcpy(p, v[k]) + 1;
	}
	*ret = h;
	return 0;
}

static void fp_close(struct autoscaled_driver_instance *h)
{
	free(h);
}

/* The fault the fault file injects into `op`: 0, or -ENOSPC after logging
 * the file's reason. */
static int injected_fault(const struct autoscaled_driver_instance *h, const char *op)
{
	char line[512], *reason;
	size_t n = strlen(op);
	FILE *f;

	if (!h->fail[0] || !(f = fopen(h->fail, "r")))
		return 0;
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	if (strncmp(line, op, n) != 0 || line[n] != ' ')
		return 0;
	reason = line + n + 1;
	reason[strcspn(reason, "\n")] = '\0';
	h->host->log(h->host, AUTOSCALED_LOG_ERROR, "filepool: %s refused: %s", op, reason);
	return -ENOSPC;
}

/* The value of member `id` in the load file, as the source filepool_load:
 * 1 when there is one, 0 when there is none, or a negative errno. */
static int load_value(const struct autoscaled_driver_instance *h, const char *id, double *ret)
{
	FILE *f = fopen(h->load, "r");
	char line[256], want[40];
	int found = 0;

	if (!f)
		return errno == ENOENT ? 0 : -errno;
	snprintf(want, sizeof(want), "%s ", id);
	while (!found && fgets(line, sizeof(line), f))
		if (strncmp(line, want, strlen(want)) == 0)
			found = sscanf(line + strlen(want), "%lf", ret) == 1;
	fclose(f);
	return found;
}

static int fp_observe(struct autoscaled_driver_instance *h, autoscaled_instance_fn fn, autoscaled_sample_fn sample,
		      void *ctx, struct autoscaled_observation *ret)
{
	struct pool p;
	int r = injected_fault(h, "observe");

	if (r < 0 || (r = pool_read(h, &p)) < 0)
		return r;
	for (int i = 0; i < p.n; i++) {
		double v;

		report(h, &p, i, fn, ctx);
		if (sample && h->load[0] && load_value(h, p.id[i], &v) == 1 && (r = sample(ctx, "filepool_load", p.id[i], v)))
			return r;
	}
	*ret = (struct autoscaled_observation){.target_size = p.n, .stable = true,
					       .partial = h->partial[0] && access(h->partial, F_OK) == 0};
	return 0;
}

static int remove_one(struct autoscaled_driver_instance *h, struct pool *p, int i)
{
	pause_ms(h->step_ms);
	memmove(&p->id[i], &p->id[i + 1], (size_t)(p->n - i - 1) * sizeof(p->id[0]));
	memmove(&p->created[i], &p->created[i + 1], (size_t)(p->n - i - 1) * sizeof(p->created[0]));
	p->n--;
	return pool_write(h, p);
}

static int fp_set_capacity(struct autoscaled_driver_instance *h, int count, autoscaled_instance_fn fn, void *ctx)
{
	struct pool p;
	char line[64];
	int r = injected_fault(h, "set_capacity");

	if (r < 0 || (r = pool_read(h, &p)) < 0)
		return r;
	if (count > MAX_INSTANCES)
		return -ENOSPC;
	snprintf(line, sizeof(line), "set_capacity %d %d", p.n, count);
	log_call(h, line);
	if (count < p.n) {
		h->host->log(h->host, AUTOSCALED_LOG_ERROR,
			     "filepool: set_capacity to %d refused: the pool has %d, and set_capacity only grows it", count,
			     p.n);
		return -ERANGE;
	}
	while (p.n < count) {
		pause_ms(h->step_ms);
		snprintf(p.id[p.n], sizeof(p.id[p.n]), "vm-%d", p.next++);
		/* Distinct creation times, so that "newest" is well defined. */
		p.created[p.n] = now_ms();
		if (p.n > 0 && p.created[p.n] <= p.created[p.n - 1])
			p.created[p.n] = p.created[p.n - 1] + 1;
		p.n++;
		r = pool_write(h, &p);
		if (r < 0)
			return r;
		report(h, &p, p.n - 1, fn, ctx);
	}
	return 0;
}

static int fp_remove(struct autoscaled_driver_instance *h, int count, const char *const *ids, size_t n_ids,
		     autoscaled_instance_fn fn, void *ctx)
{
	struct pool p;
	char line[1024];
	size_t len;
	int r = injected_fault(h, "remove");

	if (r < 0 || (r = pool_read(h, &p)) < 0)
		return r;
	len = (size_t)snprintf(line, sizeof(line), "remove %d", n_ids ? (int)n_ids : count);
	for (size_t i = 0; i < n_ids && len < sizeof(line); i++)
		len += (size_t)snprintf(line + len, sizeof(line) - len, " %s", ids[i]);
	log_call(h, line);
	if (n_ids) {
		for (size_t k = 0; k < n_ids; k++)
			for (int i = 0; i < p.n; i++)
				if (strcmp(p.id[i], ids[k]) == 0) {
					struct autoscaled_instance gone = {.id = ids[k]};

					if ((r = remove_one(h, &p, i)) < 0)
						return r;
					if (fn)
						fn(ctx, &gone);
					break;
				}
		return 0;
	}
	for (int k = 0; k < count && p.n > 0; k++)
		if ((r = remove_one(h, &p, p.n - 1)) < 0)
			return r;
	return 0;
}

static const struct autoscaled_source sources[] = {
	{ "filepool_load", "each member's value in the load file" },
};

static const struct autoscaled_driver filepool = {
	.abi_version = AUTOSCALED_DRIVER_ABI_VERSION,
	.struct_size = sizeof(struct autoscaled_driver),
	.name = "filepool",
	.description = "test driver: a pool kept in a text file",
	.config_help = "pool = string  the pool file\ncalls = string  the call log\nstep_ms = int  time per instance (0)\n"
		       "fail = string  a fault file\nload = string  members' values for filepool_load\n"
		       "partial = string  a file that makes observations partial",
	.sources = sources,
	.n_sources = 1,
	.open = fp_open,
	.close = fp_close,
	.observe = fp_observe,
	.set_capacity = fp_set_capacity,
	.remove_instances = fp_remove,
};

AUTOSCALED_DRIVER_EXPORT const struct autoscaled_driver *autoscaled_driver_info(void)
{
	return &filepool;
}
