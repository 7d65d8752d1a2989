/* Reading the files the daemon reads (configuration, state, recordings,
 * tokens, secrets) whole, through the one reader: its bound, its refusals,
 * and a file whose size says less than it holds. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/file.h"

static char dir[] = "/tmp/test-file.XXXXXX";
static char path[4200];

static void write_file(const char *name, const char *text, mode_t mode)
{
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void test_whole(void **state)
{
	char *buf = NULL;
	size_t len = 99;
	struct stat st;

	(void)state;
	write_file("a", "hello\nworld\n", 0644);
	assert_int_equal(file_read_all(path, 0, 100, &buf, &len, &st), 0);
	assert_string_equal(buf, "hello\nworld\n");
	assert_int_equal(len, 12);
	assert_int_equal(st.st_size, 12);
	free(buf);
	/* Exactly the bound is allowed; one byte more is not. */
	assert_int_equal(file_read_all(path, 0, 12, &buf, NULL, NULL), 0);
	free(buf);
	buf = NULL;
	assert_int_equal(file_read_all(path, 0, 11, &buf, &len, NULL), -EFBIG);
	assert_null(buf);
	/* An empty file is an empty string. */
	write_file("empty", "", 0644);
	assert_int_equal(file_read_all(path, 0, 0, &buf, &len, NULL), 0);
	assert_string_equal(buf, "");
	assert_int_equal(len, 0);
	free(buf);
}

/* A file whose size says 0 but that holds more (as /proc files do) is
 * read to its end, and still bounded. */
static void test_size_lies(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	struct stat st;

	(void)state;
	assert_int_equal(stat("/proc/self/status", &st), 0);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(file_read_all("/proc/self/status", 0, 1 << 20, &buf, &len, NULL), 0);
	assert_true(len > 100);
	assert_non_null(strstr(buf, "Name:"));
	assert_int_equal(strlen(buf), len);
	free(buf);
	buf = NULL;
	assert_int_equal(file_read_all("/proc/self/status", 0, 20, &buf, &len, NULL), -EFBIG);
	assert_null(buf);
}

/* A regular file of the kernel's whose read waits for data is refused,
 * not waited on: a configuration that includes every file two levels
 * below the root reaches /proc/kmsg (found by fuzz-config). Without the
 * right to read it the open is refused anyway; either way the call
 * returns at once. */
static void test_waiting_read(void **state)
{
	char *buf = NULL;
	struct stat st;
	int r;

	(void)state;
	if (stat("/proc/kmsg", &st) < 0 || !S_ISREG(st.st_mode))
		skip();
	alarm(10); /* a read that waits kills the test at once */
	r = file_read_all("/proc/kmsg", 0, 1 << 20, &buf, NULL, NULL);
	alarm(0);
	/* It returned. Messages already waiting are read (and the kernel
	 * drops them): the read stops with EAGAIN when none is left; without
	 * the right to read them the open is refused. */
	if (r < 0)
		assert_null(buf);
	free(buf);
	assert_string_equal(file_strerror(-EAGAIN), "not an ordinary file: reading it would wait for data");
}

static void test_refusals(void **state)
{
	char *buf = NULL;
	struct stat st = {0};

	(void)state;
	snprintf(path, sizeof(path), "%s/missing", dir);
	assert_int_equal(file_read_all(path, 0, 100, &buf, NULL, NULL), -ENOENT);
	assert_int_equal(file_read_all(dir, 0, 100, &buf, NULL, NULL), -EISDIR);
	/* A FIFO without a writer is refused at once, never waited on. */
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	alarm(10);
	assert_int_equal(file_read_all(path, 0, 100, &buf, NULL, NULL), -EINVAL);
	alarm(0);
	assert_string_equal(file_strerror(-EINVAL), "not a regular file");
	/* A secret others may read is refused, and its mode is told. */
	write_file("secret", "s3cret\n", 0644);
	assert_int_equal(file_read_all(path, FILE_PRIVATE, 100, &buf, NULL, &st), -EPERM);
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_null(buf);
	write_file("secret", "s3cret\n", 0600);
	assert_int_equal(file_read_all(path, FILE_PRIVATE, 100, &buf, NULL, NULL), 0);
	assert_string_equal(buf, "s3cret\n");
	free(buf);
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	const char *names[] = {"a", "empty", "fifo", "secret"};

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole),
		cmocka_unit_test(test_size_lies),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_waiting_read),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
