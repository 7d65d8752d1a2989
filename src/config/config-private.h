/* Internals shared by the files of the configuration, from the bottom up:
 * config-error.c (the files read, errors, near misses), config-get.c (typed
 * access to settings), config-read.c, config-profile.c and config-notify.c
 * (the schema: turning libconfig settings into the structs of config.h)
 * and config-load.c (reading files, includes, freeing). Nothing else includes
 * this header. Its functions are prefixed cfg_, as libconfig owns config_. */
#ifndef AUTOSCALED_CONFIG_PRIVATE_H
#define AUTOSCALED_CONFIG_PRIVATE_H

#include <libconfig.h>
#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"

/* One file parsed by libconfig on its own: the main file, or a file matched
 * by a wildcard @include. Plain @include files are part of their unit. */
struct config_unit {
	config_t lc;
	size_t file;     /* index of the unit's own path in config.files */
	char *dir;       /* directory that relative includes are read from, NULL = cwd */
	const char *raw; /* cache of the last libconfig file name interned */
	size_t raw_file;
	/* Absolute @include names, rewritten relative to `dir` for libconfig:
	 * the name libconfig sees, and the user's. */
	struct {
		char *seen;
		char *path;
	} *abs;
	size_t n_abs;
};

struct config_error {
	size_t file; /* index into config.files */
	int line;
	size_t seq;  /* order of discovery, to keep the sort stable */
	char *msg;
};

struct config_ctx {
	struct config *c;
	struct config_unit **units;
	size_t n_units;
	struct config_unit *unit; /* the unit whose settings are being read */
	struct config_error *errs;
	size_t n_errs;
	bool oom;
	/* The strings already in the region, so that a value written in every
	 * group (a source, an option's key, a file) is kept once: at 10,000
	 * groups most strings are such repeats. A GHashTable; NULL copies. */
	void *strings;
};

/* Blocks of the configuration being read, from its region (x->c->mem):
 * everything config_free() frees but the struct, its groups and its files.
 * Zeroed; NULL with x->oom set on ENOMEM. None is freed on its own, and
 * none may be written to: cfg_strdup() gives equal strings one copy. */
