/* replay: a recorded series played back as a live signal, for the
 * quick-start demo and for tests: the value at (now - start) x speed
 * seconds into a "time,value" CSV, looping at the end. The start is the
 * first poll. Options: file (required), speed (default 1), column (header
 * name or 1-based index, default 2), scale (a multiplier, default 1). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "sources/parse.h"
#include "sources/registry.h"

#define REPLAY_MAX_FILE ((size_t)64 << 20)

struct replay {
	struct series series;
	double speed;
	bool started;
	int64_t start_ms;
};

static const char *const replay_keys[] = { "file", "speed", "column", "scale", NULL };

static int replay_init(struct source *s, const struct signal_conf *sc, char *err, size_t errlen)
{
	struct replay *p = source_priv(s);
	char *file = NULL, *column = NULL, *text = NULL, why[256];
	double scale;
	size_t len = 0;
	int r;

	if ((r = source_opt_str(sc, "file", true, NULL, &file, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "column", false, "2", &column, err, errlen)) < 0 ||
	    (r = source_opt_num(sc, "speed", 1e-6, 1e9, 1, &p->speed, err, errlen)) < 0 ||
	    (r = source_opt_num(sc, "scale", -1e12, 1e12, 1, &scale, err, errlen)) < 0)
		goto out;
	/* A FIFO would block the loop: only a regular file is read. */
	r = file_read_all(file, 0, REPLAY_MAX_FILE, &text, &len, NULL);
	if (r < 0) {
		r = source_opt_error(sc, source_option(sc, "file"), err, errlen, "cannot read '%s': %s", file,
				     r == -EFBIG    ? "larger than 64 MiB"
				     : r == -EINVAL ? "not a regular file"
						    : strerror(-r));
		goto out;
	}
	r = series_parse(text, len, column, scale, &p->series, why, sizeof(why));
	if (r < 0)
		r = source_opt_error(sc, source_option(sc, "file"), err, errlen, "'%s': %s", file, why);
out:
	free(file);
	free(column);
	free(text);
	return r;
}

static int replay_poll(struct source *s)
{
	struct replay *p = source_priv(s);
	int64_t now = source_poll_time(s);

	if (!p->started) {
		p->started = true;
		p->start_ms = now;
	}
	source_complete_later(s, 0, series_at(&p->series, (double)(now - p->start_ms) / 1000.0 * p->speed),
			      NULL);
	return 0;
}

static void replay_free(struct source *s)
{
	struct replay *p = source_priv(s);

	series_clear(&p->series);
}

const struct source_ops source_replay = {
	.name = "replay",
	.options = replay_keys,
	.init = replay_init,
	.poll = replay_poll,
	.done = replay_free,
	.priv_size = sizeof(struct replay),
};
