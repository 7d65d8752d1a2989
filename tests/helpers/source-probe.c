/* source-probe: builds signal sources from libconfig snippets, polls them
 * concurrently on one sd-event loop and prints each reading, for the
 * integration tests of src/sources/.
 *
 *   source-probe [-n POLLS] [-i INTERVAL_MS] [-t TIMEOUT_MS] [-k MS | -K FILE] SNIPPET...
 *   source-probe -f FILE     (one snippet read from FILE, for FILE:LINE)
 *
 * -k MS frees every source MS ms after the start, polls in flight included
 * (each prints "NAME cancelled"), to exercise cancellation; -K FILE does
 * it as soon as FILE exists (a command writes it once it has started, so
 * the test waits for a condition, not a time). The loop then
 * runs on, as the daemon's would, until every child the sources started
 * has been reaped: "children left" when some outlived the cancel (their
 * reaper is needed), then "children reaped MS" once none is left, or
 * "children unreaped" after 5 s (exit status 1).
 *
 * A snippet is the body of a signal: `source = "http_json"; url = "...";`;
 * every setting but source, name and timeout becomes a source option. Each
 * reading prints one line:
 *   NAME ok VALUE ELAPSED_MS
 *   NAME invalid ERRNO_NAME ELAPSED_MS reason...
 * Exit status: 0 when every last reading was valid, 1 otherwise, 2 when a
 * snippet is refused (its message goes to stderr). */
#include <errno.h>
#include <getopt.h>
#include <libconfig.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sources/http.h"
#include "sources/source.h"

#define PROBE_MAX 64

struct probe {
	struct signal_conf sc;
	struct source *src;
	config_t cfg;
	int polls_left;
	int64_t started_ms;
	bool last_ok;
	bool busy;
};

static struct probe probes[PROBE_MAX];
static size_t n_probes;
static int n_polls = 1;
static int64_t interval_ms = 1000;
static int64_t kill_ms = -1;
static const char *kill_file;
static int busy;
static sd_event *event;

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int add_option(struct options *o, config_setting_t *st, const char *file)
{
	struct config_option *v = realloc(o->v, (o->n + 1) * sizeof(*v)), *op;
	char buf[64];

	if (!v)
		return -ENOMEM;
	o->v = v;
	op = &v[o->n++];
	memset(op, 0, sizeof(*op));
	op->key = strdup(config_setting_name(st));
	op->file = file;
	op->line = (int)config_setting_source_line(st);
	switch (config_setting_type(st)) {
	case CONFIG_TYPE_STRING:
		op->type = OPTION_STRING;
		op->str = strdup(config_setting_get_string(st));
		break;
	case CONFIG_TYPE_INT:
	case CONFIG_TYPE_INT64:
		op->type = OPTION_INT;
		op->i = config_setting_get_int64(st);
		op->f = (double)op->i;
		snprintf(buf, sizeof(buf), "%lld", (long long)op->i);
		op->str = strdup(buf);
		break;
	case CONFIG_TYPE_FLOAT:
		op->type = OPTION_FLOAT;
		op->f = config_setting_get_float(st);
		snprintf(buf, sizeof(buf), "%g", op->f);
		op->str = strdup(buf);
		break;
	case CONFIG_TYPE_BOOL:
		op->type = OPTION_BOOL;
		op->i = config_setting_get_bool(st);
		op->str = strdup(op->i ? "true" : "false");
		break;
	default:
		op->type = OPTION_LIST;
		op->n_list = (size_t)config_setting_length(st);
		op->list = calloc(op->n_list + 1, sizeof(char *));
		for (size_t i = 0; i < op->n_list; i++) {
			const char *e = config_setting_get_string_elem(st, (int)i);

			op->list[i] = strdup(e ? e : "");
		}
		break;
	}
	return 0;
}

