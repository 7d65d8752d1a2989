/* The replay source's series reader: "time,value" CSV with an optional
 * header. The input's first line is the column option ("" for the
 * default), the rest the file's text (without a terminating NUL). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sources/parse.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_quiet();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *column = fuzz_take_line(&data, &size, 256);
	char *text = malloc(size ? size : 1), err[256];
	struct series s = { 0 };

	if (!text)
		abort();
	memcpy(text, data, size);
	err[0] = '\0';
	if (series_parse(text, size, column[0] ? column : "2", 1.0, &s, err, sizeof(err)) == 0) {
		static const double at[] = { 0, 0.5, 1, 59, 3600, 1e9, -1, 1e300 };

		if (s.n == 0)
			abort(); /* success means at least one row */
		for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
			(void)series_at(&s, at[i]);
		series_clear(&s);
	} else if (!err[0]) {
		abort();
	}
	free(text);
	free(column);
	return 0;
}
