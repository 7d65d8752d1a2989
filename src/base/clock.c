/* The daemon's clocks; see clock.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"

/* For tests only: a file named by this variable holds a number of
 * milliseconds, possibly negative, added to every wall-clock read, so that a
 * test can step the daemon's wall clock while it runs, as NTP or an
 * operator would, without touching the machine's clock (which needs
 * privileges and disturbs everything else on it). The file is read on every
 * call; unset, it costs one getenv(). */
#define TEST_OFFSET_ENV "AUTOSCALED_TEST_WALL_OFFSET_FILE"

static int64_t read_ms(clockid_t id)
{
	struct timespec ts;

	/* Neither clock can fail on Linux with a valid id. */
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t test_offset_ms(void)
{
	const char *path = secure_getenv(TEST_OFFSET_ENV);
	char buf[32], *end;
	long long v;
	ssize_t n;
	int fd;

	if (!path)
		return 0;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	do
		n = read(fd, buf, sizeof(buf) - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	errno = 0;
	v = strtoll(buf, &end, 10);
	return errno == 0 && end != buf ? (int64_t)v : 0;
}

int64_t clock_wall_ms(void)
{
	return read_ms(CLOCK_REALTIME) + test_offset_ms();
}

int64_t clock_mono_ms(void)
{
	return read_ms(CLOCK_MONOTONIC);
}

int64_t clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t clock_thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

struct clock_now clock_now(void)
{
	return (struct clock_now){.wall_ms = clock_wall_ms(), .mono_ms = clock_mono_ms()};
}
