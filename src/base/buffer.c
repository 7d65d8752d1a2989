#include "base/buffer.h"

#include <stdlib.h>
#include <string.h>

bool bounded_buf_append(struct bounded_buf *b, const char *p, size_t n, size_t max)
{
	char *v;

	if (n > max || b->len > max - n) {
		b->too_big = true;
		return false;
	}
	v = realloc(b->data, b->len + n + 1);
	if (!v)
		return false;
	memcpy(v + b->len, p, n);
	b->data = v;
	b->len += n;
	b->data[b->len] = '\0';
	return true;
}
