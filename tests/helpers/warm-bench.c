/* warm-bench: times one scale-out of the libvirt driver on a real
 * hypervisor, served by a warm pool of one member in STATE (paused, saved,
 * stopped) or by a clone (STATE cold), for tests/integration/
 * bench-warm-qemu.py and the table of docs/warm-pools.md.
 *
 *   warm-bench GROUP STATE KEY=VALUE...
 *
 * The KEY=VALUE pairs are the driver's options (scalars only). Unless STATE
 * is cold, it observes every 200 ms until the pool's member is parked in
 * STATE and prints "parked"; then it waits for a line on stdin, so that the caller can measure the parked
 * member, and calls set_capacity for one member, printing
 *   took NAME T0_MS T1_MS
 * with the wall-clock times around the call. The member is left running
 * for the caller to time its readiness and to remove. With a warm pool, it
 * then waits for another line and observes until the pool is refilled (its
 * member parked again; warm_pool.refill paces it), printing
 *   refilled MS
 * the time that took. Exit status 0, or 1 with the reason on stderr. */
#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/driver.h"
#include "base/clock.h"

static const char *want_state;
static double parked_count;

static void to_stderr(const struct autoscaled_host *host, enum autoscaled_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void metric(const struct autoscaled_host *host, enum autoscaled_metric m, const char *label, double value)
{
	if (m == AUTOSCALED_METRIC_WARM_INSTANCES && want_state && label && strcmp(label, want_state) == 0)
		parked_count = value;
}

static char took[256];

static int member(void *ctx, const struct autoscaled_instance *in)
{
	snprintf(took, sizeof(took), "%s", in->id);
	return 0;
}

static long long wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Observes every 200 ms until the pool holds a member parked in the state
 * wanted, then says so (when `say`) and waits for a line on stdin. */
static int wait_parked(const struct driver *d, struct autoscaled_driver_instance *h, bool say)
{
	int64_t deadline = clock_mono_ms() + 300 * 1000;
	struct autoscaled_observation obs;
	char line[64];
	int r;

	if (!say && !fgets(line, sizeof(line), stdin))
		return -EPIPE;
	parked_count = 0;
	for (;;) {
		if ((r = d->ops->observe(h, NULL, NULL, NULL, &obs)) < 0) {
			fprintf(stderr, "observe: %s\n", strerror(-r));
			return r;
		}
		if (parked_count >= 1)
			break;
		if (clock_mono_ms() > deadline) {
			fprintf(stderr, "the warm member was not %s within 300 s\n", want_state);
			return -ETIMEDOUT;
		}
		usleep(200 * 1000);
	}
	if (say) {
		printf("parked\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return -EPIPE;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct autoscaled_option opts[32];
	struct autoscaled_driver_instance *h = NULL;
	const struct driver *d;
	struct autoscaled_host host;
	char err[1024], keys[32][128];
	size_t n = 0;
	long long t0, t1;
	int r;

	if (argc < 3) {
		fprintf(stderr, "usage: warm-bench GROUP STATE KEY=VALUE...\n");
		return 1;
	}
	if (strcmp(argv[2], "cold") != 0)
		want_state = argv[2];
	for (int i = 3; i < argc && n < 32; i++) {
		char *eq = strchr(argv[i], '=');

		if (!eq || (size_t)(eq - argv[i]) >= sizeof(keys[0])) {
			fprintf(stderr, "not KEY=VALUE: %s\n", argv[i]);
			return 1;
		}
		snprintf(keys[n], sizeof(keys[n]), "%.*s", (int)(eq - argv[i]), argv[i]);
		opts[n] = (struct autoscaled_option){ .key = keys[n], .value = eq + 1 };
		n++;
	}
	if (driver_load("libvirt", NULL, &d, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	driver_host_init(&host, argv[1], NULL);
	host.log = to_stderr;
	host.metric = metric;
	r = d->ops->open(&host, opts, n, &h);
	if (r < 0) {
		fprintf(stderr, "open: %s\n", strerror(-r));
		return 1;
	}
	if (want_state && wait_parked(d, h, 1) < 0) {
		d->ops->close(h);
		return 1;
	}
	t0 = wall_ms();
	r = d->ops->set_capacity(h, 1, member, NULL);
	t1 = wall_ms();
	if (r < 0) {
		fprintf(stderr, "set_capacity: %s\n", strerror(-r));
		d->ops->close(h);
		return 1;
	}
	printf("took %s %lld %lld\n", took, t0, t1);
	fflush(stdout);
	if (want_state) {
		r = wait_parked(d, h, 0);
		if (r == 0)
			printf("refilled %lld\n", wall_ms() - t1);
	}
	d->ops->close(h);
	return r < 0 ? 1 : 0;
}