void *cfg_alloc(struct config_ctx *x, size_t n, size_t size);
char *cfg_strdup(struct config_ctx *x, const char *s);
char *cfg_printf(struct config_ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reports an error at a setting of the current unit, or at a file and line. */
/* config-error.c: the files read, the errors found, near misses. */
size_t cfg_intern_file(struct config_ctx *x, const char *path);
/* DIR/NAME, or NAME when it is absolute or there is no directory. */
char *cfg_path_join(const char *dir, const char *name);
/* The name of a file libconfig read in unit u, as messages print it. */
char *cfg_unit_file_name(const struct config_unit *u, const char *raw);
/* Moves the errors into `out` as "FILE:LINE: message" lines, sorted by file
 * (in the order the files were read) and line. */
void cfg_errors_export(struct config_ctx *x, struct config_errors *out);
void cfg_errors_free(struct config_ctx *x);
void cfg_error(struct config_ctx *x, const config_setting_t *s, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void cfg_error_at(struct config_ctx *x, size_t file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The index in config.files of the file a setting came from, and of a name
 * already in the table (as stored in the structs' `file` fields). */
size_t cfg_setting_file(struct config_ctx *x, const config_setting_t *s);
size_t cfg_file_index(struct config_ctx *x, const char *file);
const char *cfg_file_name(struct config_ctx *x, const config_setting_t *s);

/* Returns the known word closest to `word` by edit distance when it is close
 * enough to be a likely typo, else NULL. */
const char *cfg_near_miss(const char *word, const char *const *known, size_t n_known);

/* Typed getters (config-get.c). Each looks up `key` in the group `s` and
 * returns 1 when it is set and valid (storing it), 0 when it is absent
 * (leaving *out alone) and -1 after reporting why it is not valid. */
int cfg_get_string(struct config_ctx *x, const config_setting_t *s, const char *key, char **out);
int cfg_get_bool(struct config_ctx *x, const config_setting_t *s, const char *key, bool *out);
int cfg_get_count(struct config_ctx *x, const config_setting_t *s, const char *key, int *out);
int cfg_get_number(struct config_ctx *x, const config_setting_t *s, const char *key, double *out);
int cfg_get_positive(struct config_ctx *x, const config_setting_t *s, const char *key, double *out);
int cfg_get_duration(struct config_ctx *x, const config_setting_t *s, const char *key, int64_t lo, int64_t hi,
		 int64_t *out);

struct enum_name {
	const char *name;
	int value;
};
int cfg_get_enum(struct config_ctx *x, const config_setting_t *s, const char *key, const struct enum_name *names,
	     size_t n, int *out);

/* Reports a missing key at its parent and returns -1. */
int cfg_need(struct config_ctx *x, const config_setting_t *s, const char *key);

/* Reports every member of `s` that is not in `keys`, with a near miss. */
void cfg_check_keys(struct config_ctx *x, const config_setting_t *s, const char *const *keys, size_t n);

/* The list `key` of groups: NULL when absent or invalid (reported), else the
 * setting with *n entries, each a group (others are reported and skipped by
 * cfg_list_group()). */
const config_setting_t *cfg_get_list(struct config_ctx *x, const config_setting_t *s, const char *key, size_t max,
				 size_t *n);
const config_setting_t *cfg_list_group(struct config_ctx *x, const config_setting_t *list, size_t i);

/* Checks a group's `key` is a group { ... }; NULL when absent or reported. */
const config_setting_t *cfg_get_group(struct config_ctx *x, const config_setting_t *s, const char *key);

/* Free-form options of a driver or source: scalars or lists of strings. */
int cfg_get_options(struct config_ctx *x, const config_setting_t *s, const char *key, struct options *o);

/* Reads a name (group, signal, profile): 1 to 64 letters, digits, '.', '_'
 * or '-', starting with a letter or digit, as names go into file names,
 * metric labels and URLs. */
int cfg_get_name(struct config_ctx *x, const config_setting_t *s, const char *what, char **out);
/* Whether s is such a name (an agent's name of the cluster section too). */
bool cfg_name_valid(const char *s);

/* Formats a duration as the messages print it: "90s", "1500ms". */
const char *cfg_format_duration(char buf[32], int64_t ms);

/* The one table of names of each enum the configuration reads; the
 * *_name() functions of config.h look them up (config-model.c). */
#define N_AGGREGATIONS 5
extern const struct enum_name cfg_aggregations[N_AGGREGATIONS];
#define N_SIGNAL_TYPES 2
extern const struct enum_name cfg_signal_types[N_SIGNAL_TYPES];
#define N_OPERATORS 6
extern const struct enum_name cfg_operators[N_OPERATORS];
#define N_ON_MISSINGS 3
extern const struct enum_name cfg_on_missings[N_ON_MISSINGS];
#define N_WARM_STATES 3
extern const struct enum_name cfg_warm_states[N_WARM_STATES];

/* Reads a group's profiles (and forms its default profile) and its
 * behavior; the group's signals are read already (config-profile.c). */
void cfg_read_profiles(struct config_ctx *x, const config_setting_t *s, struct group_conf *g);
void cfg_read_behavior(struct config_ctx *x, const config_setting_t *s, struct group_conf *g);

/* Reads the agent section and the groups of every unit into x->c. */
void cfg_read_units(struct config_ctx *x);

/* Reads `notifications` and `hooks` of an agent or group section into *n,
 * taking each from `defaults` (the agent's; NULL for the agent itself) when
 * the section does not set it (config-notify.c). */
void cfg_read_notify(struct config_ctx *x, const config_setting_t *s, struct notify_conf *n,
			const struct notify_conf *defaults);
/* An argv as hooks take it: a list of 1 to 64 strings, the
 * first an absolute path; returns as the getters do. */
int cfg_get_argv(struct config_ctx *x, const config_setting_t *s, const char *key, char ***out, size_t *n_out);
void cfg_notify_defaults(struct notify_conf *n);

/* Reads the top-level `cluster` section into x->c->cluster, and a group's
 * `owner` pin, which needs it (config-cluster.c). */
void cfg_read_cluster(struct config_ctx *x);
void cfg_read_owner(struct config_ctx *x, const config_setting_t *s, struct group_conf *g);

#endif
