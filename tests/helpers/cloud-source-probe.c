/* cloud-source-probe: registers the cloud monitoring sources, builds one
 * from key=value options, polls it N times on an sd-event loop and prints
 * each reading:
 *   ok VALUE
 *   invalid ERRNO reason...
 *
 *   cloud-source-probe TYPE TIMEOUT_MS POLLS key=value... */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log/log.h"
#include "sources/source.h"
#include "sources/cloud_worker.h"

#define MAX_OPTS 32

static int polls_left;
static struct source *src;
static sd_event *event;

/* The threads of this process, from /proc; -1 when unknown. */
static int thread_count(void)
{
	FILE *f = fopen("/proc/self/stat", "r");
	int n = -1;

	/* Field 20 (num_threads) follows the command name, which ends with the
	 * last ')'. */
	if (f) {
		char buf[1024], *p;
		size_t len = fread(buf, 1, sizeof(buf) - 1, f);

		buf[len] = '\0';
		p = strrchr(buf, ')');
		if (p && sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %d", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n;
}

/* A freed source's worker thread finishes its call in the background (it
 * is detached, so that the daemon's loop never waits for it). The probe
 * waits for it, up to bound_ms, before exiting: a process that exits in the
 * middle of that call leaves what the call holds for LeakSanitizer to
 * report, and the call is bounded by the poll's timeout anyway. */
static void wait_for_workers(int64_t bound_ms)
{
	struct timespec pause = { .tv_nsec = 20 * 1000000L };

	for (int64_t waited = 0; waited < bound_ms && thread_count() > 1; waited += 20)
		nanosleep(&pause, NULL);
}

static void on_done(void *userdata, int64_t t_ms, int status, double value, const char *error)
{
	if (status == 0)
		printf("ok %.6g\n", value);
	else
		printf("invalid %d %s\n", status, error ? error : "");
	fflush(stdout);
	if (--polls_left > 0)
		source_poll(src, t_ms + 1000, on_done, NULL);
	else
		sd_event_exit(event, 0);
}

int main(int argc, char **argv)
{
	struct config_option opts[MAX_OPTS];
	struct signal_conf sc = { 0 };
	struct source_env env = { 0 };
	char err[1024];
	struct timespec ts;
	int r;

	if (argc < 4) {
		fprintf(stderr, "usage: cloud-source-probe TYPE TIMEOUT_MS POLLS key=value...\n");
		return 2;
	}
	log_init(true, true);
	sc.name = "cpu";
	sc.source = argv[1];
	sc.timeout_ms = atoll(argv[2]);
	polls_left = atoi(argv[3]);
	sc.file = "probe";
	sc.line = 1;
	for (int i = 4; i < argc && sc.source_options.n < MAX_OPTS; i++) {
		char *eq = strchr(argv[i], '=');

		if (!eq)
			return 2;
		*eq = '\0';
		opts[sc.source_options.n++] = (struct config_option){ .key = argv[i], .type = OPTION_STRING,
								       .str = eq + 1, .file = "probe", .line = i };
	}
	sc.source_options.v = opts;
	r = cloud_sources_register();
	if (r < 0 || sd_event_default(&event) < 0)
		return 2;
	env.event = event;
	if (source_new(&sc, &env, &src, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	r = source_poll(src, (int64_t)ts.tv_sec * 1000, on_done, NULL);
	if (r < 0)
		return 2;
	sd_event_loop(event);
	source_free(src);
	sd_event_unref(event);
	wait_for_workers(2 * sc.timeout_ms + 2000);
	return 0;
}
