#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/heap.h"

/* jemalloc's control interface, declared weak: it is there only when
 * jemalloc is the process's malloc, and NULL otherwise. */
int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen) __attribute__((weak));

/* jemalloc's MALLCTL_ARENAS_ALL, 4096: "arena.4096.purge" purges them all. */
#define JEMALLOC_ALL_ARENAS "4096"

const char *heap_allocator(void)
{
	return mallctl ? "jemalloc" : "glibc";
}

void heap_give_back(void)
{
	if (mallctl) {
		/* The caller's own cache first (heap_thread_cache()), so that
		 * the pages its blocks hold can go too. */
		mallctl("thread.tcache.flush", NULL, NULL, NULL, 0);
		mallctl("arena." JEMALLOC_ALL_ARENAS ".purge", NULL, NULL, NULL, 0);
	} else {
		malloc_trim(0);
	}
}

void heap_thread_cache(void)
{
	bool on = true;

	if (mallctl)
		mallctl("thread.tcache.enabled", NULL, NULL, &on, sizeof(on));
}

static bool je_size(const char *name, size_t *v)
{
	size_t len = sizeof(*v);

	return mallctl(name, v, &len, NULL, 0) == 0;
}

bool heap_read(struct heap_figures *f)
{
	if (mallctl) {
		uint64_t epoch = 1;
		size_t len = sizeof(epoch), resident, meta;

		/* The statistics are as of the last epoch: start a new one. The
		 * free bytes are those resident, less the blocks in use and the
		 * allocator's own records: the room in its pages of blocks and
		 * the freed pages it has yet to give back. */
		if (mallctl("epoch", &epoch, &len, &epoch, len) != 0 || !je_size("stats.allocated", &f->in_use) ||
		    !je_size("stats.resident", &resident) || !je_size("stats.metadata", &meta) ||
		    !je_size("stats.mapped", &f->mapped))
			return false;
		f->free = resident > f->in_use + meta ? resident - f->in_use - meta : 0;
		return true;
	} else {
		/* glibc walks its free lists under the heap's lock. */
		struct mallinfo2 mi = mallinfo2();

		f->in_use = mi.uordblks;
		f->free = mi.fordblks;
		f->mapped = mi.hblkhd;
		return true;
	}
}
