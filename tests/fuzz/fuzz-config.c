/* The configuration reader: libconfig text through config_load()'s whole
 * path (includes, every section's validation, the error list). The input
 * is written to a file in a private directory, since config_load() reads
 * a path and resolves includes next to it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "fuzz.h"

static char dir[] = "/tmp/autoscaled-fuzz-config.XXXXXX";
static char path[sizeof(dir) + 32];

static void cleanup(void)
{
	unlink(path);
	rmdir(dir);
}

/* libconfig 1.5 (Debian 12) leaks the text of a string it was reading
 * when a syntax error follows it (its scanner's strbuf, or the token's
 * copy). That is the library's, fixed in later releases, and not ours to
 * free: leak detection leaves those two allocation sites out so that they
 * do not hide leaks of our own. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:strbuf_append\nleak:libconfig_yylex\n";
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_quiet();
	if (!mkdtemp(dir))
		abort();
	snprintf(path, sizeof(path), "%s/autoscaled.conf", dir);
	atexit(cleanup);
	/* Driver names are checked against this directory: an empty one
	 * makes every name unknown, the same on every machine. */
	setenv("AUTOSCALED_DRIVER_DIR", dir, 1);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config *c = NULL;
	struct config_errors errs = { 0 };
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
	if (config_load(path, &c, &errs) == 0) {
		/* Walk what validation accepted, as the daemon does next. */
		for (size_t i = 0; i < c->n_groups; i++) {
			const struct group_conf *g = &c->groups[i];

			if (config_find_group(c, g->name) == NULL)
				abort();
			(void)group_default_profile(g);
		}
		config_free(c);
	}
	for (size_t i = 0; i < errs.n; i++)
		if (!errs.v[i] || !errs.v[i][0])
			abort();
	config_errors_clear(&errs);
	return 0;
}
