/* The replay source reads its recording with memory in proportion to the
 * file: every reload reads it again, so a 4 KB recording must not cost a
 * 64 MiB buffer each time. The test binary is linked with --wrap for
 * malloc, calloc and realloc, which routes the calls of the code under test
 * through the counters below. It also checks that what is not a regular
 * file is refused at once instead of blocking the loop. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "sources/source.h"

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);

/* The largest single request made while `counting` is set. */
static bool counting;
static size_t largest;

static void note(size_t size)
{
	if (counting && size > largest)
		largest = size;
}

void *__wrap_malloc(size_t size)
{
	note(size);
	return __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size)
{
	note(n * size);
	return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size)
{
	note(size);
	return __real_realloc(p, size);
}

static sd_event *event;
static struct source_env env;
static char dir[] = "/tmp/autoscaled-test-replay-XXXXXX";
static char err[1024];

struct result {
	int calls;
	int status;
	double value;
};

static void on_done(void *userdata, int64_t t_ms, int status, double value, const char *error)
{
	struct result *r = userdata;

	(void)t_ms;
	(void)error;
	r->calls++;
	r->status = status;
	r->value = value;
}

static struct signal_conf replay_conf(struct config_option *o)
{
	*o = (struct config_option){ .key = "file", .type = OPTION_STRING, .file = "a.conf", .line = 9 };
	return (struct signal_conf){
		.name = "load", .source = "replay", .source_options = { o, 1 }, .file = "a.conf", .line = 8,
	};
}

/* A recording of about 4 KB: 520 rows, value = row number. */
static void write_recording(const char *path)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fprintf(f, "time,value\n");
	for (int i = 0; i < 520; i++)
		fprintf(f, "%d,%d\n", i, i);
	assert_int_equal(fclose(f), 0);
}

static void test_small_file_small_buffer(void **state)
{
	struct config_option o;
	struct signal_conf sc = replay_conf(&o);
	struct result r = { 0 };
	struct source *s = NULL;
	char path[sizeof(dir) + 16];
	struct stat st;

	(void)state;
	snprintf(path, sizeof(path), "%s/rec.csv", dir);
	write_recording(path);
	assert_int_equal(stat(path, &st), 0);
	assert_true(st.st_size > 3000 && st.st_size < 5000);
	o.str = path;
	/* Each reload builds the source again: measure a few of them. */
	for (int i = 0; i < 3; i++) {
		largest = 0;
		counting = true;
		assert_int_equal(source_new(&sc, &env, &s, err, sizeof(err)), 0);
		counting = false;
		if (largest > 64 * 1024)
			fail_msg("reading a %lld-byte recording asked for %zu bytes at once", (long long)st.st_size,
				 largest);
		assert_true(largest > 0);
		/* And it reads the file: 3 s into the recording the value is 3. */
		assert_int_equal(source_poll(s, 1000, on_done, &r), 0);
		for (int k = 0; k < 10 && r.calls == 0; k++)
			sd_event_run(event, 0);
		assert_int_equal(r.status, 0);
		assert_true(r.value == 0);
		r.calls = 0;
		assert_int_equal(source_poll(s, 4000, on_done, &r), 0);
		for (int k = 0; k < 10 && r.calls == 0; k++)
			sd_event_run(event, 0);
		assert_int_equal(r.status, 0);
		assert_true(fabs(r.value - 3) < 1e-9);
		r.calls = 0;
		source_free(s);
		s = NULL;
	}
	unlink(path);
}

/* The value source S gives at ELAPSED_MS into its recording. */
static double value_at(struct source *s, int64_t elapsed_ms)
{
	struct result r = { 0 };

	assert_int_equal(source_poll(s, 1000, on_done, &r), 0);
	for (int k = 0; k < 10 && r.calls == 0; k++)
		sd_event_run(event, 0);
	r.calls = 0;
	assert_int_equal(source_poll(s, 1000 + elapsed_ms, on_done, &r), 0);
	for (int k = 0; k < 10 && r.calls == 0; k++)
		sd_event_run(event, 0);
	assert_int_equal(r.status, 0);
	return r.value;
}

/* Signals replaying one unchanged file share its parsed series: the second
 * source reads and parses nothing (no allocation the size of the 520 rows),
 * and one made after the file changed reads the new rows while the older
 * ones keep theirs. */
static void test_shared_parse(void **state)
{
	struct config_option o;
	struct signal_conf sc = replay_conf(&o);
	struct source *a = NULL, *b = NULL, *c = NULL;
	struct timespec later[2];
	char path[sizeof(dir) + 16];
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/shared.csv", dir);
	write_recording(path);
	o.str = path;
	assert_int_equal(source_new(&sc, &env, &a, err, sizeof(err)), 0);
	largest = 0;
	counting = true;
	assert_int_equal(source_new(&sc, &env, &b, err, sizeof(err)), 0);
	counting = false;
	if (largest >= 520 * sizeof(double))
		fail_msg("a second source of the same file asked for %zu bytes at once", largest);
	assert_true(fabs(value_at(a, 3000) - 3) < 1e-9);
	assert_true(fabs(value_at(b, 5000) - 5) < 1e-9);

	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "time,value\n");
	for (int i = 0; i < 520; i++)
		fprintf(f, "%d,%d\n", i, 2 * i);
	assert_int_equal(fclose(f), 0);
	/* A new modification time even within the clock's granularity. */
	clock_gettime(CLOCK_REALTIME, &later[0]);
	later[0].tv_sec += 10;
	later[1] = later[0];
	assert_int_equal(utimensat(AT_FDCWD, path, later, 0), 0);
	assert_int_equal(source_new(&sc, &env, &c, err, sizeof(err)), 0);
	assert_true(fabs(value_at(c, 3000) - 6) < 1e-9);
	assert_true(fabs(value_at(a, 3000) - 3) < 1e-9);
	source_free(a);
	source_free(b);
	/* The older series is gone with its last source; the newer one stays. */
	assert_true(fabs(value_at(c, 4000) - 8) < 1e-9);
	source_free(c);
	unlink(path);
}

static void test_empty_and_special_files(void **state)
{
	struct config_option o;
	struct signal_conf sc = replay_conf(&o);
	struct source *s = NULL;
	char path[sizeof(dir) + 16];
	int fd;

	(void)state;
	/* An empty file is read (and refused for holding no rows). */
	snprintf(path, sizeof(path), "%s/empty.csv", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	close(fd);
	o.str = path;
	assert_true(source_new(&sc, &env, &s, err, sizeof(err)) < 0);
	assert_null(s);
	assert_non_null(strstr(err, "a.conf:9:"));
	unlink(path);
	/* A FIFO with no writer would block an open without O_NONBLOCK for
	 * good; the alarm turns such a hang into a failure. */
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	alarm(20);
	assert_int_equal(source_new(&sc, &env, &s, err, sizeof(err)), -EINVAL);
	alarm(0);
	assert_non_null(strstr(err, "not a regular file"));
	unlink(path);
	/* A directory. */
	o.str = dir;
	assert_true(source_new(&sc, &env, &s, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "a.conf:9:"));
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir) || sd_event_new(&event) < 0)
		return -1;
	env.event = event;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sd_event_unref(event);
	rmdir(dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small_file_small_buffer),
		cmocka_unit_test(test_shared_parse),
		cmocka_unit_test(test_empty_and_special_files),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
