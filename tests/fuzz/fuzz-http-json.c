/* The http_json source's parser: a JSON body (depth-bounded parse), an RFC
 * 6901 pointer into it and the number found there. The input's first line
 * is the pointer, the rest the body (without a terminating NUL). */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sources/source.h"
#include "sources/parse.h"

int fuzz_json_header_lines = 1;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_quiet();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *pointer = fuzz_take_line(&data, &size, 1024);
	char *body = malloc(size ? size : 1), err[256];
	cJSON *root = NULL, *item;
	double v;
	int r;

	if (!body)
		abort();
	memcpy(body, data, size);
	err[0] = '\0';
	r = json_parse_bounded(body, size, SOURCE_MAX_JSON_DEPTH, &root, err, sizeof(err));
	if (r == 0) {
		err[0] = '\0';
		r = json_pointer_get(root, pointer, &item, err, sizeof(err));
		if (r == 0) {
			err[0] = '\0';
			r = json_number(item, &v, err, sizeof(err));
		}
		cJSON_Delete(root);
	}
	if (r < 0 && !err[0])
		abort();
	free(body);
	free(pointer);
	return 0;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	return fuzz_json_mutate(data, size, max_size, seed);
}
