/* The heap's allocator, asked in one place: glibc's malloc, or jemalloc
 * when the daemon is linked with it (configure --with-jemalloc, the default
 * when libjemalloc-dev is there and no sanitizer is on; the unit tests and
 * the sanitized builds keep glibc's). Which one it is is found when asked,
 * not when built: a daemon started with jemalloc preloaded is seen as such.
 *
 * Why jemalloc: in the soak (docs/soak.md) the daemon's many short-lived
 * blocks of many sizes, freed by threads other than those that made them,
 * left glibc's heap holding about 10 MB free between blocks in use at
 * 10,000 groups, which a trim cannot give back; jemalloc keeps blocks of a
 * size together and gives back a page once nothing in it is used. The
 * soak's median RSS: 73.5-73.8 MB with it, 80.8-81.0 MB with glibc's (two
 * pairs of runs side by side, the same CPU). */
#ifndef AUTOSCALED_BASE_HEAP_H
#define AUTOSCALED_BASE_HEAP_H

#include <stdbool.h>
#include <stddef.h>

struct heap_figures {
	size_t in_use;  /* bytes of the blocks in use */
	size_t free;    /* bytes held free between them: glibc's, resident or given back until used
			 * again; jemalloc's, resident (the room in its pages of blocks, freed pages
			 * it has yet to give back) */
	size_t mapped;  /* glibc: the large blocks mapped on their own; jemalloc: all it has mapped */
};

/* jemalloc's settings for the daemon (src/main.c gives them to it as its
 * malloc_conf; test-heap-jemalloc as well): see there why. */
#define HEAP_JEMALLOC_CONF                                                                                   \
	"narenas:1,tcache:false,dirty_decay_ms:2000,muzzy_decay_ms:0,tcache_nslots_small_max:32,tcache_max:4096"

/* "jemalloc" or "glibc". */
const char *heap_allocator(void);

/* Hands the heap's free pages back to the kernel (glibc's malloc_trim(),
 * jemalloc's purge of every arena, after the caller's own cache of freed
 * blocks went back to them). */
void heap_give_back(void);

/* Gives the calling thread a cache of freed blocks of its own (jemalloc's
 * tcache), which HEAP_JEMALLOC_CONF turns off for every thread; nothing
 * with glibc, whose threads have theirs already. For the threads that live
 * as long as the process and allocate on every turn: the loop's and the
 * state writer's. Without one, each malloc() and free() takes the arena's
 * lock, and a block freed as the last of its slab gives the slab back, to
 * be made again by the next block of that size: a profile of the soak put
 * some 15 % of the loop thread's samples in jemalloc and its lock. The
 * driver workers, hundreds of short-lived threads, stay without. The
 * caches are small (HEAP_JEMALLOC_CONF: at most 32 blocks of a size, none
 * over 4 KiB): in the soak, jemalloc's default sizes cost 1.0-1.2 MB of
 * median RSS for 0.2-0.7 % of a core less of the daemon's own CPU, these
 * 0.3 MB for 0.4 % (docs/soak.md). */
void heap_thread_cache(void);

/* The heap's figures; false when the allocator would not tell. */
bool heap_read(struct heap_figures *f);

#endif
