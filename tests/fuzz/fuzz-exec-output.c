/* The exec source's output parser: the last number in whatever a command
 * printed (handed over without a terminating NUL), and the whole-string
 * number parser the other sources use for text values. */
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
	char *out = malloc(size ? size : 1), *s;
	enum reduce red;
	double v;

	if (!out)
		abort();
	memcpy(out, data, size);
	(void)parse_last_number(out, size, &v);
	free(out);
	s = fuzz_strndup(data, size);
	(void)parse_number(s, &v);
	(void)parse_reduce(s, &red);
	free(s);
	return 0;
}
