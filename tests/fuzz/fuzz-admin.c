/* The admin API end to end: the input is sent as raw bytes (request line,
 * headers, query string, body; several pipelined requests if it holds
 * them) to the real server (libmicrohttpd under httpd.c, routing and body
 * validation in admin.c) on a Unix socket, and the loop runs until the
 * server has answered and closed. The operations behind the endpoints are
 * a small model that checks what admin.c hands them. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <systemd/sd-event.h>

#include "admin/admin.h"
#include "fuzz.h"

/* A fixed "now" (2026-01-01), so that runs are reproducible. */
#define NOW_MS INT64_C(1767225600000)

static char dir[] = "/tmp/autoscaled-fuzz-admin.XXXXXX";
static char sock[sizeof(dir) + 16];
static sd_event *event;
static struct admin *admin;
static bool paused, pinned;

static void check_group(const char *g)
{
	/* admin.c hands over a name it has cut from the path: never empty,
	 * never with a slash. */
	if (!g || !g[0] || strchr(g, '/'))
		abort();
}

static bool known(const char *g)
{
	check_group(g);
	return strcmp(g, "web") == 0;
}

static cJSON *op_health(void *u)
{
	return cJSON_CreateObject();
}

static cJSON *op_list(void *u)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddItemToObject(o, "groups", cJSON_CreateArray());
	return o;
}

static cJSON *op_show(void *u, const char *g)
{
	return known(g) ? cJSON_CreateObject() : NULL;
}

static cJSON *op_decisions(void *u, const char *g)
{
	return known(g) ? cJSON_CreateArray() : NULL;
}

static void check_until(int64_t until)
{
	if (until != 0 && until <= NOW_MS)
		abort(); /* an expiry in the past must have been refused */
}

static int op_pause(void *u, const char *g, int64_t until, char *err, size_t len)
{
	if (!known(g))
		return -ENOENT;
	check_until(until);
	paused = true;
	return 0;
}

static int op_resume(void *u, const char *g, char *err, size_t len)
{
	if (!known(g))
		return -ENOENT;
	if (!paused) {
		snprintf(err, len, "'%s' is not paused", g);
		return -EALREADY;
	}
	paused = false;
	return 0;
}

static int op_pin(void *u, const char *g, int count, int64_t until, bool force, char *err, size_t len)
{
	if (!known(g))
		return -ENOENT;
	if (count < 0)
		abort(); /* a negative count must have been refused */
	check_until(until);
	if (!force && count > 10) {
		snprintf(err, len, "%d is outside [0, 10]; use force", count);
		return -ERANGE;
	}
	pinned = true;
	return 0;
}

static int op_unpin(void *u, const char *g, char *err, size_t len)
{
	if (!known(g))
		return -ENOENT;
	if (!pinned) {
		snprintf(err, len, "'%s' is not pinned", g);
		return -EALREADY;
	}
	pinned = false;
	return 0;
}

static int op_dry_run(void *u, const char *g, bool on, char *err, size_t len)
{
	return known(g) ? 0 : -ENOENT;
}

static int op_reload(void *u, char *err, size_t len)
{
	return 0;
}

static int op_what_if(void *u, const char *g, const struct admin_what_if *w, cJSON **ret, char *err, size_t len)
{
	if (!known(g))
		return -ENOENT;
	*ret = cJSON_CreateObject();
	return *ret ? 0 : -ENOMEM;
}

static int64_t op_now(void *u)
{
	return NOW_MS;
}

static const struct admin_ops ops = {
	.health = op_health,
	.list = op_list,
	.show = op_show,
	.decisions = op_decisions,
	.pause = op_pause,
	.resume = op_resume,
	.pin = op_pin,
	.unpin = op_unpin,
	.dry_run = op_dry_run,
	.reload = op_reload,
	.what_if = op_what_if,
	.now_ms = op_now,
};

static void cleanup(void)
{
	admin_free(admin);
	sd_event_unref(event);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_quiet();
	if (!mkdtemp(dir))
		abort();
	snprintf(sock, sizeof(sock), "%s/admin.sock", dir);
	if (sd_event_new(&event) < 0 || admin_new(event, sock, NULL, &ops, NULL, &admin) < 0)
		abort();
	atexit(cleanup);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t sent = 0;
	int fd, idle = 0;
	char buf[65536];

	paused = pinned = false;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		abort();
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		abort();
	if (size == 0)
		shutdown(fd, SHUT_WR);
	/* Alternate between sending, serving and reading, so that neither
	 * side blocks on a full socket buffer, until the server has closed
	 * or has nothing more to do with what it was sent. The server may
	 * wait for the rest of a request that will never come (its
	 * connection timeout ends that in the daemon); closing the socket
	 * wakes it at once, so each input costs milliseconds. */
	while (idle < 3) {
		ssize_t k;
		int r;

		if (sent < size) {
			k = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
			if (k > 0)
				sent += (size_t)k;
			else if (k < 0 && errno != EAGAIN)
				sent = size; /* the server closed on us: fine */
			if (sent == size)
				shutdown(fd, SHUT_WR);
		}
		r = sd_event_run(event, 0);
		if (r < 0)
			abort();
		while ((k = recv(fd, buf, sizeof(buf), 0)) > 0)
			r = 1;
		if (k == 0 || (k < 0 && errno != EAGAIN))
			break; /* answered and closed */
		idle = (r == 0 && sent == size) ? idle + 1 : 0;
	}
	close(fd);
	/* Let the server see the close and free the connection. */
	for (idle = 0; idle < 3;)
		idle = sd_event_run(event, 0) > 0 ? 0 : idle + 1;
	return 0;
}
