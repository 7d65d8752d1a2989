/* A region: many small blocks that live and die together, taken from
 * mappings of their own instead of the malloc heap.
 *
 * Why. A configuration of 10,000 groups is some hundred thousand small
 * blocks, built while libconfig's tree (larger still) is alive and freed
 * whole at the next reload. From malloc, those blocks land among the
 * tree's, and once the tree is freed its holes are pieces smaller than a
 * page between them: the heap cannot give the pages back, and each reload
 * that changes groups left the daemon's resident memory tens of MB higher.
 * From a region, they sit side by side in their own mappings, and freeing
 * the region unmaps them.
 *
 * Blocks are never freed one by one; region_free() frees them all. Not
 * thread-safe: one region is built by one thread, then only read. */
#ifndef AUTOSCALED_REGION_H
#define AUTOSCALED_REGION_H

#include <stdarg.h>
#include <stddef.h>

struct region;

/* A new empty region (it maps nothing until the first block); NULL on
 * ENOMEM. */
struct region *region_new(void);
/* Unmaps every block of r; r may be NULL. */
void region_free(struct region *r);

/* n zeroed bytes, aligned for any type; NULL on ENOMEM or overflow. A
 * request of 0 bytes gets a valid block of its own. */
void *region_alloc(struct region *r, size_t n);
/* region_alloc(r, n * size) with the product checked. */
void *region_calloc(struct region *r, size_t n, size_t size);
/* A copy of s, or of its first n bytes at most; NULL on ENOMEM. */
char *region_strdup(struct region *r, const char *s);
char *region_strndup(struct region *r, const char *s, size_t n);
/* A formatted string; NULL on ENOMEM. */
char *region_printf(struct region *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *region_vprintf(struct region *r, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* Bytes the region has mapped. */
size_t region_mapped(const struct region *r);

#endif
