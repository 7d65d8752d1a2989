/* The libvirt driver's pure helpers: names, CPU arithmetic, victim order and
 * placement. No libvirt calls, no clock, so the unit tests can feed them
 * what a real hypervisor would report (the test hypervisor has no cpu.time). */
#include "libvirt-internal.h"
#include "base/iso8601.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Expands the part of `pattern` in [p, end): %g is the group, %% a '%'. */
static int expand_part(const char *p, const char *end, const char *group, int index, char *buf, size_t len,
		       size_t *pos)
{
	while (p < end) {
		char tmp[16];
		const char *add = tmp;

		if (*p == '%' && p + 1 < end) {
			switch (p[1]) {
			case 'g': add = group; break;
			case 'n': snprintf(tmp, sizeof(tmp), "%d", index); break;
			case '%': strcpy(tmp, "%"); break;
			default: return -EINVAL;
			}
			p += 2;
		} else if (*p == '%') {
			return -EINVAL;
		} else {
			tmp[0] = *p++;
			tmp[1] = '\0';
		}
		size_t l = strlen(add);
		if (*pos + l >= len)
			return -ENAMETOOLONG;
		memcpy(buf + *pos, add, l + 1);
		*pos += l;
	}
	return 0;
}

int lv_expand_name(const char *pattern, const char *group, int index, char *buf, size_t len)
{
	size_t pos = 0;

	if (len == 0)
		return -ENAMETOOLONG;
	buf[0] = '\0';
	return expand_part(pattern, pattern + strlen(pattern), group, index, buf, len, &pos);
}

/* Returns the index N for which name is the pattern expanded with N, or -1. */
int lv_match_name(const char *pattern, const char *group, const char *name)
{
	const char *n = strstr(pattern, "%n");
	char prefix[LV_NAME_MAX], suffix[LV_NAME_MAX];
	size_t pos = 0, lp, ls, ln = strlen(name);
	long v;

	if (!n)
		return -1;
	if (expand_part(pattern, n, group, 0, prefix, sizeof(prefix), &pos) < 0)
		return -1;
	pos = 0;
	suffix[0] = '\0';
	if (expand_part(n + 2, n + strlen(n), group, 0, suffix, sizeof(suffix), &pos) < 0)
		return -1;
	lp = strlen(prefix);
	ls = strlen(suffix);
	if (ln <= lp + ls || strncmp(name, prefix, lp) != 0 || strcmp(name + ln - ls, suffix) != 0)
		return -1;
	/* Digits only, no sign, no leading zero, at most 9 of them. */
	if (ln - lp - ls > 9 || (name[lp] == '0' && ln - lp - ls > 1))
		return -1;
	v = 0;
	for (size_t i = lp; i < ln - ls; i++) {
		if (name[i] < '0' || name[i] > '9')
			return -1;
		v = v * 10 + (name[i] - '0');
	}
	return (int)v;
}