static int load(struct probe *p, const char *text, const char *file, int index)
{
	config_setting_t *root;
	char name[32];

	config_init(&p->cfg);
	if (file) {
		if (!config_read_file(&p->cfg, file)) {
			fprintf(stderr, "%s:%d: %s\n", file, config_error_line(&p->cfg), config_error_text(&p->cfg));
			return -EINVAL;
		}
	} else if (!config_read_string(&p->cfg, text)) {
		fprintf(stderr, "<snippet %d>:%d: %s\n", index, config_error_line(&p->cfg),
			config_error_text(&p->cfg));
		return -EINVAL;
	}
	root = config_root_setting(&p->cfg);
	snprintf(name, sizeof(name), "s%d", index);
	p->sc.name = strdup(name);
	p->sc.file = file ? file : "<snippet>";
	p->sc.line = 1;
	for (int i = 0; i < config_setting_length(root); i++) {
		config_setting_t *st = config_setting_get_elem(root, (unsigned)i);
		const char *key = config_setting_name(st);

		if (strcmp(key, "source") == 0) {
			p->sc.source = strdup(config_setting_get_string(st) ? config_setting_get_string(st) : "");
		} else if (strcmp(key, "name") == 0 && config_setting_get_string(st)) {
			free(p->sc.name);
			p->sc.name = strdup(config_setting_get_string(st));
		} else if (strcmp(key, "timeout") == 0) {
			p->sc.timeout_ms = config_setting_get_int64(st);
		} else if (add_option(&p->sc.source_options, st, p->sc.file) < 0) {
			return -ENOMEM;
		}
	}
	return 0;
}

static void start(struct probe *p);

/* Whether this process has a child, running or a zombie; WNOWAIT leaves
 * the reaping to the sources. */
static bool have_children(void)
{
	siginfo_t si;

	return waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == 0;
}

static int64_t kill_done_ms;
static bool unreaped;

/* Runs the loop until the reapers left by cancelled runs are done. */
static int on_reap_check(sd_event_source *es, uint64_t usec, void *userdata)
{
	if (!have_children()) {
		printf("children reaped %lld\n", (long long)(now_ms() - kill_done_ms));
		fflush(stdout);
		sd_event_exit(event, 0);
		return 0;
	}
	if (now_ms() - kill_done_ms > 5000) {
		printf("children unreaped\n");
		fflush(stdout);
		unreaped = true;
		sd_event_exit(event, 0);
		return 0;
	}
	sd_event_source_set_time_relative(es, 10000);
	sd_event_source_set_enabled(es, SD_EVENT_ONESHOT);
	return 0;
}

static int on_kill(sd_event_source *es, uint64_t usec, void *userdata)
{
	for (size_t i = 0; i < n_probes; i++) {
		if (probes[i].busy)
			printf("%s cancelled\n", probes[i].sc.name);
		source_free(probes[i].src);
		probes[i].src = NULL;
		probes[i].busy = false;
		probes[i].polls_left = 0;
	}
	kill_done_ms = now_ms();
	if (have_children())
		printf("children left\n");
	fflush(stdout);
	if (sd_event_add_time_relative(event, NULL, CLOCK_MONOTONIC, 0, 1000, on_reap_check, NULL) < 0)
		sd_event_exit(event, 0);
	return 0;
}

/* -K: the cancel waits for the file the command writes. */
static int on_kill_file(sd_event_source *es, uint64_t usec, void *userdata)
{
	if (access(kill_file, F_OK) == 0)
		return on_kill(es, usec, userdata);
	sd_event_source_set_time_relative(es, 10000);
	sd_event_source_set_enabled(es, SD_EVENT_ONESHOT);
	return 0;
}

static void on_done(void *userdata, int64_t t_ms, int status, double value, const char *error)
{
	struct probe *p = userdata;
	int64_t elapsed = now_ms() - p->started_ms;

	if (status == 0)
		printf("%s ok %.17g %lld\n", p->sc.name, value, (long long)elapsed);
	else
		printf("%s invalid %s %lld %s\n", p->sc.name, strerrorname_np(-status), (long long)elapsed, error);
	fflush(stdout);
	p->last_ok = status == 0;
	p->busy = false;
	busy--;
	for (size_t i = 0; i < n_probes; i++)
		if (probes[i].polls_left > 0)
			return;
	if (busy == 0)
		sd_event_exit(event, 0);
}

