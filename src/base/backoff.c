/* Retry delays; see backoff.h. */
#include "base/backoff.h"

#include <stdlib.h>
#include <sys/random.h>

int64_t backoff_delay_from(int64_t base_ms, int64_t max_ms, int attempt, uint32_t rnd)
{
	int64_t cap = base_ms;

	if (base_ms <= 0 || max_ms <= 0)
		return 0;
	/* Doubling stops at the cap, so no attempt count overflows it. */
	for (int i = 1; i < attempt && cap < max_ms; i++)
		cap = cap > max_ms / 2 ? max_ms : cap * 2;
	if (cap > max_ms)
		cap = max_ms;
	return cap - cap / 2 + (int64_t)(rnd % (uint64_t)(cap / 2 + 1));
}

int64_t backoff_delay_ms(int64_t base_ms, int64_t max_ms, int attempt)
{
	uint32_t rnd;

	/* The jitter needs no cryptographic quality, only a different draw
	 * in each process; random() serves when the kernel cannot. */
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
		rnd = (uint32_t)random();
	return backoff_delay_from(base_ms, max_ms, attempt, rnd);
}