/* Strips a trailing "-disk<digits>" in place; true when there was one. */
static bool strip_disk_suffix(char *s)
{
	char *d = strrchr(s, '-');

	if (!d || strncmp(d, "-disk", 5) != 0 || d[5] == '\0')
		return false;
	for (const char *p = d + 5; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	*d = '\0';
	return true;
}

int lv_volume_owner(const char *pattern, const char *group, const char *volume, char *member, size_t len)
{
	char cand[2][LV_NAME_MAX];
	size_t n = 0;

	if (strlen(volume) >= LV_NAME_MAX)
		return -1;
	/* Without its extension first ("web-3.qcow2"), then as it is ("web-3"). */
	strcpy(cand[n], volume);
	char *dot = strrchr(cand[n], '.');
	if (dot && dot != cand[n]) {
		*dot = '\0';
		n++;
	}
	strcpy(cand[n++], volume);
	for (size_t i = 0; i < n; i++) {
		int idx = lv_match_name(pattern, group, cand[i]);

		if (idx < 0 && strip_disk_suffix(cand[i]))
			idx = lv_match_name(pattern, group, cand[i]);
		if (idx >= 0) {
			if (strlen(cand[i]) >= len)
				return -1;
			strcpy(member, cand[i]);
			return idx;
		}
	}
	return -1;
}

int lv_cpu_percent(uint64_t prev_ns, int64_t prev_wall_ns, uint64_t cur_ns, int64_t cur_wall_ns, unsigned vcpus,
		   double *ret)
{
	/* A counter that went back means the domain restarted: no delta. */
	if (vcpus == 0 || cur_wall_ns <= prev_wall_ns || cur_ns < prev_ns)
		return -EAGAIN;
	*ret = 100.0 * (double)(cur_ns - prev_ns) / ((double)(cur_wall_ns - prev_wall_ns) * vcpus);
	return 0;
}

static int cmp_age(const struct lv_member *a, const struct lv_member *b, bool newest)
{
	if (a->created_ms != b->created_ms)
		return (a->created_ms < b->created_ms) == newest ? 1 : -1;
	if (a->index != b->index)
		return (a->index < b->index) == newest ? 1 : -1;
	return 0;
}

static int cmp_victims(const struct lv_member *a, const struct lv_member *b, enum lv_policy policy)
{
	bool ar = a->dom_state == VIR_DOMAIN_RUNNING && a->phase == LV_ACTIVE;
	bool br = b->dom_state == VIR_DOMAIN_RUNNING && b->phase == LV_ACTIVE;

	/* Members that serve nothing yet go first, whatever the policy. */
	if (ar != br)
		return ar ? 1 : -1;
	switch (policy) {
	case LV_OLDEST:
		return cmp_age(a, b, false);
	case LV_LEAST_BUSY:
		/* Known utilisation first, lowest first; members never measured
		 * (just started, or a hypervisor without cpu.time) follow,
		 * newest first. */
		if ((a->cpu_percent >= 0) != (b->cpu_percent >= 0))
			return a->cpu_percent >= 0 ? -1 : 1;
		if (a->cpu_percent >= 0 && a->cpu_percent != b->cpu_percent)
			return a->cpu_percent < b->cpu_percent ? -1 : 1;
		return cmp_age(a, b, true);
	case LV_NEWEST:
	default:
		return cmp_age(a, b, true);
	}
}

/* Sorts v so that the first members are the ones to remove first. An
 * insertion sort: stable, reentrant (qsort has no context argument), and a
 * group holds at most LV_MAX_MEMBERS. */
void lv_order_victims(struct lv_member **v, size_t n, enum lv_policy policy)
{
	for (size_t i = 1; i < n; i++) {
		struct lv_member *x = v[i];
		size_t j = i;

		for (; j > 0 && cmp_victims(v[j - 1], x, policy) > 0; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

int lv_lowest_free_index(const struct lv_member *m, size_t n, const int *taken, size_t n_taken)
{
	for (int i = 1;; i++) {
		bool used = false;

		for (size_t j = 0; j < n && !used; j++)
			used = m[j].index == i;
		for (size_t j = 0; j < n_taken && !used; j++)
			used = taken[j] == i;
		if (!used)
			return i;
	}
}

struct lv_host *lv_place(struct lv_host *hosts, size_t n_hosts, const bool *eligible, const struct lv_member *m,
			 size_t n_members)
{
	struct lv_host *best = NULL;
	double best_load = 0;

	for (size_t i = 0; i < n_hosts; i++) {
		size_t count = 0;
		double load;

		if (!eligible[i] || hosts[i].weight <= 0)
			continue;
		for (size_t j = 0; j < n_members; j++)
			count += m[j].host == &hosts[i] && m[j].phase != LV_REMOVING;
		/* The host whose share after placing one more is smallest. */
		load = (double)(count + 1) / hosts[i].weight;
		if (!best || load < best_load) {
			best = &hosts[i];
			best_load = load;
		}
	}
	return best;
}

int lv_fit(const struct lv_room *room, double memory_overcommit, double cpu_overcommit)
{
	double fit = INT_MAX;

	if (memory_overcommit > 0 && room->need_kib > 0) {
		double left = (double)room->total_kib * memory_overcommit - (double)room->used_kib;

		fit = left > 0 ? floor(left / (double)room->need_kib) : 0;
	}
	if (cpu_overcommit > 0 && room->need_vcpus > 0) {
		double left = (double)room->cpus * cpu_overcommit - (double)room->used_vcpus;
		double f = left > 0 ? floor(left / (double)room->need_vcpus) : 0;

		fit = f < fit ? f : fit;
	}
	return fit >= INT_MAX ? INT_MAX : (int)fit;
}

/* Starts a non-blocking connect; returns the socket, or -1 when it failed
 * at once. Sets *done when it already connected. */
static int start_connect(const char *addr, int port, bool *done)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	char service[16];
	int fd;

	*done = false;
	snprintf(service, sizeof(service), "%d", port);
	if (!addr || getaddrinfo(addr, service, &hints, &ai) != 0)
		return -1;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
		*done = true;
	} else if (fd >= 0 && errno != EINPROGRESS) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	return fd;
}

void lv_ports_open(const char *const *addrs, size_t n, int port, int timeout_ms, bool *open)
{
	struct pollfd *p = calloc(n ? n : 1, sizeof(*p));
	int64_t deadline = clock_mono_ms() + timeout_ms;
	size_t pending = 0;

	for (size_t i = 0; i < n; i++)
		open[i] = false;
	if (!p)
		return;
	for (size_t i = 0; i < n; i++) {
		bool done;

		p[i].fd = start_connect(addrs[i], port, &done);
		p[i].events = POLLOUT;
		if (done) {
			open[i] = true;
			close(p[i].fd);
			p[i].fd = -1;
		}
		pending += p[i].fd >= 0;
	}
	/* All at once under one deadline: N guests cost one timeout. */
	while (pending > 0) {
		int64_t left = deadline - clock_mono_ms();

		if (left <= 0 || poll(p, n, (int)left) <= 0)
			break;
		for (size_t i = 0; i < n; i++) {
			int err = 0;
			socklen_t len = sizeof(err);

			if (p[i].fd < 0 || !p[i].revents)
				continue;
			if (getsockopt(p[i].fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0)
				open[i] = true;
			close(p[i].fd);
			p[i].fd = -1;
			pending--;
		}
	}
	for (size_t i = 0; i < n; i++)
		if (p[i].fd >= 0)
			close(p[i].fd);
	free(p);
}

/* Times in the member tag are UTC with milliseconds, so the host's
 * initialization period never ends early by a truncated second. Tags
 * written without the fraction still read. */
void lv_format_time(int64_t ms, char *buf, size_t len)
{
	iso8601_format(ms, ISO8601_MILLIS, buf, len);
}

int64_t lv_parse_time(const char *s)
{
	int64_t ms;

	return iso8601_parse(s, 0, &ms) == 0 ? ms : 0;
}
