/* replay: a recorded series played back as a live signal, for the
 * quick-start demo and for tests: the value at (now - start) x speed
 * seconds into a "time,value" CSV, looping at the end. The start is the
 * first poll. Options: file (required), speed (default 1), column (header
 * name or 1-based index, default 2), scale (a multiplier, default 1). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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

/* A parsed file, shared by the signals that replay the same column of the
 * same file at the same scale (the demo's and the soak's groups replay a
 * few files thousands of times). The key holds the file's identity and
 * modification time, so a changed file is parsed anew at the next reload.
 * The series is read only once parsed. */
struct shared_series {
	struct shared_series *next;
	char *key; /* NULL: not shared */
	unsigned refs;
	struct series series;
};

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shared_series *shared;

struct replay {
	struct shared_series *sh;
	double speed;
	bool started;
	int64_t start_ms;
};

static void shared_free(struct shared_series *sh)
{
	series_clear(&sh->series);
	free(sh->key);
	free(sh);
}

/* The shared series for KEY, NULL if none; with shared_lock held. */
static struct shared_series *shared_find(const char *key)
{
	struct shared_series *sh;

	for (sh = shared; sh && strcmp(sh->key, key) != 0; sh = sh->next)
		;
	return sh;
}

/* The shared series for KEY, with a reference taken; NULL if none. */
static struct shared_series *shared_get(const char *key)
{
	struct shared_series *sh;

	pthread_mutex_lock(&shared_lock);
	if ((sh = shared_find(key)))
		sh->refs++;
	pthread_mutex_unlock(&shared_lock);
	return sh;
}

/* Adds SH (one reference, its key and series set) unless another of its
 * key came first; returns the one kept, with a reference taken. */
static struct shared_series *shared_add(struct shared_series *sh)
{
	struct shared_series *o;

	pthread_mutex_lock(&shared_lock);
	if ((o = shared_find(sh->key))) {
		o->refs++;
	} else {
		sh->next = shared;
		shared = sh;
	}
	pthread_mutex_unlock(&shared_lock);
	if (o)
		shared_free(sh);
	return o ? o : sh;
}

static void shared_put(struct shared_series *sh)
{
	struct shared_series **pp;
	bool last;

	if (!sh)
		return;
	pthread_mutex_lock(&shared_lock);
	last = --sh->refs == 0;
	if (last)
		for (pp = &shared; *pp; pp = &(*pp)->next)
			if (*pp == sh) {
				*pp = sh->next;
				break;
			}
	pthread_mutex_unlock(&shared_lock);
	if (last)
		shared_free(sh);
}

static const char *const replay_keys[] = { "file", "speed", "column", "scale", NULL };

static int replay_init(struct source *s, const struct signal_conf *sc, char *err, size_t errlen)
{
	struct replay *p = source_priv(s);
	char *file = NULL, *column = NULL, *text = NULL, *key = NULL, why[256];
	struct shared_series *sh = NULL;
	struct stat st;
	double scale;
	size_t len = 0;
	int r;

	if ((r = source_opt_str(sc, "file", true, NULL, &file, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "column", false, "2", &column, err, errlen)) < 0 ||
	    (r = source_opt_num(sc, "speed", 1e-6, 1e9, 1, &p->speed, err, errlen)) < 0 ||
	    (r = source_opt_num(sc, "scale", -1e12, 1e12, 1, &scale, err, errlen)) < 0)
		goto out;
	/* The same file, unchanged, at the same column and scale: its series
	 * is already parsed. */
	if (stat(file, &st) == 0 && S_ISREG(st.st_mode) &&
	    asprintf(&key, "%ju:%ju:%jd:%jd.%09ld:%.17g:%s:%s", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino,
		     (intmax_t)st.st_size, (intmax_t)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, scale, column,
		     file) < 0)
		key = NULL;
	if (key && (p->sh = shared_get(key))) {
		r = 0;
		goto out;
	}
	/* A FIFO would block the loop: only a regular file is read. */
	r = file_read_all(file, 0, REPLAY_MAX_FILE, &text, &len, NULL);
	if (r < 0) {
		r = source_opt_error(sc, source_option(sc, "file"), err, errlen, "cannot read '%s': %s", file,
				     r == -EFBIG    ? "larger than 64 MiB"
				     : r == -EINVAL ? "not a regular file"
						    : strerror(-r));
		goto out;
	}
	if (!(sh = calloc(1, sizeof(*sh)))) {
		r = -ENOMEM;
		goto out;
	}
	r = series_parse(text, len, column, scale, &sh->series, why, sizeof(why));
	if (r < 0) {
		r = source_opt_error(sc, source_option(sc, "file"), err, errlen, "'%s': %s", file, why);
		free(sh);
		goto out;
	}
	sh->refs = 1;
	if (key) {
		sh->key = key;
		key = NULL;
		p->sh = shared_add(sh);
	} else {
		/* Not keyed (not a file stat() could see, or no memory for a
		 * key): this signal's own, never in the list. */
		p->sh = sh;
	}
out:
	free(key);
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
	source_complete_later(s, 0, series_at(&p->sh->series, (double)(now - p->start_ms) / 1000.0 * p->speed),
			      NULL);
	return 0;
}

static void replay_free(struct source *s)
{
	struct replay *p = source_priv(s);

	shared_put(p->sh);
	p->sh = NULL;
}

const struct source_ops source_replay = {
	.name = "replay",
	.options = replay_keys,
	.init = replay_init,
	.poll = replay_poll,
	.done = replay_free,
	.priv_size = sizeof(struct replay),
};
