/* Trace readers: see trace.h. Input is read in chunks through the
 * decompressor the first bytes call for, cut into lines (or, for the nasa
 * format whose 1.2 million numbers sit on one line, into words), and each
 * format turns its rows into demand segments as soon as they are settled. */
#include <bzlib.h>
#include <errno.h>
#include <fcntl.h>
#include <lzma.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "base/iso8601.h"
#include "log/log.h"
#include "simulation/trace.h"

/* Index 0 of the NASA series is 1995-07-01 00:00:01 EDT (SOURCES.md). */
#define NASA_START_MS (INT64_C(804571201) * 1000)
/* 9999-12-31T23:59:59Z in Unix seconds, the last timestamp taken. */
#define MAX_EPOCH_S 253402300799.0
/* A csv time above this many is in milliseconds, not seconds: 1e11 s is
 * the year 5138, 1e11 ms is 1973. */
#define CSV_MS_THRESHOLD 1e11
/* Compressed bytes read at once. */
#define RAW_CHUNK 65536
/* An xz stream may ask for a large dictionary; more than this is refused
 * rather than allocated. */
#define XZ_MEMLIMIT (256u * 1024 * 1024)

enum codec {
	CODEC_NONE,
	CODEC_GZIP,
	CODEC_BZIP2,
	CODEC_XZ,
};

struct input {
	int fd; /* -1: reading from mem */
	const unsigned char *mem;
	size_t mem_len, mem_off;
	enum codec codec;
	bool codec_live;
	z_stream z;
	bz_stream bz;
	lzma_stream xz;
	unsigned char raw[RAW_CHUNK];
	size_t raw_len, raw_off;
	bool raw_eof;
	/* Decompressed bytes: a line is cut from [out_off, out_len). */
	char out[2 * TRACE_MAX_LINE];
	size_t out_len, out_off;
	bool eof;
};

/* A pending change of the demand at t_ms (swf, requests). */
struct event {
	int64_t t_ms;
	int64_t delta;
};

struct trace_reader {
	enum trace_format fmt;
	char *name;
	struct input in;
	long line; /* lines (nasa: values) read so far */
	int state; /* 0 reading, 1 at the end, < 0 the error returned */
	bool in_eof;

	/* Settled segments not yet returned. */
	struct trace_seg outq[4];
	size_t outq_head, outq_n;

	/* series */
	bool series;
	const double *sv;
	size_t sn, si;
	int64_t s_start, s_res;

	/* nasa: the next value's index and a run of zeros being counted. */
	int64_t nasa_i;
	int64_t zero_run;

	/* azure-llm: the second being counted. */
	bool have_sec;
	int64_t sec_ms;
	double count;

	/* csv, bitbrains: the last row, held until the next one. */
	bool have_row, past_header;
	int64_t row_ms, last_interval_ms;
	double row_v;

	/* swf, requests: a min-heap of demand changes, the level since
	 * sweep_ms, and the horizon up to which no later row can add one. */
	struct event *ev;
	size_t ev_n, ev_cap;
	int64_t level, sweep_ms, horizon_ms;
	bool swept;
	int64_t swf_base_ms;
};

static void set_error(struct trace_reader *r, int err)
{
	if (r->state == 0)
		r->state = err;
}

static int detect_codec(const unsigned char *p, size_t n, enum codec *ret)
{
	static const unsigned char xz_magic[6] = {0xfd, '7', 'z', 'X', 'Z', 0x00};

	*ret = CODEC_NONE;
	if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b)
		*ret = CODEC_GZIP;
	else if (n >= 3 && p[0] == 'B' && p[1] == 'Z' && p[2] == 'h')
		*ret = CODEC_BZIP2;
	else if (n >= 6 && memcmp(p, xz_magic, 6) == 0)
		*ret = CODEC_XZ;
	return 0;
}

/* Refills raw[] when it is used up. 0 or -errno. */
static int raw_fill(struct input *in)
{
	if (in->raw_off < in->raw_len || in->raw_eof)
		return 0;
	in->raw_off = in->raw_len = 0;
	if (in->fd < 0) {
		size_t k = in->mem_len - in->mem_off;

		if (k > RAW_CHUNK)
			k = RAW_CHUNK;
		memcpy(in->raw, in->mem + in->mem_off, k);
		in->mem_off += k;
		in->raw_len = k;
	} else {
		for (;;) {
			ssize_t k = read(in->fd, in->raw, RAW_CHUNK);

			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0)
				return -errno;
			in->raw_len = (size_t)k;
			break;
		}
	}
	if (in->raw_len == 0)
		in->raw_eof = true;
	return 0;
}

