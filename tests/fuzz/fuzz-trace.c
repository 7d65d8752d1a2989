/* Every trace reader (NASA access logs, Azure LLM inference CSV,
 * Bitbrains CSV, plain time,value CSV): the input's first byte picks the
 * format, the rest is the file's text, handed over without a terminating
 * NUL. An accepted trace is then queried as the simulator does. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "trace.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_quiet();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum trace_format formats[] = { TRACE_NASA, TRACE_AZURE_LLM, TRACE_BITBRAINS, TRACE_CSV };
	struct trace t = { 0 };
	enum trace_format fmt;
	char *buf;

	if (size < 1)
		return 0;
	fmt = formats[data[0] % 4];
	buf = malloc(size - 1 ? size - 1 : 1);
	if (!buf)
		abort();
	memcpy(buf, data + 1, size - 1);
	if (trace_parse(buf, size - 1, fmt, "fuzz", &t) == 0) {
		int64_t end = trace_end_ms(&t);

		if (t.res_ms <= 0 || t.n == 0)
			abort(); /* the struct's own promises */
		(void)trace_mean(&t, t.start_ms, end);
		(void)trace_mean(&t, t.start_ms - t.res_ms, t.start_ms + t.res_ms / 2);
		(void)trace_mean(&t, end, t.start_ms);
		trace_free(&t);
	}
	free(buf);
	return 0;
}
