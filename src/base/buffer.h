/* A reply body that arrives in pieces (curl's write callback) and must not
 * grow past a bound that the peer does not choose. */
#ifndef AUTOSCALED_BUFFER_H
#define AUTOSCALED_BUFFER_H

#include <stdbool.h>
#include <stddef.h>

struct bounded_buf {
	char *data;    /* NUL-terminated once anything arrived, else NULL; the caller frees it */
	size_t len;
	bool too_big;  /* a piece would have taken it past its bound */
};

/* Appends the n bytes at p. Returns false, appending nothing, when that
 * would make it longer than max (too_big is then set) or on ENOMEM; a
 * curl write callback returns 0 then, which ends the transfer. */
bool bounded_buf_append(struct bounded_buf *b, const char *p, size_t n, size_t max);

#endif
