/* Logging: a few printf-checked functions, in the manner of OpenBSD's log.h.
 *
 * Under systemd (stderr connected to the journal, or JOURNAL_STREAM set) the
 * messages go to the journal with structured fields; in the foreground they
 * go to stderr as plain lines. log_warn() appends strerror(errno);
 * log_warnx() does not. fatalx() never returns.
 *
 * The *_errno() functions take a negative errno, append ": <its text>" to
 * the message and return the errno, so that an error path logs once and
 * returns in one statement (as systemd's log_error_errno() does):
 *   return log_err_errno(r, "state: cannot write '%s'", path);
 * The logger formats the errno itself, safely from any thread; callers never
 * call strerror().
 *
 * A message names its component first and quotes user values:
 *   log_warnx("gce-mig: resize of '%s' failed: %s", name, why);
 * log_group() and log_group_errno() add the GROUP= field (and a prefix on
 * stderr). */
#ifndef AUTOSCALED_LOG_H
#define AUTOSCALED_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "autoscaled/driver.h"

enum log_target {
	LOG_TARGET_STDERR,
	LOG_TARGET_JOURNAL,
};

/* Picks the target: journal when JOURNAL_STREAM matches stderr and not in
 * the foreground. `verbose` enables log_debug(). */
void log_init(bool foreground, bool verbose);
void log_set_target(enum log_target t);
void log_set_verbose(bool verbose);
/* Whether a message at PRIORITY would be written: whether the work of
 * building one is worth doing. */
bool log_enabled(int priority);

void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_errx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Log with ": <strerror(-r)>" appended and return r. r is a negative errno;
 * a positive one is taken as its negation, so the result is negative unless
 * r is 0. */
int log_debug_errno(int r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int log_info_errno(int r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int log_notice_errno(int r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int log_warn_errno(int r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int log_err_errno(int r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
__attribute__((noreturn)) void fatalx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* With GROUP= (and an optional extra FIELD=value pair, e.g. "DECISION", json). */
void log_group(int priority, const char *group, const char *field, const char *value, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* The syslog priority of a driver's log level (include/autoscaled/driver.h):
 * the one mapping with which the driver host and the cloud code of the
 * sources log their messages. A level this daemon does not know is an
 * error. */
int log_driver_priority(enum autoscaled_log_level level);

/* log_group() without the extra field, with ": <strerror(-r)>" appended;
 * returns r as the other *_errno() functions do. */
int log_group_errno(int priority, const char *group, int r, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* One extra journal field: NAME (upper case, as the journal wants) and
 * its value. */
struct log_field {
	const char *name;
	const char *value;
};

#define LOG_MAX_FIELDS 8

/* A journal record as "NAME=value" strings, each malloc'ed: MESSAGE=,
 * PRIORITY=, SYSLOG_IDENTIFIER=, then MESSAGE_ID= and GROUP= when given,
 * then the extra fields in their order. */
struct log_record {
	char *v[LOG_MAX_FIELDS + 5];
	size_t n;
};

/* Builds the record of one message (GROUP and MESSAGE_ID may be NULL; a
 * field whose value is NULL is left out). Returns 0, -E2BIG for more than
 * LOG_MAX_FIELDS fields, or -ENOMEM; on error nothing is left allocated. */
int log_record_build(struct log_record *r, int priority, const char *group, const char *message_id,
		     const struct log_field *fields, size_t n_fields, const char *message);
void log_record_free(struct log_record *r);

/* Like log_group(), with a MESSAGE_ID= (NULL for none) and up to
 * LOG_MAX_FIELDS extra fields; GROUP may be NULL. */
void log_fields(int priority, const char *group, const char *message_id, const struct log_field *fields,
		size_t n_fields, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* log_fields() with ": <strerror(-r)>" appended; returns r as the other
 * *_errno() functions do. */
int log_fields_errno(int priority, const char *group, const char *message_id, const struct log_field *fields,
		     size_t n_fields, int r, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

#endif
