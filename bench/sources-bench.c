/* sources-bench: the cost of one polling cycle of many signal sources, and
 * the delay a hung endpoint adds to the others.
 *
 *   sources-bench [-n SIGNALS] [-c CYCLES] [-H HUNG] [-T HUNG_TIMEOUT_MS]
 *
 * N http_json sources (default 1,000) read a number from a local HTTP server
 * (libmicrohttpd, two threads, in this process) through the shared client
 * on one sd-event loop, all polled at once, CYCLES times (default 7). Reported per
 * cycle: wall time until the last reading, CPU time of the loop's thread
 * (the daemon's cost; the server threads are excluded), and whether every
 * value was right. Each cycle alternates with one where HUNG more sources
 * (default 10) point at a socket that accepts and never answers: the
 * healthy readings should end as fast as alone, the hung ones at their own
 * timeout (default 1 s). */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sources/http.h"
#include "sources/source.h"

struct sig {
	struct signal_conf sc;
	struct config_option opts[2];
	char url[128];
	struct source *src;
	double want;
	bool hung;
	int64_t done_ns;
	int status;
	double value;
};

static struct sig *sigs;
static size_t n_sigs, n_done;
static int64_t cycle_start_ns;

static int64_t ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static enum MHD_Result serve(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			     const char *version, const char *data, size_t *size, void **state)
{
	static int first_call;
	char body[96];
	struct MHD_Response *r;
	enum MHD_Result ret;
	int n;

	/* Answering on the first call, before the request is read, makes
	 * libmicrohttpd close the connection; keep-alive is the normal case. */
	if (!*state) {
		*state = &first_call;
		return MHD_YES;
	}
	n = snprintf(body, sizeof(body), "{\"queue\": {\"depth\": %s}}", strncmp(url, "/q/", 3) == 0 ? url + 3 : "0");
	r = MHD_create_response_from_buffer((size_t)n, body, MHD_RESPMEM_MUST_COPY);
	MHD_add_response_header(r, "Content-Type", "application/json");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

static void on_done(void *userdata, int64_t t_ms, int status, double value, const char *error)
{
	struct sig *s = userdata;

	s->done_ns = ns(CLOCK_MONOTONIC) - cycle_start_ns;
	s->status = status;
	s->value = value;
	n_done++;
}

/* A TCP socket that completes handshakes (the kernel does) but is never
 * accepted from: requests to it hang until the client's timeout. */
static int blackhole(int *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4096) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0)
		return -errno;
	*port = ntohs(sa.sin_port);
	return fd;
}