static int codec_start(struct input *in)
{
	switch (in->codec) {
	case CODEC_NONE:
		return 0;
	case CODEC_GZIP:
		memset(&in->z, 0, sizeof(in->z));
		/* 15 + 16: a gzip header, with the largest window. */
		if (inflateInit2(&in->z, 15 + 16) != Z_OK)
			return -ENOMEM;
		break;
	case CODEC_BZIP2:
		memset(&in->bz, 0, sizeof(in->bz));
		if (BZ2_bzDecompressInit(&in->bz, 0, 0) != BZ_OK)
			return -ENOMEM;
		break;
	case CODEC_XZ:
		in->xz = (lzma_stream)LZMA_STREAM_INIT;
		if (lzma_stream_decoder(&in->xz, XZ_MEMLIMIT, LZMA_CONCATENATED) != LZMA_OK)
			return -ENOMEM;
		break;
	}
	in->codec_live = true;
	return 0;
}

static void codec_end(struct input *in)
{
	if (!in->codec_live)
		return;
	switch (in->codec) {
	case CODEC_NONE:
		break;
	case CODEC_GZIP:
		inflateEnd(&in->z);
		break;
	case CODEC_BZIP2:
		BZ2_bzDecompressEnd(&in->bz);
		break;
	case CODEC_XZ:
		lzma_end(&in->xz);
		break;
	}
	in->codec_live = false;
}

/* Decompresses into dst[0..cap): the bytes written (> 0), 0 at the end
 * of the data, or -EIO for a corrupt or truncated stream, -ENOMEM. A gzip
 * or bzip2 file of several members (as `cat a.gz b.gz` makes) is read
 * through. */
static ssize_t codec_read(struct input *in, char *dst, size_t cap)
{
	for (;;) {
		size_t avail, got = 0, left = 0;
		bool member_end = false;
		int r = raw_fill(in);

		if (r < 0)
			return r;
		avail = in->raw_len - in->raw_off;
		if (in->codec == CODEC_NONE) {
			if (avail > cap)
				avail = cap;
			memcpy(dst, in->raw + in->raw_off, avail);
			in->raw_off += avail;
			return (ssize_t)avail;
		}
		if (!in->codec_live) {
			/* Between members: only the end of the file may follow. */
			if (avail == 0)
				return 0;
			r = codec_start(in);
			if (r < 0)
				return r;
		}
		switch (in->codec) {
		case CODEC_NONE:
			break;
		case CODEC_GZIP:
			if (avail == 0)
				return -EIO; /* the file ends inside a member */
			in->z.next_in = in->raw + in->raw_off;
			in->z.avail_in = (uInt)avail;
			in->z.next_out = (Bytef *)dst;
			in->z.avail_out = (uInt)cap;
			r = inflate(&in->z, Z_NO_FLUSH);
			if (r != Z_OK && r != Z_STREAM_END && r != Z_BUF_ERROR)
				return r == Z_MEM_ERROR ? -ENOMEM : -EIO;
			left = in->z.avail_in;
			got = cap - in->z.avail_out;
			member_end = r == Z_STREAM_END;
			break;
		case CODEC_BZIP2:
			if (avail == 0)
				return -EIO;
			in->bz.next_in = (char *)in->raw + in->raw_off;
			in->bz.avail_in = (unsigned)avail;
			in->bz.next_out = dst;
			in->bz.avail_out = (unsigned)cap;
			r = BZ2_bzDecompress(&in->bz);
			if (r != BZ_OK && r != BZ_STREAM_END)
				return r == BZ_MEM_ERROR ? -ENOMEM : -EIO;
			left = in->bz.avail_in;
			got = cap - in->bz.avail_out;
			member_end = r == BZ_STREAM_END;
			break;
		case CODEC_XZ: {
			lzma_ret x;

			in->xz.next_in = in->raw + in->raw_off;
			in->xz.avail_in = avail;
			in->xz.next_out = (uint8_t *)dst;
			in->xz.avail_out = cap;
			/* Concatenated streams end only when told the input has. */
			x = lzma_code(&in->xz, in->raw_eof ? LZMA_FINISH : LZMA_RUN);
			if (x == LZMA_MEM_ERROR || x == LZMA_MEMLIMIT_ERROR)
				return -ENOMEM;
			if (x != LZMA_OK && x != LZMA_STREAM_END)
				return -EIO;
			left = in->xz.avail_in;
			got = cap - in->xz.avail_out;
			member_end = x == LZMA_STREAM_END;
			break;
		}
		}
		in->raw_off += avail - left;
		if (member_end)
			codec_end(in);
		if (got > 0)
			return (ssize_t)got;
		if (!member_end && left == avail && (in->codec != CODEC_XZ || in->raw_eof))
			return -EIO; /* no progress: a truncated stream */
	}
}