static int on_tick(sd_event_source *es, uint64_t usec, void *userdata)
{
	bool more = false;

	for (size_t i = 0; i < n_probes; i++) {
		if (probes[i].polls_left > 0 && !probes[i].busy)
			start(&probes[i]);
		more |= probes[i].polls_left > 0;
	}
	if (more) {
		sd_event_source_set_time_relative(es, (uint64_t)interval_ms * 1000);
		sd_event_source_set_enabled(es, SD_EVENT_ONESHOT);
	} else
		sd_event_source_set_enabled(es, SD_EVENT_OFF);
	return 0;
}

static void start(struct probe *p)
{
	struct timespec ts;
	int r;

	clock_gettime(CLOCK_REALTIME, &ts);
	p->started_ms = now_ms();
	r = source_poll(p->src, (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, on_done, p);
	p->polls_left--;
	if (r < 0) {
		printf("%s poll-error %s\n", p->sc.name, strerrorname_np(-r));
		return;
	}
	p->busy = true;
	busy++;
}

int main(int argc, char **argv)
{
	struct source_env env;
	struct http *http;
	sd_event_source *tick;
	const char *file = NULL;
	int64_t timeout_ms = 0;
	char err[1024];
	int c, rc = 0;

	while ((c = getopt(argc, argv, "n:i:t:f:k:K:")) != -1) {
		switch (c) {
		case 'n':
			n_polls = atoi(optarg);
			break;
		case 'i':
			interval_ms = atoll(optarg);
			break;
		case 't':
			timeout_ms = atoll(optarg);
			break;
		case 'f':
			file = optarg;
			break;
		case 'k':
			kill_ms = atoll(optarg);
			break;
		case 'K':
			kill_file = optarg;
			break;
		default:
			fprintf(stderr, "usage: source-probe [-n POLLS] [-i MS] [-t MS] [-k MS | -K FILE] SNIPPET... | -f FILE\n");
			return 2;
		}
	}
	/* hiredis writes with write(2): a peer that closed must not kill us. */
	signal(SIGPIPE, SIG_IGN);
	if (sd_event_default(&event) < 0 || http_new(event, &http) < 0)
		return 2;
	env.event = event;
	env.http = http;
	for (int i = optind; i < argc || (file && n_probes == 0); i++) {
		struct probe *p = &probes[n_probes];

		if (n_probes == PROBE_MAX)
			break;
		if (load(p, file ? NULL : argv[i], file, (int)n_probes) < 0)
			return 2;
		if (timeout_ms && !p->sc.timeout_ms)
			p->sc.timeout_ms = timeout_ms;
		if (source_new(&p->sc, &env, &p->src, err, sizeof(err)) < 0) {
			fprintf(stderr, "%s\n", err);
			return 2;
		}
		p->polls_left = n_polls;
		n_probes++;
	}
	if (n_probes == 0)
		return 2;
	sd_event_add_time_relative(event, &tick, CLOCK_MONOTONIC, 0, 1000, on_tick, NULL);
	if (kill_ms >= 0)
		sd_event_add_time_relative(event, NULL, CLOCK_MONOTONIC, (uint64_t)kill_ms * 1000, 1000, on_kill, NULL);
	else if (kill_file)
		sd_event_add_time_relative(event, NULL, CLOCK_MONOTONIC, 0, 1000, on_kill_file, NULL);
	sd_event_loop(event);
	if (unreaped)
		rc = 1;
	for (size_t i = 0; i < n_probes; i++) {
		if (!probes[i].last_ok)
			rc = 1;
		source_free(probes[i].src);
		config_destroy(&probes[i].cfg);
	}
	sd_event_source_unref(tick);
	http_free(http);
	sd_event_unref(event);
	return rc;
}
