/* The Prometheus source's reply parser: an instant-query reply (JSON),
 * reduced in each of the five ways. The body is handed over exactly as
 * long as the input, without a terminating NUL, as its LEN contract says. */
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
	static const enum reduce reductions[] = { REDUCE_NONE, REDUCE_SUM, REDUCE_AVG, REDUCE_MAX, REDUCE_MIN };
	char *body = malloc(size ? size : 1), err[256];

	if (!body)
		abort();
	memcpy(body, data, size);
	for (size_t i = 0; i < sizeof(reductions) / sizeof(reductions[0]); i++) {
		double v;

		err[0] = '\0';
		if (prometheus_parse(body, size, reductions[i], &v, err, sizeof(err)) < 0 && !err[0])
			abort(); /* every rejection says why */
	}
	free(body);
	return 0;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	return fuzz_json_mutate(data, size, max_size, seed);
}