/* Makes [out_off, out_len) as long as it can get: moves the unread bytes
 * to the front and decompresses more behind them. 0 or -errno. */
static int out_fill(struct input *in)
{
	ssize_t k;

	if (in->eof)
		return 0;
	if (in->out_off > 0) {
		memmove(in->out, in->out + in->out_off, in->out_len - in->out_off);
		in->out_len -= in->out_off;
		in->out_off = 0;
	}
	while (in->out_len < sizeof(in->out)) {
		k = codec_read(in, in->out + in->out_len, sizeof(in->out) - in->out_len);
		if (k < 0)
			return (int)k;
		if (k == 0) {
			in->eof = true;
			break;
		}
		in->out_len += (size_t)k;
	}
	return 0;
}

static bool is_word_sep(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* The next line (WORDS: the next blank-separated word) as *tok, *len,
 * valid until the next call; a line loses its "\r\n" or "\n". 1, 0 at the
 * end, -E2BIG for a line longer than TRACE_MAX_LINE, or the input's
 * error. */
static int next_token(struct input *in, bool words, const char **tok, size_t *len)
{
	for (bool refilled = false;; refilled = true) {
		char *p = in->out + in->out_off, *end = in->out + in->out_len, *q;

		if (words)
			while (p < end && is_word_sep(*p))
				p++;
		in->out_off = (size_t)(p - in->out);
		for (q = p; q < end && !(words ? is_word_sep(*q) : *q == '\n'); q++)
			;
		if (q < end || (in->eof && p < end) || (refilled && in->eof)) {
			if (p == end)
				return 0;
			if ((size_t)(q - p) > TRACE_MAX_LINE)
				return -E2BIG;
			*tok = p;
			*len = (size_t)(q - p);
			in->out_off = (size_t)(q - in->out) + (q < end);
			if (!words && *len > 0 && p[*len - 1] == '\r')
				(*len)--;
			return 1;
		}
		if (in->out_len - in->out_off >= TRACE_MAX_LINE)
			return -E2BIG;
		if (in->eof)
			return 0;
		{
			int r = out_fill(in);

			if (r < 0)
				return r;
		}
	}
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int parse_double(const char **p, const char *end, double *ret)
{
	char buf[64];
	size_t len = 0;
	char *e;

	while (*p + len < end && len < sizeof(buf) - 1 && strchr("0123456789+-.eE", (*p)[len]) && (*p)[len])
		len++;
	if (len == 0)
		return -EINVAL;
	memcpy(buf, *p, len);
	buf[len] = '\0';
	errno = 0;
	*ret = strtod(buf, &e);
	if (e != buf + len || errno != 0 || !isfinite(*ret))
		return -EINVAL;
	*p += len;
	return 0;
}


static void emit(struct trace_reader *r, int64_t start_ms, int64_t end_ms, double v)
{
	if (end_ms <= start_ms)
		return;
	r->outq[(r->outq_head + r->outq_n) % 4] = (struct trace_seg){.start_ms = start_ms, .end_ms = end_ms, .v = v};
	r->outq_n++;
}

/* Reads the next line, counting it: 1, 0 at the end, or an error (logged). */
static int read_line(struct trace_reader *r, bool words, const char **tok, size_t *len)
{
	int k = next_token(&r->in, words, tok, len);

	if (k > 0)
		r->line++;
	else if (k == -E2BIG)
		log_warnx("trace: '%s':%ld: %s longer than %d bytes", r->name, r->line + 1, words ? "value" : "line",
			  TRACE_MAX_LINE);
	else if (k == -EIO)
		log_warnx("trace: '%s': corrupt or truncated compressed data", r->name);
	else if (k == -ENOMEM)
		log_warnx("trace: '%s': out of memory decompressing (or an xz dictionary beyond %u MiB)", r->name,
			  XZ_MEMLIMIT >> 20);
	else if (k < 0)
		log_warn_errno(k, "trace: cannot read '%s'", r->name);
	return k;
}

static int bad_row(struct trace_reader *r, const char *what)
{
	log_warnx("trace: '%s':%ld: %s", r->name, r->line, what);
	return -EINVAL;
}

static bool blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!is_word_sep(s[i]))
			return false;
	return true;
}

