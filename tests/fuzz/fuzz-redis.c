/* The redis source end to end: the source connects to a Unix socket the
 * target serves, pipelines its commands (AUTH, SELECT and the query), and
 * the input is what the server answers, byte for byte, before it closes.
 * hiredis parses the RESP replies; the source judges them (an error, an
 * integer, the XPENDING summary array, or anything else). The input's
 * first byte picks the source: LLEN with AUTH and SELECT, or XPENDING.
 * A reading must be complete once, with a reason when it is invalid. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "config/config.h"
#include "fuzz.h"
#include "sources/source.h"

static char dir[] = "/tmp/autoscaled-fuzz-redis.XXXXXX";
static char sock[sizeof(dir) + 16];
static sd_event *event;
static int listen_fd = -1;
static struct source *sources[2];
/* The signals' configuration must outlive their sources: it is kept for
 * the process's life, as the daemon keeps its configuration. */
static struct signal_conf confs[2];
static size_t n_confs;

struct opt {
	const char *key, *value;
};

static void add(struct options *o, const char *key, const char *value)
{
	struct config_option *op = &o->v[o->n++];

	memset(op, 0, sizeof(*op));
	op->key = strdup(key);
	op->type = OPTION_STRING;
	op->str = strdup(value);
	op->file = "fuzz";
	op->line = 1;
}

static struct source *make(const char *name, const struct opt *opts, size_t n)
{
	static struct source_env env;
	struct signal_conf *sc = &confs[n_confs++];
	struct source *s;
	char err[512];

	env.event = event;
	sc->name = strdup(name);
	sc->source = strdup("redis");
	sc->source_options.v = calloc(n + 1, sizeof(struct config_option));
	add(&sc->source_options, "socket", sock);
	for (size_t i = 0; i < n; i++)
		add(&sc->source_options, opts[i].key, opts[i].value);
	sc->timeout_ms = 10000;
	sc->poll_interval_ms = 15000;
	sc->file = "fuzz";
	sc->line = 1;
	if (source_new(sc, &env, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "fuzz-redis: %s\n", err);
		abort();
	}
	return s;
}

static void cleanup(void)
{
	for (size_t i = 0; i < 2; i++)
		source_free(sources[i]);
	if (listen_fd >= 0)
		close(listen_fd);
	unlink(sock);
	rmdir(dir);
	sd_event_unref(event);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const struct opt llen[] = {
		{ "command", "llen" }, { "key", "jobs" }, { "password", "secret" }, { "database", "2" },
	};
	static const struct opt xpending[] = {
		{ "command", "xpending" }, { "key", "events" }, { "group", "workers" },
	};
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	fuzz_quiet();
	if (!mkdtemp(dir) || sd_event_new(&event) < 0)
		abort();
	snprintf(sock, sizeof(sock), "%s/redis.sock", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(listen_fd, 16) < 0)
		abort();
	atexit(cleanup);
	sources[0] = make("queue", llen, sizeof(llen) / sizeof(llen[0]));
	sources[1] = make("pending", xpending, sizeof(xpending) / sizeof(xpending[0]));
	return 0;
}

struct result {
	bool done;
	int status;
	double value;
};

static void on_done(void *userdata, int64_t t_ms, int status, double value, const char *error)
{
	struct result *r = userdata;

	if (r->done)
		abort(); /* exactly once */
	if (status == 0 && !isfinite(value))
		abort();
	if (status < 0 && (!error || !error[0]))
		abort();
	if (getenv("AUTOSCALED_FUZZ_VERBOSE"))
		fprintf(stderr, "reading: %d %g %s\n", status, value, error ? error : "");
	r->done = true;
	r->status = status;
	r->value = value;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int64_t now_ms = 1000;
	struct result res = { 0 };
	struct source *s;
	size_t sent = 0;
	int conn = -1, rounds;
	char buf[4096];

	if (size < 1)
		return 0;
	s = sources[data[0] & 1];
	data++;
	size--;
	now_ms += 15000;
	if (source_poll(s, now_ms, on_done, &res) < 0)
		abort();
	/* Serve one connection: take what the source sends, answer with the
	 * input, close. The source's own timeout (10 s) is the bound that
	 * libFuzzer's -timeout would report as a hang. */
	for (rounds = 0; !res.done; rounds++) {
		ssize_t k;

		if (sd_event_run(event, conn < 0 || sent == size ? 1000 : 0) < 0)
			abort();
		if (conn < 0) {
			conn = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
			if (conn < 0)
				continue;
			if (size == 0)
				shutdown(conn, SHUT_WR);
		}
		while ((k = recv(conn, buf, sizeof(buf), 0)) > 0)
			;
		if (sent < size) {
			k = send(conn, data + sent, size - sent, MSG_NOSIGNAL);
			if (k > 0)
				sent += (size_t)k;
			else if (k < 0 && errno != EAGAIN)
				sent = size;
			if (sent == size)
				shutdown(conn, SHUT_WR);
		}
	}
	if (conn >= 0)
		close(conn);
	return 0;
}
