/* The state-file reader: a group's JSON state as state_load() reads it
 * (cJSON_Parse of the file's text, then state_from_json's range and order
 * checks). A state it accepts must survive a save and a load unchanged in
 * meaning, so each accepted state is also written back and read again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fuzz.h"
#include "state/state.h"

/* A fixed "now" (2026-01-01), so that runs are reproducible. */
#define NOW_MS INT64_C(1767225600000)

/* The group the file belongs to: a 300 s scale-in window bounds how far
 * ahead a restored hold may reach. */
static const struct group_conf web = {
	.name = "web",
	.behavior = {.scale_in = {.stabilization_ms = 300000}},
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_quiet();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text, why[256];
	struct group_state s, again;
	cJSON *j, *out;

	if (size > STATE_MAX_FILE_SIZE)
		return 0; /* state_load() refuses these before parsing */
	text = fuzz_strndup(data, size);
	j = cJSON_Parse(text);
	free(text);
	if (!j)
		return 0;
	why[0] = '\0';
	if (state_from_json(j, &web, clock_virtual(NOW_MS), &s, why, sizeof(why)) < 0) {
		if (getenv("AUTOSCALED_FUZZ_VERBOSE"))
			fprintf(stderr, "refused: %s\n", why);
		if (!why[0])
			abort(); /* every rejection says why */
		cJSON_Delete(j);
		return 0;
	}
	cJSON_Delete(j);
	out = state_to_json(&s, "web", clock_virtual(NOW_MS), 0);
	if (!out)
		abort();
	if (state_from_json(out, &web, clock_virtual(NOW_MS), &again, why, sizeof(why)) < 0)
		abort(); /* what we save, we must load */
	cJSON_Delete(out);
	(void)state_expire(&s, NOW_MS + 3600 * 1000);
	(void)state_reconcile(&s, 3, true, NOW_MS + 1000);
	(void)state_reconcile(&again, 0, false, NOW_MS + STATE_IN_FLIGHT_DEADLINE_MS + 1);
	return 0;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	return fuzz_json_mutate(data, size, max_size, seed);
}