static const char *skip_blanks(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

/* One step of a format: reads rows until it has settled at least one
 * segment (queued with emit()) or reached the end. 0, or an error. */

static int step_series(struct trace_reader *r)
{
	for (; r->si < r->sn; r->si++)
		if (!isnan(r->sv[r->si]) && r->sv[r->si] >= 0) {
			int64_t a = r->s_start + (int64_t)r->si * r->s_res;

			emit(r, a, a + r->s_res, r->sv[r->si]);
			r->si++;
			return 0;
		}
	r->in_eof = true;
	return 0;
}

/* A run of zeros is emitted when it ends, as zero demand or, when it is
 * an hour or longer, as the outage it is: the full NASA series holds the
 * Hurricane Erin shutdown as 135,851 zeros (SOURCES.md), and a busy web
 * server does not see an hour without a single request (at night the rate
 * is still about 0.2/s). */
static void nasa_flush_zeros(struct trace_reader *r)
{
	int64_t a = NASA_START_MS + (r->nasa_i - r->zero_run) * 1000;

	if (r->zero_run > 0 && r->zero_run < TRACE_NASA_OUTAGE_POINTS)
		emit(r, a, a + r->zero_run * 1000, 0);
	r->zero_run = 0;
}

static int step_nasa(struct trace_reader *r)
{
	const char *tok;
	size_t len;
	int64_t x = 0;
	int k = read_line(r, true, &tok, &len);

	if (k < 0)
		return k;
	if (k == 0) {
		if (r->nasa_i == 0) {
			log_warnx("trace: '%s': no values", r->name);
			return -EINVAL;
		}
		nasa_flush_zeros(r);
		r->in_eof = true;
		return 0;
	}
	for (size_t i = 0; i < len; i++) {
		if (!is_digit(tok[i])) {
			log_warnx("trace: '%s': value %ld is not a count (nasa format)", r->name, r->line);
			return -EINVAL;
		}
		if (x > INT64_C(1) << 52) {
			log_warnx("trace: '%s': value %ld out of range", r->name, r->line);
			return -EINVAL;
		}
		x = x * 10 + (tok[i] - '0');
	}
	if (x == 0) {
		r->zero_run++;
	} else {
		int64_t a = NASA_START_MS + r->nasa_i * 1000;

		nasa_flush_zeros(r);
		emit(r, a, a + 1000, (double)x);
	}
	r->nasa_i++;
	return 0;
}

/* Request arrivals -> requests per second, over whole seconds from the
 * first arrival's second to the last one's. A second is settled when an
 * arrival in a later one is read. */
static int step_azure(struct trace_reader *r)
{
	const char *tok, *q;
	size_t len;
	int64_t t, sec;
	int k = read_line(r, false, &tok, &len);

	if (k < 0)
		return k;
	if (k == 0) {
		if (!r->have_sec) {
			log_warnx("trace: '%s': no requests", r->name);
			return -EINVAL;
		}
		emit(r, r->sec_ms, r->sec_ms + 1000, r->count);
		r->in_eof = true;
		return 0;
	}
	if (blank(tok, len))
		return 0;
	if (!is_digit(*tok)) {
		if (r->line == 1) /* the header */
			return 0;
		return bad_row(r, "expected a timestamp");
	}
	q = tok;
	if (iso8601_parse_prefix(&q, tok + len, ISO8601_UTC_DEFAULT, &t) < 0 || (q < tok + len && *q != ','))
		return bad_row(r, "bad timestamp (want YYYY-MM-DD HH:MM:SS.fffffff)");
	sec = t - ((t % 1000) + 1000) % 1000;
	if (r->have_sec && sec < r->sec_ms)
		return bad_row(r, "arrival before the previous row's second (rows must be in time order)");
	if (r->have_sec && sec > r->sec_ms) {
		emit(r, r->sec_ms, r->sec_ms + 1000, r->count);
		emit(r, r->sec_ms + 1000, sec, 0);
		r->count = 0;
	}
	r->have_sec = true;
	r->sec_ms = sec;
	r->count++;
	return 0;
}

/* A sampled row holds its value until the next row, for at most
 * TRACE_MAX_HOLD_MS: the demand at t depends on the rows up to t only. */
static int hold_row(struct trace_reader *r, int64_t t_ms, double v)
{
	if (r->have_row) {
		if (t_ms <= r->row_ms)
			return bad_row(r, "time not after the previous row's");
		r->last_interval_ms = t_ms - r->row_ms;
		emit(r, r->row_ms, t_ms - r->row_ms > TRACE_MAX_HOLD_MS ? r->row_ms + TRACE_MAX_HOLD_MS : t_ms,
		     r->row_v);
	}
	r->have_row = true;
	r->row_ms = t_ms;
	r->row_v = v;
	return 0;
}

/* The last row holds for as long as the interval before it (capped like
 * the others), or DEFAULT_MS when it is the only one. */
static int hold_end(struct trace_reader *r, int64_t default_ms)
{
	int64_t d = r->last_interval_ms > 0 ? r->last_interval_ms : default_ms;

	if (!r->have_row) {
		log_warnx("trace: '%s': no data rows", r->name);
		return -EINVAL;
	}
	if (d > TRACE_MAX_HOLD_MS)
		d = TRACE_MAX_HOLD_MS;
	emit(r, r->row_ms, r->row_ms + d, r->row_v);
	r->in_eof = true;
	return 0;
}

/* Skips one field and its separator (";" followed by blanks). */
static bool skip_field(const char **p, const char *end)
{
	while (*p < end && **p != ';')
		(*p)++;
	if (*p >= end)
		return false;
	(*p)++;
	*p = skip_blanks(*p, end);
	return true;
}

/* GWA-T-12: "Timestamp [ms]" is really epoch seconds; column 4 is CPU usage
 * in MHz. Rows are 300 s apart with +-1 s jitter. */
static int step_bitbrains(struct trace_reader *r)
{
	const char *tok, *q;
	size_t len;
	double ts, mhz;
	int k = read_line(r, false, &tok, &len);

	if (k < 0)
		return k;
	if (k == 0)
		return hold_end(r, 300 * INT64_C(1000));
	if (blank(tok, len) || (r->line == 1 && !is_digit(*tok)))
		return 0;
	q = tok;
	if (parse_double(&q, tok + len, &ts) < 0 || !skip_field(&q, tok + len) || !skip_field(&q, tok + len) ||
	    !skip_field(&q, tok + len) || parse_double(&q, tok + len, &mhz) < 0 || mhz < 0)
		return bad_row(r, "not a bitbrains row (timestamp;cores;capacity;usage MHz;...)");
	/* Converted to milliseconds in an int64_t: a stamp past year 9999 (or
	 * before 1970) is no Bitbrains row, and would not fit. */
	if (!(ts >= 0 && ts <= MAX_EPOCH_S))
		return bad_row(r, "timestamp out of range");
	return hold_row(r, (int64_t)(ts * 1000), mhz);
}

/* A time in the documented forms: ISO 8601, or a number of epoch seconds
 * (decimals allowed), or of epoch milliseconds when above
 * CSV_MS_THRESHOLD. Advances *p. */
static int parse_time(const char **p, const char *end, int64_t *ret_ms)
{
	const char *q = *p;
	double x;

	if (iso8601_parse_prefix(&q, end, ISO8601_UTC_DEFAULT, ret_ms) == 0) {
		*p = q;
		return 0;
	}
	q = *p;
	if (parse_double(&q, end, &x) < 0)
		return -EINVAL;
	if (fabs(x) >= CSV_MS_THRESHOLD)
		x /= 1000;
	if (fabs(x) > MAX_EPOCH_S)
		return -EINVAL;
	*ret_ms = llround(x * 1000);
	*p = q;
	return 0;
}

/* Splits "time,value" (blanks allowed around the comma): 1 for a data
 * row, 0 for a blank line, a comment or the header, or an error. */
static int time_value_row(struct trace_reader *r, const char *tok, size_t len, int64_t *t_ms, double *v,
			  const char *want)
{
	const char *q = tok, *end = tok + len;

	if (blank(tok, len) || *tok == '#')
		return 0;
	/* Before the first row, one line that does not start like a time is
	 * the header. */
	if (!r->past_header) {
		r->past_header = true;
		if (!is_digit(*tok) && *tok != '-' && *tok != '.')
			return 0;
	}
	if (parse_time(&q, end, t_ms) < 0)
		return bad_row(r, "bad time (epoch seconds or milliseconds, or ISO 8601)");
	q = skip_blanks(q, end);
	if (q >= end || *q++ != ',')
		return bad_row(r, want);
	q = skip_blanks(q, end);
	if (parse_double(&q, end, v) < 0 || *v < 0)
		return bad_row(r, want);
	return 1;
}

/* "time,value". */
static int step_csv(struct trace_reader *r)
{
	const char *tok;
	size_t len;
	int64_t t;
	double v;
	int k = read_line(r, false, &tok, &len);

	if (k < 0)
		return k;
	if (k == 0)
		return hold_end(r, 1000);
	k = time_value_row(r, tok, len, &t, &v, "want 'time,value' with a value >= 0");
	if (k <= 0)
		return k;
	return hold_row(r, t, v);
}

static int heap_push(struct trace_reader *r, int64_t t_ms, int64_t delta)
{
	size_t i;

	if (r->ev_n == r->ev_cap) {
		size_t cap = r->ev_cap ? r->ev_cap * 2 : 256;
		struct event *v;

		if (r->ev_cap >= TRACE_MAX_IN_FLIGHT) {
			log_warnx("trace: '%s':%ld: more than %u jobs or requests in flight", r->name, r->line,
				  TRACE_MAX_IN_FLIGHT / 2);
			return -E2BIG;
		}
		v = realloc(r->ev, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		r->ev = v;
		r->ev_cap = cap;
	}
	for (i = r->ev_n++; i > 0 && r->ev[(i - 1) / 2].t_ms > t_ms; i = (i - 1) / 2)
		r->ev[i] = r->ev[(i - 1) / 2];
	r->ev[i] = (struct event){.t_ms = t_ms, .delta = delta};
	return 0;
}

static struct event heap_pop(struct trace_reader *r)
{
	struct event top = r->ev[0], last = r->ev[--r->ev_n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= r->ev_n)
			break;
		if (c + 1 < r->ev_n && r->ev[c + 1].t_ms < r->ev[c].t_ms)
			c++;
		if (r->ev[c].t_ms >= last.t_ms)
			break;
		r->ev[i] = r->ev[c];
		i = c;
	}
	if (r->ev_n > 0)
		r->ev[i] = last;
	return top;
}

/* Settles the demand up to the earliest pending change when no later row
 * can add an earlier one (its time is at most the horizon, or the file
 * has ended): emits the level since the last change and applies every
 * change at that instant. 1 when it did, 0 when a row must be read. */
static int sweep(struct trace_reader *r)
{
	int64_t t;

	if (r->ev_n == 0 || (!r->in_eof && r->ev[0].t_ms > r->horizon_ms))
		return 0;
	t = r->ev[0].t_ms;
	if (r->swept)
		emit(r, r->sweep_ms, t, (double)r->level);
	while (r->ev_n > 0 && r->ev[0].t_ms == t)
		r->level += heap_pop(r).delta;
	r->sweep_ms = t;
	r->swept = true;
	return 1;
}

/* Adds one job or request busy over [start_ms, end_ms) with WIDTH
 * servers, read in a row whose own time is `at_ms`: rows come in the
 * order of that time, and nothing starts before its row's time. */
static int add_busy(struct trace_reader *r, int64_t at_ms, int64_t start_ms, int64_t end_ms, int64_t width)
{
	int k;

	if (r->horizon_ms != INT64_MIN && at_ms < r->horizon_ms)
		return bad_row(r, "row before the previous one (rows must be in time order)");
	r->horizon_ms = at_ms;
	if (end_ms <= start_ms || width <= 0)
		return 0;
	k = heap_push(r, start_ms, width);
	if (k == 0)
		k = heap_push(r, end_ms, -width);
	return k;
}

/* Reads the header's "; UnixStartTime: N" (SWF times count from it). */
static void swf_header(struct trace_reader *r, const char *tok, size_t len)
{
	static const char key[] = "UnixStartTime:";
	const char *p = skip_blanks(tok + 1, tok + len), *end = tok + len;
	double x;

	if ((size_t)(end - p) <= sizeof(key) - 1 || memcmp(p, key, sizeof(key) - 1) != 0)
		return;
	p = skip_blanks(p + sizeof(key) - 1, end);
	if (parse_double(&p, end, &x) == 0 && x >= 0 && x <= MAX_EPOCH_S)
		r->swf_base_ms = llround(x) * 1000;
}

/* The common start of a step of the busy-span formats: settles what no
 * later row can change, else reads the next line into *tok. 1 with a line,
 * 0 when the step is done without one (the file has ended), or an error;
 * a file without any row (`what`: "jobs", "requests") is one. */
static int busy_line(struct trace_reader *r, const char *what, const char **tok, size_t *len)
{
	int k;

	if (sweep(r) || r->in_eof)
		return 0;
	k = read_line(r, false, tok, len);
	if (k != 0)
		return k;
	if (r->horizon_ms == INT64_MIN) {
		log_warnx("trace: '%s': no %s", r->name, what);
		return -EINVAL;
	}
	r->in_eof = true;
	return 0;
}

#define SWF_FIELDS 18

/* Standard Workload Format: 18 blank-separated numbers per job, -1 for
 * unknown. A job runs from submit + wait (fields 2, 3) for its run time
 * (field 4) on its allocated processors (field 5), or its requested ones
 * (field 8) when the allocation is unknown. A job that never ran (run time
 * 0 or unknown, as cancelled ones) or whose wait or processors are unknown
 * adds nothing. */
static int step_swf(struct trace_reader *r)
{
	double f[SWF_FIELDS];
	const char *tok, *p, *end;
	size_t len;
	int64_t submit, wait, run, procs;
	int n = 0, k = busy_line(r, "jobs", &tok, &len);

	if (k <= 0)
		return k;
	p = skip_blanks(tok, tok + len);
	if (p < tok + len && *p == ';') {
		swf_header(r, p, (size_t)(tok + len - p));
		return 0;
	}
	if (blank(tok, len))
		return 0;
	for (end = tok + len; n < SWF_FIELDS; n++) {
		p = skip_blanks(p, end);
		if (p >= end || parse_double(&p, end, &f[n]) < 0 || (p < end && !is_word_sep(*p)))
			break;
	}
	if (n < SWF_FIELDS || !blank(p, (size_t)(end - p)))
		return bad_row(r, "not an SWF job (18 numbers, -1 for unknown)");
	for (int i = 1; i <= 7; i++)
		if (!(f[i] >= -1 && f[i] <= MAX_EPOCH_S))
			return bad_row(r, "SWF field out of range");
	if (f[1] < 0)
		return bad_row(r, "SWF job without a submit time");
	submit = r->swf_base_ms + llround(f[1] * 1000);
	wait = llround(f[2] * 1000);
	run = llround(f[3] * 1000);
	procs = f[4] > 0 ? llround(f[4]) : f[7] > 0 && f[7] <= MAX_EPOCH_S ? llround(f[7]) : -1;
	if (f[2] < 0 || f[3] <= 0 || procs <= 0)
		return add_busy(r, submit, 0, 0, 0);
	return add_busy(r, submit, submit + wait, submit + wait + run, procs);
}

/* "time,duration": a request arriving at time and served for duration
 * seconds; the demand is the requests in service. */
static int step_requests(struct trace_reader *r)
{
	const char *tok;
	size_t len;
	int64_t t;
	double d;
	int k = busy_line(r, "requests", &tok, &len);

	if (k <= 0)
		return k;
	k = time_value_row(r, tok, len, &t, &d, "want 'time,duration' with a duration >= 0 in seconds");
	if (k <= 0)
		return k;
	if (d > MAX_EPOCH_S)
		return bad_row(r, "duration out of range");
	return add_busy(r, t, t, t + llround(d * 1000), 1);
}

static int reader_new(enum trace_format fmt, const char *name, struct trace_reader **ret)
{
	struct trace_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->name = strdup(name);
	if (!r->name) {
		free(r);
		return -ENOMEM;
	}
	r->fmt = fmt;
	r->in.fd = -1;
	r->horizon_ms = INT64_MIN;
	*ret = r;
	return 0;
}

/* Reads the first bytes to tell the compression, then starts over. */
static int reader_start(struct trace_reader *r)
{
	int k = raw_fill(&r->in);

	if (k < 0) {
		log_warn_errno(k, "trace: cannot read '%s'", r->name);
		return k;
	}
	detect_codec(r->in.raw, r->in.raw_len, &r->in.codec);
	return 0;
}

int trace_open(const char *path, enum trace_format fmt, struct trace_reader **ret)
{
	struct trace_reader *r;
	int k = reader_new(fmt, path, &r);

	if (k < 0)
		return k;
	r->in.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->in.fd < 0) {
		k = -errno;
		log_warn("trace: cannot open '%s'", path);
		trace_close(r);
		return k;
	}
	k = reader_start(r);
	if (k < 0) {
		trace_close(r);
		return k;
	}
	*ret = r;
	return 0;
}

