/* Logging to the journal or to stderr; see log.h. */
#include "log/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <syslog.h>
#include <unistd.h>

#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

static enum log_target target = LOG_TARGET_STDERR;
static bool verbose_on;

/* True when stderr is the journal stream systemd gave us. */
static bool stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	struct stat st;
	unsigned long long dev, ino;

	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
		return false;
	if (fstat(STDERR_FILENO, &st) < 0)
		return false;
	return st.st_dev == (dev_t)dev && st.st_ino == (ino_t)ino;
}

void log_init(bool foreground, bool verbose)
{
	verbose_on = verbose;
	target = (!foreground && stderr_is_journal()) ? LOG_TARGET_JOURNAL : LOG_TARGET_STDERR;
}

void log_set_target(enum log_target t)
{
	target = t;
}

void log_set_verbose(bool verbose)
{
	verbose_on = verbose;
}

bool log_enabled(int priority)
{
	return priority != LOG_DEBUG || verbose_on;
}

static const char *prio_word(int prio)
{
	switch (prio) {
	case LOG_DEBUG: return "debug: ";
	case LOG_WARNING: return "warning: ";
	case LOG_ERR: return "error: ";
	case LOG_CRIT: return "fatal: ";
	default: return "";
	}
}

/* Rewrites control characters in MSG (of size LEN) as escapes (a newline
 * as the two characters "\n", ESC as "\x1b"), in place, cutting what no
 * longer fits. Messages quote values a peer controls (a request path with
 * %0a, a command's output, a driver's error text): a newline in them must
 * never start a line of its own that reads as the daemon's. */
static void escape_controls(char *msg, size_t len)
{
	char out[2048];
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)msg; *p; p++) {
		char e[5];
		size_t n;

		if (*p >= 0x20 && *p != 0x7f) {
			e[0] = (char)*p;
			n = 1;
		} else if (*p == '\n' || *p == '\r' || *p == '\t') {
			e[0] = '\\';
			e[1] = *p == '\n' ? 'n' : *p == '\r' ? 'r' : 't';
			n = 2;
		} else {
			snprintf(e, sizeof(e), "\\x%02x", *p);
			n = 4;
		}
		if (o + n >= sizeof(out) || o + n >= len)
			break;
		memcpy(out + o, e, n);
		o += n;
	}
	out[o] = '\0';
	memcpy(msg, out, o + 1);
}

void log_record_free(struct log_record *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i]);
	r->n = 0;
}

static int record_add(struct log_record *r, const char *name, const char *value)
{
	if (r->n >= sizeof(r->v) / sizeof(r->v[0]))
		return -E2BIG;
	if (asprintf(&r->v[r->n], "%s=%s", name, value) < 0)
		return -ENOMEM;
	r->n++;
	return 0;
}

int log_record_build(struct log_record *r, int priority, const char *group, const char *message_id,
		     const struct log_field *fields, size_t n_fields, const char *message)
{
	char prio[16];
	int ret;

	r->n = 0;
	if (n_fields > LOG_MAX_FIELDS)
		return -E2BIG;
	snprintf(prio, sizeof(prio), "%d", priority);
	if ((ret = record_add(r, "MESSAGE", message)) < 0 || (ret = record_add(r, "PRIORITY", prio)) < 0 ||
	    (ret = record_add(r, "SYSLOG_IDENTIFIER", "autoscaled")) < 0 ||
	    (message_id && (ret = record_add(r, "MESSAGE_ID", message_id)) < 0) ||
	    (group && (ret = record_add(r, "GROUP", group)) < 0))
		goto fail;
	for (size_t i = 0; i < n_fields; i++)
		if (fields[i].value && (ret = record_add(r, fields[i].name, fields[i].value)) < 0)
			goto fail;
	return 0;
fail:
	log_record_free(r);
	return ret;
}

/* Sends a record to the journal. Without memory for the record the
 * message still goes, bare: it may be the one that says what failed. */
static void journal_send(int prio, const char *group, const char *message_id, const struct log_field *fields,
			 size_t n_fields, const char *msg)
{
	struct log_record r;
	struct iovec iov[sizeof(r.v) / sizeof(r.v[0])];

	if (log_record_build(&r, prio, group, message_id, fields, n_fields, msg) < 0) {
		sd_journal_send("MESSAGE=%s", msg, "PRIORITY=%d", prio, "SYSLOG_IDENTIFIER=autoscaled", NULL);
		return;
	}
	for (size_t i = 0; i < r.n; i++)
		iov[i] = (struct iovec){.iov_base = r.v[i], .iov_len = strlen(r.v[i])};
	sd_journal_sendv(iov, (int)r.n);
	log_record_free(&r);
}

