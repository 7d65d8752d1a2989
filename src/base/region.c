/* Blocks bumped from anonymous mappings; see region.h. Under
 * AddressSanitizer each block is followed by a poisoned gap and the free
 * rest of a mapping is poisoned, so that reading or writing past a block
 * is reported as it would be with malloc. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/region.h"

#if defined(__SANITIZE_ADDRESS__)
#define REGION_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REGION_ASAN 1
#endif
#endif
#ifdef REGION_ASAN
#include <sanitizer/asan_interface.h>
#define REDZONE 16
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define REDZONE 0
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* 256 KiB a mapping: a configuration of one group touches a few pages of
 * it, one of 10,000 groups takes some sixty. A block larger than a
 * quarter of it gets a mapping of its own, so that little is left unused
 * at the end of a mapping. */
#define CHUNK_BYTES ((size_t)256 * 1024)
#define ALIGNMENT ((size_t)16)

struct chunk {
	struct chunk *next;
	size_t size; /* bytes mapped, this header included */
	size_t used; /* bytes taken, this header included */
};

/* The header rounded up, so that the first block is aligned. */
#define HEADER ((sizeof(struct chunk) + ALIGNMENT - 1) & ~(ALIGNMENT - 1))

struct region {
	struct chunk *head; /* blocks are bumped from this one */
	size_t mapped;
};

struct region *region_new(void)
{
	return calloc(1, sizeof(struct region));
}

static void chunk_unmap(struct chunk *c)
{
	size_t size = c->size;

	UNPOISON(c, size);
	munmap(c, size);
}

void region_free(struct region *r)
{
	if (!r)
		return;
	for (struct chunk *c = r->head, *next; c; c = next) {
		next = c->next;
		chunk_unmap(c);
	}
	free(r);
}

static struct chunk *chunk_map(size_t size)
{
	struct chunk *c = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (c == MAP_FAILED)
		return NULL;
	c->size = size;
	c->used = HEADER;
	POISON((char *)c + HEADER, size - HEADER);
	return c;
}

void *region_alloc(struct region *r, size_t n)
{
	struct chunk *c = r->head;
	size_t need;
	char *p;

	if (n > SIZE_MAX / 2)
		return NULL;
	need = ((n ? n : 1) + REDZONE + ALIGNMENT - 1) & ~(ALIGNMENT - 1);
	if (!c || c->size - c->used < need) {
		if (need > (CHUNK_BYTES - HEADER) / 4) {
			size_t page = (size_t)sysconf(_SC_PAGESIZE);

			/* A mapping of its own, behind the one blocks are
			 * bumped from, which keeps its free rest. */
			c = chunk_map((HEADER + need + page - 1) / page * page);
			if (!c)
				return NULL;
			if (r->head) {
				c->next = r->head->next;
				r->head->next = c;
			} else {
				r->head = c;
			}
		} else {
			c = chunk_map(CHUNK_BYTES);
			if (!c)
				return NULL;
			c->next = r->head;
			r->head = c;
		}
		r->mapped += c->size;
	}
	p = (char *)c + c->used;
	c->used += need;
	/* Fresh anonymous pages are zero and no block is handed out twice. */
	UNPOISON(p, n);
	return p;
}

void *region_calloc(struct region *r, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	return region_alloc(r, n * size);
}

char *region_strndup(struct region *r, const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *d = region_alloc(r, len + 1);

	if (d)
		memcpy(d, s, len);
	return d;
}

char *region_strdup(struct region *r, const char *s)
{
	return region_strndup(r, s, SIZE_MAX);
}

char *region_vprintf(struct region *r, const char *fmt, va_list ap)
{
	va_list again;
	char *d;
	int len;

	va_copy(again, ap);
	len = vsnprintf(NULL, 0, fmt, again);
	va_end(again);
	if (len < 0 || !(d = region_alloc(r, (size_t)len + 1)))
		return NULL;
	vsnprintf(d, (size_t)len + 1, fmt, ap);
	return d;
}

char *region_printf(struct region *r, const char *fmt, ...)
{
	va_list ap;
	char *d;

	va_start(ap, fmt);
	d = region_vprintf(r, fmt, ap);
	va_end(ap);
	return d;
}

size_t region_mapped(const struct region *r)
{
	return r ? r->mapped : 0;
}
