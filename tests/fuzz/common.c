/* Helpers shared by the fuzz targets (see fuzz.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "log/log.h"

/* The daemon's log writes to the stream stderr; libFuzzer took its own
 * copy of that pointer before main() and the sanitizers write to fd 2
 * directly, so pointing the stream elsewhere silences only the daemon. */
void fuzz_quiet(void)
{
	FILE *null;

	if (getenv("AUTOSCALED_FUZZ_VERBOSE"))
		return;
	log_set_target(LOG_TARGET_STDERR);
	null = fopen("/dev/null", "w");
	if (null)
		stderr = null;
}

char *fuzz_strndup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	if (size)
		memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

char *fuzz_take_line(const uint8_t **data, size_t *size, size_t max)
{
	size_t n = 0;
	char *s;

	while (n < *size && n < max && (*data)[n] != '\n' && (*data)[n] != '\0')
		n++;
	s = fuzz_strndup(*data, n);
	if (n < *size && ((*data)[n] == '\n' || (*data)[n] == '\0'))
		n++;
	*data += n;
	*size -= n;
	return s;
}
