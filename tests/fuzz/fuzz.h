/* What every fuzz target shares: the libFuzzer entry points, a quiet log,
 * and the input as a NUL-terminated string. */
#ifndef AUTOSCALED_FUZZ_H
#define AUTOSCALED_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

/* Silences the daemon's log (a parser that logs every rejected input would
 * spend the run writing to stderr) unless AUTOSCALED_FUZZ_VERBOSE is set. */
void fuzz_quiet(void);

/* A malloc'ed copy of data with a NUL appended; aborts when out of memory
 * (libFuzzer's -rss_limit_mb catches a runaway before that). */
char *fuzz_strndup(const uint8_t *data, size_t size);

/* Takes the next NUL- or newline-terminated field of at most max bytes from
 * *data, as a malloc'ed string, advancing past it; "" at the end. Targets
 * use it to draw parameters (a column name, a JSON pointer) from the input. */
char *fuzz_take_line(const uint8_t **data, size_t *size, size_t max);

/* The structure-aware JSON mutation (json-mutator.c): parses data as JSON
 * and changes one node's type, drops or duplicates a member, or puts in an
 * extreme number, then prints it back; falls back to libFuzzer's byte-level
 * mutation for text that is not JSON, and half of the time anyway. */
size_t fuzz_json_mutate(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

#endif
