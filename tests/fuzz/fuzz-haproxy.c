/* The HAProxy source's stats CSV parser. The input's first three lines
 * choose the proxy, the server ("" for the FRONTEND/BACKEND row) and the
 * column, as a configuration would; the rest is the CSV reply, handed over
 * exactly as long as it is, without a terminating NUL. */
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
	char *proxy = fuzz_take_line(&data, &size, 256);
	char *server = fuzz_take_line(&data, &size, 256);
	char *column = fuzz_take_line(&data, &size, 256);
	char *csv = malloc(size ? size : 1), err[512];
	double v, rate;

	if (!csv)
		abort();
	memcpy(csv, data, size);
	err[0] = '\0';
	if (haproxy_csv_value(csv, size, proxy, server[0] ? server : NULL, column, &v, err, sizeof(err)) < 0) {
		if (!err[0])
			abort();
	} else if (haproxy_column_cumulative(column)) {
		(void)counter_rate(v / 2, v, 1000, &rate);
		(void)counter_rate(v, v / 2, 1000, &rate);
	}
	free(csv);
	free(proxy);
	free(server);
	free(column);
	return 0;
}