static void make_sig(struct sig *s, size_t i, int port, bool hung, int64_t timeout_ms)
{
	snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d/q/%zu", port, i);
	s->opts[0] = (struct config_option){ .key = "url", .type = OPTION_STRING, .str = s->url, .file = "bench" };
	s->opts[1] = (struct config_option){
		.key = "pointer", .type = OPTION_STRING, .str = "/queue/depth", .file = "bench",
	};
	s->sc.name = hung ? "hung" : "sig";
	s->sc.source = "http_json";
	s->sc.source_options.v = s->opts;
	s->sc.source_options.n = 2;
	s->sc.timeout_ms = timeout_ms;
	s->want = (double)i;
	s->hung = hung;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Polls every source once; prints one line; returns the healthy wall ms. */
static double cycle(sd_event *e, size_t n, const char *label, int k)
{
	int64_t cpu0 = ns(CLOCK_THREAD_CPUTIME_ID), *lat = calloc(n, sizeof(int64_t)), wall_healthy = 0, wall_hung = 0;
	size_t wrong = 0, n_healthy = 0, hung_timeouts = 0;
	struct timespec now;

	n_done = 0;
	clock_gettime(CLOCK_REALTIME, &now);
	cycle_start_ns = ns(CLOCK_MONOTONIC);
	for (size_t i = 0; i < n; i++)
		if (source_poll(sigs[i].src, now.tv_sec * 1000, on_done, &sigs[i]) < 0)
			n_done++;
	while (n_done < n)
		sd_event_run(e, UINT64_MAX);
	for (size_t i = 0; i < n; i++) {
		if (sigs[i].hung) {
			hung_timeouts += sigs[i].status == -ETIMEDOUT;
			if (sigs[i].done_ns > wall_hung)
				wall_hung = sigs[i].done_ns;
			continue;
		}
		lat[n_healthy++] = sigs[i].done_ns;
		if (sigs[i].done_ns > wall_healthy)
			wall_healthy = sigs[i].done_ns;
		wrong += sigs[i].status != 0 || sigs[i].value != sigs[i].want;
	}
	qsort(lat, n_healthy, sizeof(int64_t), cmp_i64);
	printf("%-10s %2d  %6zu  %9.1f  %9.1f  %9.1f  %8.1f  %5zu", label, k, n_healthy, lat[n_healthy / 2] / 1e6,
	       wall_healthy / 1e6, (ns(CLOCK_THREAD_CPUTIME_ID) - cpu0) / 1e6, wall_hung / 1e6, wrong);
	if (n > n_healthy)
		printf("  %zu/%zu timed out", hung_timeouts, n - n_healthy);
	printf("\n");
	fflush(stdout);
	free(lat);
	return wall_healthy / 1e6;
}

int main(int argc, char **argv)
{
	size_t n = 1000, n_hung = 10;
	int cycles = 7, c, hport = 0, hfd;
	int64_t hung_timeout = 1000;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct MHD_Daemon *d;
	struct source_env env;
	struct http *http;
	struct rlimit rl;
	sd_event *e;
	char err[512];
	double alone[64], beside[64];
	int n_alone = 0, n_beside = 0;

	while ((c = getopt(argc, argv, "n:c:H:T:")) != -1) {
		switch (c) {
		case 'n':
			n = strtoul(optarg, NULL, 10);
			break;
		case 'c':
			cycles = atoi(optarg);
			break;
		case 'H':
			n_hung = strtoul(optarg, NULL, 10);
			break;
		case 'T':
			hung_timeout = atoll(optarg);
			break;
		default:
			fprintf(stderr, "usage: sources-bench [-n SIGNALS] [-c CYCLES] [-H HUNG] [-T MS]\n");
			return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	/* Each signal holds a connection on both ends during a cycle. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, NULL, NULL, serve, NULL,
			     MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_THREAD_POOL_SIZE, 2u,
			     MHD_OPTION_CONNECTION_LIMIT, (unsigned)(2 * n + 64), MHD_OPTION_LISTEN_BACKLOG_SIZE,
			     4096u, MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "sources-bench: cannot start the HTTP server\n");
		return 1;
	}
	hfd = blackhole(&hport);
	if (hfd < 0 || sd_event_new(&e) < 0 || http_new(e, &http) < 0)
		return 1;
	env.event = e;
	env.http = http;
	sigs = calloc(n + n_hung, sizeof(*sigs));
	for (size_t i = 0; i < n + n_hung; i++) {
		bool hung = i >= n;

		make_sig(&sigs[i], i, hung ? hport : MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port, hung,
			 hung ? hung_timeout : 10000);
		if (source_new(&sigs[i].sc, &env, &sigs[i].src, err, sizeof(err)) < 0) {
			fprintf(stderr, "sources-bench: %s\n", err);
			return 1;
		}
	}
	n_sigs = n + n_hung;
	printf("sources-bench: %zu http_json signals, local libmicrohttpd server; %zu hung sources (timeout %lld ms)\n",
	       n, n_hung, (long long)hung_timeout);
	printf("%-10s %2s  %6s  %9s  %9s  %9s  %8s  %5s\n", "run", "#", "valid", "p50 ms", "wall ms", "cpu ms",
	       "hung ms", "wrong");
	/* The first cycle opens the connections; the others reuse them.
	 * Cycles alone and beside the hung sources alternate, so that a busy
	 * machine weighs on both alike. */
	cycle(e, n, "warm-up", 1);
	for (int k = 1; k <= cycles && k <= 64; k++) {
		alone[n_alone++] = cycle(e, n, "alone", k);
		if (n_hung)
			beside[n_beside++] = cycle(e, n + n_hung, "with-hung", k);
	}
	printf("median over %d cycles: %.1f ms wall for %zu readings", n_alone, median(alone, n_alone), n);
	if (n_beside)
		printf("; %.1f ms beside %zu hung sources (%+.1f ms)", median(beside, n_beside), n_hung,
		       median(beside, n_beside) - median(alone, n_alone));
	printf("\n");
	for (size_t i = 0; i < n_sigs; i++)
		source_free(sigs[i].src);
	free(sigs);
	http_free(http);
	sd_event_unref(e);
	close(hfd);
	MHD_stop_daemon(d);
	return 0;
}
