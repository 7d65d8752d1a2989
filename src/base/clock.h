/* The daemon's two clocks, read in one place.
 *
 * Wall-clock time (CLOCK_REALTIME, milliseconds since the epoch) is what is
 * persisted and shown, and what calendars are made of: schedules and
 * profiles, pin and pause expiries an operator names, timestamps other
 * systems stamp (a cloud's creation times). It can step: NTP corrects it, an
 * operator sets it, a VM resumes.
 *
 * Monotonic time (CLOCK_MONOTONIC, milliseconds since an unspecified start)
 * never steps. Everything that measures a length of time runs on it:
 * signal windows and staleness, stabilization windows, cooldowns, rate-limit
 * periods, the safe start's hold, the deadline of an action in flight. A
 * wall-clock step therefore neither empties nor stretches any of them.
 *
 * The pure parts (struct clock_now and the conversions) are what the engine
 * and the state module use: they take times as inputs and read no clock.
 *
 * Nothing else in the tree reads either clock; sd-event's timers are armed
 * on CLOCK_MONOTONIC, the same clock. The driver plugins link this module
 * too (src/base), so a member's creation time and the daemon's "now" come
 * from the same clock. */
#ifndef AUTOSCALED_CLOCK_H
#define AUTOSCALED_CLOCK_H

#include <stdint.h>

/* One instant on both clocks. */
struct clock_now {
	int64_t wall_ms; /* CLOCK_REALTIME, epoch milliseconds */
	int64_t mono_ms; /* CLOCK_MONOTONIC milliseconds */
};

/* Reads the clocks. */
int64_t clock_wall_ms(void);
int64_t clock_mono_ms(void);
struct clock_now clock_now(void);
/* The monotonic clock in nanoseconds: for measuring how long something
 * took, and for rates over short intervals (a member's CPU time). */
int64_t clock_mono_ns(void);
/* The CPU time (user and system) of the calling thread in nanoseconds, 0
 * if unknown: a system call, not the vDSO (about 1.4 us on a 2-core VM). */
int64_t clock_thread_cpu_ns(void);

/* The same instant on both clocks: for a virtual clock (simulate, explain),
 * where no step can happen. */
static inline struct clock_now clock_virtual(int64_t t_ms)
{
	return (struct clock_now){.wall_ms = t_ms, .mono_ms = t_ms};
}

/* A monotonic time as wall-clock time, for showing and persisting it: the
 * wall-clock time that is as far from now.wall_ms as mono_ms is from
 * now.mono_ms. */
static inline int64_t clock_mono_to_wall(struct clock_now now, int64_t mono_ms)
{
	return now.wall_ms - (now.mono_ms - mono_ms);
}

/* A wall-clock time as monotonic time, by the same distance from now. The
 * result is not clamped: a wall time persisted before a backward step lies
 * in the future, and callers decide how far ahead they allow (state.c). */
static inline int64_t clock_wall_to_mono(struct clock_now now, int64_t wall_ms)
{
	return now.mono_ms - (now.wall_ms - wall_ms);
}

#endif