int trace_open_buffer(const void *buf, size_t len, enum trace_format fmt, const char *name,
		      struct trace_reader **ret)
{
	struct trace_reader *r;
	int k = reader_new(fmt, name, &r);

	if (k < 0)
		return k;
	r->in.mem = buf;
	r->in.mem_len = len;
	k = reader_start(r);
	if (k < 0) {
		trace_close(r);
		return k;
	}
	*ret = r;
	return 0;
}

int trace_open_series(int64_t start_ms, int64_t res_ms, const double *v, size_t n, struct trace_reader **ret)
{
	struct trace_reader *r;
	int k;

	if (res_ms <= 0 || (n > 0 && !v))
		return -EINVAL;
	k = reader_new(TRACE_CSV, "series", &r);
	if (k < 0)
		return k;
	r->series = true;
	r->sv = v;
	r->sn = n;
	r->s_start = start_ms;
	r->s_res = res_ms;
	*ret = r;
	return 0;
}

void trace_close(struct trace_reader *r)
{
	if (!r)
		return;
	codec_end(&r->in);
	if (r->in.fd >= 0)
		close(r->in.fd);
	free(r->ev);
	free(r->name);
	free(r);
}

static int step(struct trace_reader *r)
{
	if (r->series)
		return step_series(r);
	switch (r->fmt) {
	case TRACE_NASA:
		return step_nasa(r);
	case TRACE_AZURE_LLM:
		return step_azure(r);
	case TRACE_BITBRAINS:
		return step_bitbrains(r);
	case TRACE_CSV:
		return step_csv(r);
	case TRACE_SWF:
		return step_swf(r);
	case TRACE_REQUESTS:
		return step_requests(r);
	}
	return -EINVAL;
}

