/* Retry delays: one exponential backoff with jitter for every retry loop
 * (the cloud REST client, webhook deliveries, reconnects to a libvirt
 * host). Like iso8601.c it depends on libc alone, so that the driver plugins
 * link it too. */
#ifndef AUTOSCALED_BACKOFF_H
#define AUTOSCALED_BACKOFF_H

#include <stdint.h>

/* The delay before retry number `attempt` (1 for the first): base_ms
 * doubled for each earlier attempt and capped at max_ms, then drawn
 * uniformly between half of that and all of it. The jitter keeps many
 * daemons (or many groups) that failed together from retrying in step; the
 * floor of half keeps a retry from coming back at once. 0 when base_ms or
 * max_ms is not positive. `rnd` is the random draw: backoff_delay_ms()
 * passes a fresh one, tests a chosen one. */
int64_t backoff_delay_from(int64_t base_ms, int64_t max_ms, int attempt, uint32_t rnd);

/* backoff_delay_from() with a random draw from the kernel. Callable from
 * any thread. */
int64_t backoff_delay_ms(int64_t base_ms, int64_t max_ms, int attempt);

#endif
