/* Every trace reader (NASA access logs, Azure LLM inference CSV, Bitbrains
 * CSV, plain time,value CSV, SWF job logs, time,duration request logs),
 * plain or gzip, bzip2 or xz compressed: the input's first byte picks the
 * format, the rest is the file's bytes. An accepted trace is then read to
 * its end and queried as the simulator does, and the reader's promises
 * (ordered, non-empty segments of finite demand >= 0) are checked. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "simulation/trace.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_quiet();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum trace_format formats[] = { TRACE_NASA, TRACE_AZURE_LLM, TRACE_BITBRAINS,
						     TRACE_CSV,  TRACE_SWF,	  TRACE_REQUESTS };
	const size_t n_formats = sizeof(formats) / sizeof(formats[0]);
	struct trace_reader *r, *r2;
	struct trace_cursor c;
	struct trace_seg s;
	int64_t prev_end = INT64_MIN, start;
	char *buf;
	int k;

	if (size < 1)
		return 0;
	buf = malloc(size - 1 ? size - 1 : 1);
	if (!buf)
		abort();
	memcpy(buf, data + 1, size - 1);
	if (trace_open_buffer(buf, size - 1, formats[data[0] % n_formats], "fuzz", &r) == 0) {
		while ((k = trace_next(r, &s)) > 0) {
			if (s.end_ms <= s.start_ms || s.start_ms < prev_end || !isfinite(s.v) || s.v < 0)
				abort();
			prev_end = s.end_ms;
		}
		if (trace_next(r, &s) != k)
			abort(); /* the end, or the error, stays */
		trace_close(r);
	}
	/* The same bytes through the windowed means, in steps across the
	 * trace's first minutes. */
	if (trace_open_buffer(buf, size - 1, formats[data[0] % n_formats], "fuzz", &r2) == 0) {
		trace_cursor_init(&c, r2);
		if (trace_cursor_start(&c, &start) == 0) {
			for (int i = 0; i < 64; i++) {
				double mean;
				int64_t a = start + i * 15000;

				if (trace_cursor_more(&c, a) <= 0 || trace_cursor_mean(&c, a, a + 15000, &mean) < 0)
					break;
				trace_cursor_drop(&c, a);
			}
		}
		trace_cursor_destroy(&c);
		trace_close(r2);
	}
	free(buf);
	return 0;
}