int trace_next(struct trace_reader *r, struct trace_seg *ret)
{
	for (;;) {
		int k;

		if (r->outq_n > 0) {
			*ret = r->outq[r->outq_head];
			r->outq_head = (r->outq_head + 1) % 4;
			r->outq_n--;
			return 1;
		}
		if (r->state != 0)
			return r->state > 0 ? 0 : r->state;
		if (r->in_eof && r->ev_n == 0) {
			r->state = 1;
			continue;
		}
		k = step(r);
		if (k < 0)
			set_error(r, k);
	}
}

void trace_cursor_init(struct trace_cursor *c, struct trace_reader *r)
{
	memset(c, 0, sizeof(*c));
	c->r = r;
	c->end_ms = INT64_MIN;
}

void trace_cursor_destroy(struct trace_cursor *c)
{
	free(c->q);
	c->q = NULL;
	c->n = c->head = c->cap = 0;
}

/* Appends the reader's next segment: 1, 0 at the end, or its error. */
static int cursor_read(struct trace_cursor *c)
{
	struct trace_seg s;
	int k;

	if (c->err)
		return c->err;
	if (c->eof)
		return 0;
	k = trace_next(c->r, &s);
	if (k <= 0) {
		if (k < 0)
			c->err = k;
		else
			c->eof = true;
		return k;
	}
	if (c->n == c->cap) {
		if (c->head > 0) {
			memmove(c->q, c->q + c->head, (c->n - c->head) * sizeof(*c->q));
			c->n -= c->head;
			c->head = 0;
		}
		if (c->n == c->cap) {
			size_t cap = c->cap ? c->cap * 2 : 64;
			struct trace_seg *q = realloc(c->q, cap * sizeof(*q));

			if (!q)
				return c->err = -ENOMEM;
			c->q = q;
			c->cap = cap;
		}
	}
	c->q[c->n++] = s;
	c->end_ms = s.end_ms;
	return 1;
}

