/* The configuration: reading files, wildcard includes and freeing; the
 * errors are collected by config-error.c. Lookups, names and durations are
 * in config-model.c.
 * The schema itself (which key means what) is in config-read.c and
 * config-profile.c; typed access to settings in config-get.c.
 *
 * Includes. libconfig 1.5 handles `@include "file"` itself: the line is
 * replaced by the file's text, read relative to the including unit's
 * directory. It has no wildcards, so an @include line whose name holds `*`,
 * `?` or `[` (the usual one names conf.d and every .conf in it) is taken out
 * of the text before libconfig sees it (replaced by blanks, so line numbers
 * stay right) and every file it matches, sorted by name, relative to the
 * directory of the file holding the line, is parsed as a unit of its
 * own. Units are merged at the top level: their `groups` lists are appended in
 * order and at most one of them may hold `agent`. That is the conf.d layout
 * operators expect (one file per group, dropped in and removed by packaging),
 * and it keeps every FILE:LINE exact. A directory that does not exist matches
 * no file, which is fine. Wildcard lines are recognised in the main file and
 * in files read through other wildcard lines; they must stand at the top
 * level.
 *
 * Errors are collected, not printed: each is "FILE:LINE: message", sorted by
 * file (in reading order) and line. The messages of this file:
 *
 *   syntax error | duplicate setting name | cannot open include file  (libconfig's own words)
 *   an @include with a wildcard must stand at the top level, outside any group or list
 *   cannot read 'PATH': REASON
 *   'PATH' is already read; a file may be included only once
 *   includes are nested more than 8 deep
 *   more than 20000 files are included
 *
 * and two lines without a line number: "PATH: cannot read: REASON" when the
 * main file cannot be read, and "PATH: too many errors; N more not shown"
 * after the first 1000.
 */
#include <errno.h>
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "config/config-private.h"
#include "base/region.h"
#include "base/file.h"
#include "config/schedule-tz.h"

/* A configuration file is written by an operator, but a mistake (pointing -c
 * at a log file) must not make the daemon read gigabytes. */
#define CONFIG_MAX_FILE_SIZE (64 * 1024 * 1024)
#define CONFIG_MAX_INCLUDE_DEPTH 8
#define CONFIG_MAX_UNITS 20000

/* --------------------------------------------------------------- paths */

