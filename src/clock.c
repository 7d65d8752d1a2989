/* The daemon's clocks; see clock.h. */
#include <time.h>

#include "clock.h"

static int64_t read_ms(clockid_t id)
{
	struct timespec ts;

	/* Neither clock can fail on Linux with a valid id. */
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t clock_wall_ms(void)
{
	return read_ms(CLOCK_REALTIME);
}

int64_t clock_mono_ms(void)
{
	return read_ms(CLOCK_MONOTONIC);
}

struct clock_now clock_now(void)
{
	return (struct clock_now){.wall_ms = clock_wall_ms(), .mono_ms = clock_mono_ms()};
}