static void vlog(int prio, const char *group, const char *message_id, const struct log_field *fields,
		 size_t n_fields, const char *suffix, const char *fmt, va_list ap)
{
	char msg[2048];
	int saved = errno;

	if (!log_enabled(prio))
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	escape_controls(msg, sizeof(msg));
	if (suffix) {
		size_t n = strlen(msg);

		snprintf(msg + n, sizeof(msg) - n, "%s", suffix);
	}
	if (target == LOG_TARGET_JOURNAL) {
		journal_send(prio, group, message_id, fields, n_fields, msg);
	} else {
		if (group)
			fprintf(stderr, "%s%s: %s\n", prio_word(prio), group, msg);
		else
			fprintf(stderr, "%s%s\n", prio_word(prio), msg);
		fflush(stderr);
	}
	errno = saved;
}

#define DEFINE_LOG(fn, prio)                                \
	void fn(const char *fmt, ...)                       \
	{                                                   \
		va_list ap;                                 \
		va_start(ap, fmt);                          \
		vlog(prio, NULL, NULL, NULL, 0, NULL, fmt, ap); \
		va_end(ap);                                 \
	}

DEFINE_LOG(log_debug, LOG_DEBUG)
DEFINE_LOG(log_info, LOG_INFO)
DEFINE_LOG(log_notice, LOG_NOTICE)
DEFINE_LOG(log_warnx, LOG_WARNING)
DEFINE_LOG(log_errx, LOG_ERR)

/* ": <text of errno e>" in BUF. strerror_r() rather than strerror(): the
 * drivers and the cloud sources log from their worker threads. */
static const char *errno_suffix(int e, char *buf, size_t len)
{
	char text[128];

	snprintf(buf, len, ": %s", strerror_r(e < 0 ? -e : e, text, sizeof(text)));
	return buf;
}

void log_warn(const char *fmt, ...)
{
	char suffix[160];
	va_list ap;

	errno_suffix(errno, suffix, sizeof(suffix));
	va_start(ap, fmt);
	vlog(LOG_WARNING, NULL, NULL, NULL, 0, suffix, fmt, ap);
	va_end(ap);
}

static int vlog_errno(int prio, const char *group, const char *message_id, const struct log_field *fields,
		      size_t n_fields, int r, const char *fmt, va_list ap)
{
	char suffix[160];

	vlog(prio, group, message_id, fields, n_fields, errno_suffix(r, suffix, sizeof(suffix)), fmt, ap);
	return r > 0 ? -r : r;
}

#define DEFINE_LOG_ERRNO(fn, prio)                                     \
	int fn(int r, const char *fmt, ...)                            \
	{                                                              \
		va_list ap;                                            \
		va_start(ap, fmt);                                     \
		r = vlog_errno(prio, NULL, NULL, NULL, 0, r, fmt, ap); \
		va_end(ap);                                            \
		return r;                                              \
	}

DEFINE_LOG_ERRNO(log_debug_errno, LOG_DEBUG)
DEFINE_LOG_ERRNO(log_info_errno, LOG_INFO)
DEFINE_LOG_ERRNO(log_notice_errno, LOG_NOTICE)
DEFINE_LOG_ERRNO(log_warn_errno, LOG_WARNING)
DEFINE_LOG_ERRNO(log_err_errno, LOG_ERR)

int log_driver_priority(enum autoscaled_log_level level)
{
	static const int prio[] = {
		[AUTOSCALED_LOG_DEBUG] = LOG_DEBUG,     [AUTOSCALED_LOG_INFO] = LOG_INFO,
		[AUTOSCALED_LOG_NOTICE] = LOG_NOTICE,   [AUTOSCALED_LOG_WARNING] = LOG_WARNING,
		[AUTOSCALED_LOG_ERROR] = LOG_ERR,
	};

	return (unsigned)level < sizeof(prio) / sizeof(prio[0]) ? prio[level] : LOG_ERR;
}

int log_group_errno(int priority, const char *group, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	r = vlog_errno(priority, group, NULL, NULL, 0, r, fmt, ap);
	va_end(ap);
	return r;
}

void fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_CRIT, NULL, NULL, NULL, 0, NULL, fmt, ap);
	va_end(ap);
	exit(EXIT_FAILURE);
}

void log_group(int priority, const char *group, const char *field, const char *value, const char *fmt, ...)
{
	va_list ap;

	struct log_field f = {field, value};

	va_start(ap, fmt);
	vlog(priority, group, NULL, &f, field && value ? 1 : 0, NULL, fmt, ap);
	va_end(ap);
}

void log_fields(int priority, const char *group, const char *message_id, const struct log_field *fields,
		size_t n_fields, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(priority, group, message_id, fields, n_fields, NULL, fmt, ap);
	va_end(ap);
}

int log_fields_errno(int priority, const char *group, const char *message_id, const struct log_field *fields,
		     size_t n_fields, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	r = vlog_errno(priority, group, message_id, fields, n_fields, r, fmt, ap);
	va_end(ap);
	return r;
}