static char *path_dir(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return NULL;
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

/* ---------------------------------------------------------------- freeing */

void config_free(struct config *c)
{
	if (!c)
		return;
	/* The strings and arrays below the groups are in the region; the
	 * profiles' zones are GLib's. */
	for (size_t i = 0; i < c->n_groups; i++)
		for (size_t j = 0; j < c->groups[i].n_profiles; j++)
			schedule_tz_close(c->groups[i].profiles[j].tz);
	free(c->groups);
	for (size_t i = 0; i < c->n_files; i++)
		free(c->files[i]);
	free(c->files);
	free(c->path);
	region_free(c->mem);
	free(c);
}

/* ---------------------------------------------------------------- reading */

struct wildcard {
	char *pattern;
	int line;
};

/* Reads a configuration file whole, through file_open_regular(): a FIFO
 * or a device named as the configuration or an include is refused at
 * once instead of blocking the daemon or `-n`. */
static int read_text(const char *path, char **ret, struct stat *st)
{
	return file_read_all(path, 0, CONFIG_MAX_FILE_SIZE, ret, NULL, st);
}

/* Calls FN for each `@include "NAME"` line of TEXT that libconfig would
 * take: at the start of a line, outside strings and comments. FN gets the
 * line's start (it may blank the line out), the name (not terminated), its
 * length, the line number and the nesting depth of groups and lists there.
 * Stops at the first negative return of FN and returns it. */
typedef int (*include_fn)(void *ctx, char *line_start, const char *name, size_t len, int line, int depth);

static int for_each_include(char *text, include_fn fn, void *ctx)
{
	enum { NORMAL, STRING, LINE_COMMENT, BLOCK_COMMENT } st = NORMAL;
	int depth = 0, line = 1, r;

	for (char *p = text; *p; p++) {
		if (p == text || p[-1] == '\n') {
			char *q = p + strspn(p, " \t");

			if (st == NORMAL && strncmp(q, "@include", 8) == 0 && (q[8] == ' ' || q[8] == '\t')) {
				char *open = q + 8 + strspn(q + 8, " \t"), *close;

				close = *open == '"' ? strchr(open + 1, '"') : NULL;
				if (close && (r = fn(ctx, p, open + 1, (size_t)(close - open - 1), line, depth)) < 0)
					return r;
			}
		}
		switch (st) {
		case NORMAL:
			if (*p == '"')
				st = STRING;
			else if (*p == '#' || (p[0] == '/' && p[1] == '/'))
				st = LINE_COMMENT;
			else if (p[0] == '/' && p[1] == '*')
				st = BLOCK_COMMENT, p++;
			else if (*p == '{' || *p == '(' || *p == '[')
				depth++;
			else if (*p == '}' || *p == ')' || *p == ']')
				depth--;
			break;
		case STRING:
			if (*p == '\\' && p[1] && p[1] != '\n')
				p++;
			else if (*p == '"')
				st = NORMAL;
			break;
		case LINE_COMMENT:
			if (*p == '\n')
				st = NORMAL;
			break;
		case BLOCK_COMMENT:
			if (p[0] == '*' && p[1] == '/')
				st = NORMAL, p++;
			break;
		}
		if (*p == '\n')
			line++;
	}
	return 0;
}

/* Blanks out the line that starts at P, keeping its newline, so that
 * libconfig does not see it and line numbers stay right. */
static void blank_line(char *p)
{
	for (; *p && *p != '\n'; p++)
		*p = ' ';
}

static bool has_wildcard(const char *name, size_t len)
{
	return strcspn(name, "*?[") < len;
}

/* libconfig opens a plain include itself, with a blocking fopen(3), so a
 * FIFO or a device anywhere in a chain of plain includes would hang the
 * reader. Before libconfig runs, each chain is walked here, the names
 * resolved as libconfig resolves them (against the unit's include
 * directory, nested ones too), each file opened through
 * file_open_regular(). A chain that holds a file that is not regular has
 * its error reported where that file is named, and its first @include line
 * is taken out of the unit, so libconfig never opens it. A file that cannot
 * be opened at all is left to libconfig, which says so in its own words. */
struct include_check {
	struct config_ctx *x;
	const char *dir; /* the unit's include directory */
	size_t file;     /* the file being scanned */
	int level;       /* of plain includes below the unit */
	bool bad;        /* the chain holds a file that is not regular */
	size_t *n_read;  /* files read for the unit's checks, bounded */
};

static int check_include(void *ctx, char *line_start, const char *name, size_t len, int line, int depth);

/* Walks the plain includes of the file at PATH (named at FROM_LINE of the
 * scanned file). Returns 0, or -ENOMEM. */
static int check_include_file(struct include_check *c, const char *path, int from_line)
{
	struct include_check sub = *c;
	char *text = NULL;
	struct stat st;
	int r;

	/* A file that includes itself twice reads 2^depth files: the same
	 * bound as for wildcard includes keeps that finite, for libconfig
	 * too, whose expansion is then not attempted. */
	if (++*c->n_read > CONFIG_MAX_UNITS) {
		if (*c->n_read == CONFIG_MAX_UNITS + 1)
			cfg_error_at(c->x, c->file, from_line, "more than %d files are included", CONFIG_MAX_UNITS);
		c->bad = true;
		return 0;
	}
	r = read_text(path, &text, &st);

	if (r == -EISDIR || r == -EINVAL) {
		cfg_error_at(c->x, c->file, from_line, "cannot read '%s': %s", path, file_strerror(r));
		c->bad = true;
		return 0;
	}
	if (r == -ENOMEM)
		return r;
	/* A missing or unreadable file, or one nested deeper than libconfig
	 * follows, is libconfig's to report. */
	if (r < 0 || c->level >= CONFIG_MAX_INCLUDE_DEPTH) {
		free(text);
		return 0;
	}
	sub.file = cfg_intern_file(c->x, path);
	sub.level = c->level + 1;
	sub.bad = false;
	r = for_each_include(text, check_include, &sub);
	free(text);
	c->bad |= sub.bad;
	return r;
}

static int check_include(void *ctx, char *line_start, const char *name, size_t len, int line, int depth)
{
	struct include_check *c = ctx;
	char *n = strndup(name, len), *path = NULL;
	bool was_bad = c->bad;
	int r;

	(void)depth;
	if (!n)
		return -ENOMEM;
	/* The unit's absolute names are rewritten for libconfig (see below);
	 * below the unit libconfig 1.5 puts the include directory in front of
	 * every name. */
	if (c->level == 0 || !c->dir)
		path = cfg_path_join(c->dir, n);
	else if (asprintf(&path, "%s/%s", c->dir, n) < 0)
		path = NULL;
	free(n);
	if (!path)
		return -ENOMEM;
	c->bad = false;
	r = check_include_file(c, path, line);
	free(path);
	/* Only the unit's own line is taken out: libconfig reads the files
	 * below it from disk. */
	if (c->level == 0 && c->bad)
		blank_line(line_start);
	c->bad |= was_bad;
	return r;
}

/* Sorts the unit's @include lines: those with a wildcard are taken out of
 * `text` (replaced by blanks, so line numbers stay right) and returned, to
 * be read as units of their own; plain ones are checked as above. */
struct take {
	struct config_ctx *x;
	struct include_check check;
	struct wildcard *v;
	size_t n;
};

static int take_include(void *ctx, char *line_start, const char *name, size_t len, int line, int depth)
{
	struct take *t = ctx;
	struct wildcard *nv;

	if (!has_wildcard(name, len))
		return check_include(&t->check, line_start, name, len, line, depth);
	nv = realloc(t->v, (t->n + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	t->v = nv;
	if (!(nv[t->n].pattern = strndup(name, len)))
		return -ENOMEM;
	nv[t->n++].line = line;
	if (depth > 0)
		cfg_error_at(t->x, t->check.file, line,
			     "an @include with a wildcard must stand at the top level, outside any group or list");
	blank_line(line_start);
	return 0;
}

static int take_wildcards(struct config_ctx *x, const char *dir, size_t file, char *text, struct wildcard **ret,
			  size_t *n_ret)
{
	size_t n_read = 0;
	struct take t = {.x = x, .check = {.x = x, .dir = dir, .file = file, .n_read = &n_read}};
	int r = for_each_include(text, take_include, &t);

	if (r < 0) {
		for (size_t i = 0; i < t.n; i++)
			free(t.v[i].pattern);
		free(t.v);
		return r;
	}
	*ret = t.v;
	*n_ret = t.n;
	return 0;
}

/* libconfig 1.5 puts the include directory in front of every @include
 * name, absolute ones too, which then are not found. Such names are
 * rewritten relative to the directory, counted on its real path so that a
 * symbolic link does not change where ".." leads. Lines keep their number. */
static int rewrite_absolute_includes(struct config_unit *u, char **text)
{
	char *real, *out = NULL;
	size_t depth = 0, size = 0, ups_len;
	const char *p = *text;
	char ups[3 * 64 + 1] = ""; /* A real path deeper than 64 is not found. */
	bool failed = false;
	FILE *f;

	if (!u->dir || !strstr(*text, "@include"))
		return 0;
	real = realpath(u->dir, NULL);
	if (!real)
		return 0; /* libconfig will say it cannot open the file. */
	for (char *c = real; *c; c++)
		depth += c[0] == '/' && c[1] != '\0';
	free(real);
	for (size_t i = 0; i < depth && i < 64; i++)
		strcat(ups, "../");
	ups_len = strlen(ups);
	f = open_memstream(&out, &size);
	if (!f)
		return -ENOMEM;
	while (*p && !failed) {
		const char *eol = strchrnul(p, '\n'), *q = p + strspn(p, " \t"), *open = NULL, *close = NULL;

		if (strncmp(q, "@include", 8) == 0 && (q[8] == ' ' || q[8] == '\t')) {
			open = q + 8 + strspn(q + 8, " \t");
			if (open[0] == '"' && open[1] == '/')
				close = memchr(open + 1, '"', (size_t)(eol - open - 1));
		}
		if (close) {
			void *v = realloc(u->abs, (u->n_abs + 1) * sizeof(*u->abs));
			size_t n = (size_t)(close - open - 2); /* without the quote and the slash */
			char *seen = malloc(ups_len + n + 1), *path = strndup(open + 1, n + 1);

			if (v)
				u->abs = v;
			if (!v || !seen || !path) {
				free(seen);
				free(path);
				failed = true;
				break;
			}
			memcpy(seen, ups, ups_len);
			memcpy(seen + ups_len, open + 2, n);
			seen[ups_len + n] = '\0';
			u->abs[u->n_abs].seen = seen;
			u->abs[u->n_abs++].path = path;
			fwrite(p, 1, (size_t)(open + 1 - p), f);
			fputs(seen, f);
			p = close;
		}
		fwrite(p, 1, (size_t)(eol - p) + (*eol == '\n'), f);
		p = *eol ? eol + 1 : eol;
	}
	if (fclose(f) != 0 || !out)
		failed = true;
	if (failed) {
		free(out);
		return -ENOMEM;
	}
	free(*text);
	*text = out;
	return 0;
}

static void unit_free(struct config_unit *u)
{
	for (size_t i = 0; i < u->n_abs; i++) {
		free(u->abs[i].seen);
		free(u->abs[i].path);
	}
	free(u->abs);
	free(u->dir);
	free(u);
}

/* Parses a unit's text with libconfig. A unit with a syntax error stays
 * listed but holds nothing, so its wildcard includes are still read and
 * their errors reported too. */
static void unit_parse(struct config_ctx *x, struct config_unit *u, const char *text)
{
	config_init(&u->lc);
	if (u->dir)
		config_set_include_dir(&u->lc, u->dir);
	x->unit = u;
	if (!config_read_string(&u->lc, text)) {
		const char *ef = config_error_file(&u->lc);
		size_t f = u->file;

		if (ef) {
			char *p = cfg_unit_file_name(u, ef);

			f = p ? cfg_intern_file(x, p) : u->file;
			free(p);
		}
		cfg_error_at(x, f, config_error_line(&u->lc), "%s", config_error_text(&u->lc));
		config_destroy(&u->lc);
		config_init(&u->lc);
	}
	/* Every plain include goes into the table of files read. */
	for (unsigned i = 0; u->lc.filenames && i < u->lc.num_filenames; i++) {
		char *p = cfg_unit_file_name(u, u->lc.filenames[i]);

		if (p)
			cfg_intern_file(x, p);
		free(p);
	}
}

struct seen_file {
	dev_t dev;
	ino_t ino;
};

struct loader {
	struct seen_file *seen;
	size_t n_seen;
};

static int load_unit(struct config_ctx *x, struct loader *ld, const char *path, int depth, size_t from_file,
		     int from_line);

static int load_wildcard(struct config_ctx *x, struct loader *ld, struct config_unit *u, size_t file,
			 const struct wildcard *w, int depth)
{
	char *pattern = cfg_path_join(u->dir, w->pattern);
	glob_t gl;
	int r;

	if (!pattern)
		return -ENOMEM;
	if (depth >= CONFIG_MAX_INCLUDE_DEPTH) {
		cfg_error_at(x, file, w->line, "includes are nested more than %d deep", CONFIG_MAX_INCLUDE_DEPTH);
		free(pattern);
		return 0;
	}
	r = glob(pattern, 0, NULL, &gl);
	free(pattern);
	if (r == GLOB_NOSPACE)
		return -ENOMEM;
	if (r != 0)
		return 0; /* No match, or an unreadable directory: no files. */
	for (size_t i = 0; i < gl.gl_pathc && r == 0; i++) {
		struct stat st;

		/* Only regular files: a conf.d may hold a backup directory. */
		if (stat(gl.gl_pathv[i], &st) == 0 && S_ISREG(st.st_mode))
			r = load_unit(x, ld, gl.gl_pathv[i], depth + 1, file, w->line);
	}
	globfree(&gl);
	return r;
}

/* Parses one unit, records it (when it parsed) and then the units of its
 * wildcard includes, depth first, so the order of units is reading order. */
static int load_unit(struct config_ctx *x, struct loader *ld, const char *path, int depth, size_t from_file,
		     int from_line)
{
	struct wildcard *wild = NULL;
	size_t n_wild = 0, file = cfg_intern_file(x, path);
	struct config_unit *u;
	char *text = NULL;
	struct stat st;
	int r;

	if (x->oom)
		return -ENOMEM;
	r = read_text(path, &text, &st);
	if (r < 0) {
		if (depth == 0)
			return r;
		cfg_error_at(x, from_file, from_line, "cannot read '%s': %s", path, file_strerror(r));
		return r == -ENOMEM ? r : 0;
	}
	for (size_t i = 0; i < ld->n_seen; i++) {
		if (ld->seen[i].dev == st.st_dev && ld->seen[i].ino == st.st_ino) {
			cfg_error_at(x, from_file, from_line, "'%s' is already read; a file may be included only once",
				     path);
			free(text);
			return 0;
		}
	}
	if (x->n_units >= CONFIG_MAX_UNITS) {
		cfg_error_at(x, from_file, from_line, "more than %d files are included", CONFIG_MAX_UNITS);
		free(text);
		return 0;
	}
	{
		struct seen_file *ns = realloc(ld->seen, (ld->n_seen + 1) * sizeof(*ns));
		struct config_unit **nu = realloc(x->units, (x->n_units + 1) * sizeof(*nu));

		if (ns)
			ld->seen = ns;
		if (nu)
			x->units = nu;
		u = calloc(1, sizeof(*u));
		if (!ns || !nu || !u) {
			free(u);
			free(text);
			return -ENOMEM;
		}
		ld->seen[ld->n_seen++] = (struct seen_file){ st.st_dev, st.st_ino };
	}
	u->file = file;
	u->dir = path_dir(path);
	r = take_wildcards(x, u->dir, file, text, &wild, &n_wild);
	if (r == 0)
		r = rewrite_absolute_includes(u, &text);
	if (r < 0) {
		unit_free(u);
	} else {
		x->units[x->n_units++] = u;
		unit_parse(x, u, text);
	}
	free(text);
	for (size_t i = 0; i < n_wild && r == 0; i++)
		r = load_wildcard(x, ld, u, file, &wild[i], depth);
	for (size_t i = 0; i < n_wild; i++)
		free(wild[i].pattern);
	free(wild);
	return r;
}

static void ctx_clear(struct config_ctx *x)
{
	for (size_t i = 0; i < x->n_units; i++) {
		config_destroy(&x->units[i]->lc);
		unit_free(x->units[i]);
	}
	free(x->units);
	cfg_errors_free(x);
	if (x->strings)
		g_hash_table_destroy(x->strings);
	x->strings = NULL;
}

int config_load(const char *path, struct config **ret, struct config_errors *errs)
{
	struct config_ctx x = { 0 };
	struct loader ld = { 0 };
	int r;

	if (errs)
		*errs = (struct config_errors){ 0 };
	x.c = calloc(1, sizeof(*x.c));
	if (!x.c)
		return -ENOMEM;
	x.c->path = strdup(path);
	x.c->mem = region_new();
	if (!x.c->path || !x.c->mem) {
		config_free(x.c);
		return -ENOMEM;
	}
	x.strings = g_hash_table_new(g_str_hash, g_str_equal);
	r = load_unit(&x, &ld, path, 0, 0, 0);
	free(ld.seen);
	if (r < 0 && r != -ENOMEM && x.n_units == 0) {
		/* The main file itself cannot be read: no line to point at. */
		if (errs && (errs->v = calloc(2, sizeof(char *))) &&
		    asprintf(&errs->v[0], "%s: cannot read: %s", path, file_strerror(r)) >= 0)
			errs->n = 1;
		ctx_clear(&x);
		config_free(x.c);
		return r;
	}
	if (r == 0)
		cfg_read_units(&x);
	if (r == 0 && x.oom)
		r = -ENOMEM;
	if (r == 0 && x.n_errs > 0) {
		cfg_errors_export(&x, errs);
		r = -EINVAL;
	}
	ctx_clear(&x);
	if (r < 0) {
		config_free(x.c);
		return r;
	}
	*ret = x.c;
	return 0;
}