int trace_cursor_start(struct trace_cursor *c, int64_t *ret)
{
	int k;

	if (c->head == c->n) {
		k = cursor_read(c);
		if (k < 0)
			return k;
		if (k == 0)
			return -ENODATA;
	}
	*ret = c->q[c->head].start_ms;
	return 0;
}

int trace_cursor_mean(struct trace_cursor *c, int64_t from_ms, int64_t to_ms, double *ret)
{
	double sum = 0, weight = 0;
	int k;

	while (c->end_ms < to_ms) {
		k = cursor_read(c);
		if (k < 0)
			return k;
		if (k == 0)
			break;
	}
	for (size_t i = c->head; i < c->n && c->q[i].start_ms < to_ms; i++) {
		int64_t a = c->q[i].start_ms > from_ms ? c->q[i].start_ms : from_ms;
		int64_t b = c->q[i].end_ms < to_ms ? c->q[i].end_ms : to_ms;

		if (b <= a)
			continue;
		sum += c->q[i].v * (double)(b - a);
		weight += (double)(b - a);
	}
	*ret = weight > 0 ? sum / weight : NAN;
	return 0;
}

void trace_cursor_drop(struct trace_cursor *c, int64_t t_ms)
{
	while (c->head < c->n && c->q[c->head].end_ms <= t_ms)
		c->head++;
}

int trace_cursor_more(struct trace_cursor *c, int64_t t_ms)
{
	while (c->end_ms <= t_ms) {
		int k = cursor_read(c);

		if (k <= 0)
			return k;
	}
	return 1;
}
