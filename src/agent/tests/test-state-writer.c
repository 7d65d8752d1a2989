/* Unit tests of the state writer (state-writer.c), on files in a temporary
 * directory.
 *
 * The cases:
 *   - a save is written, whole, and a flush waits for it;
 *   - many saves of one file end with the newest text, whatever was
 *     coalesced on the way; saves of many files all land;
 *   - a save made at once is on disk when it returns, ahead of a long
 *     queue of others;
 *   - a failed write (the directory is gone) is reported once, by the save
 *     made at once or by the status of the path, and a later write that
 *     succeeds clears it;
 *   - sync waits for the file's pending save before it is read back;
 *   - saves that must be synced, queued together, are synced together:
 *     one sync of their directory for each directory and at most
 *     STATE_WRITER_BATCH saves. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/state-writer.h"

static char dir[PATH_MAX / 2];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%s/test-state-writer.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static void path_of(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

/* The file's text without the newline the writer adds. */
static char *read_back(const char *name)
{
	char path[PATH_MAX], *buf = calloc(1, 4096);
	FILE *f;
	size_t n;

	path_of(path, sizeof(path), name);
	f = fopen(path, "r");
	if (!f) {
		free(buf);
		return NULL;
	}
	n = fread(buf, 1, 4095, f);
	fclose(f);
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return buf;
}

static int64_t save(const char *name, const char *text)
{
	char path[PATH_MAX];

	path_of(path, sizeof(path), name);
	return state_writer_save(dir, path, name, strdup(text), false);
}

static void assert_file(const char *name, const char *want)
{
	char *got = read_back(name);

	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

static void test_save_and_flush(void **state)
{
	char path[PATH_MAX];

	(void)state;
	assert_true(save("a.state", "{\"v\":1}") > 0);
	state_writer_flush();
	assert_file("a.state", "{\"v\":1}");
	path_of(path, sizeof(path), "a.state");
	assert_int_equal(state_writer_status(path), 0);
}

static void test_newest_wins(void **state)
{
	char text[64], name[32];
	int64_t prev = 0;

	(void)state;
	for (int i = 0; i < 500; i++) {
		int64_t seq;

		snprintf(text, sizeof(text), "{\"v\":%d}", i);
		seq = save("b.state", text);
		assert_true(seq > prev);
		prev = seq;
		snprintf(name, sizeof(name), "g%d.state", i % 50);
		assert_true(save(name, text) > 0);
	}
	state_writer_flush();
	assert_file("b.state", "{\"v\":499}");
	for (int i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "g%d.state", i);
		snprintf(text, sizeof(text), "{\"v\":%d}", 450 + i);
		assert_file(name, text);
	}
}

static void test_save_now_is_on_disk(void **state)
{
	char path[PATH_MAX], name[32];

	(void)state;
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "q%d.state", i);
		assert_true(save(name, "{}") > 0);
	}
	path_of(path, sizeof(path), "now.state");
	assert_int_equal(state_writer_save_now(dir, path, "now.state", strdup("{\"now\":true}")), 0);
	assert_file("now.state", "{\"now\":true}");
	state_writer_flush();
}

static void test_failure_reported_once(void **state)
{
	char gone[PATH_MAX / 2 + 16], path[PATH_MAX];

	(void)state;
	snprintf(gone, sizeof(gone), "%s/gone", dir);
	snprintf(path, sizeof(path), "%s/f.state", gone);
	/* At once: the save reports it. */
	assert_int_equal(state_writer_save_now(gone, path, "f.state", strdup("{}")), -ENOENT);
	assert_int_equal(state_writer_status(path), 0);
	/* In the writer's turn: the status reports it, once. */
	assert_true(state_writer_save(gone, path, "f.state", strdup("{}"), false) > 0);
	state_writer_flush();
	assert_int_equal(state_writer_status(path), -ENOENT);
	assert_int_equal(state_writer_status(path), 0);
	/* Written again once the directory is back. */
	assert_int_equal(mkdir(gone, 0700), 0);
	assert_true(state_writer_save(gone, path, "f.state", strdup("{\"back\":1}"), false) > 0);
	state_writer_flush();
	assert_int_equal(state_writer_status(path), 0);
	assert_file("gone/f.state", "{\"back\":1}");
}

static void test_sync_before_reading(void **state)
{
	char path[PATH_MAX], text[32];

	(void)state;
	path_of(path, sizeof(path), "s.state");
	for (int i = 0; i < 100; i++) {
		snprintf(text, sizeof(text), "{\"s\":%d}", i);
		assert_true(save("s.state", text) > 0);
		state_writer_sync(path);
		assert_file("s.state", text);
	}
}

/* Routine saves are gathered into the writer's turn: of 50 saves of
 * different files queued at once, only the first wakes the writer (a few
 * more only if this thread stalls for a whole gathering time), and they
 * are all written without anyone waiting for them. A save that must be on
 * disk does not wait for the gathering. */
static void test_routine_saves_gathered(void **state)
{
	char path[PATH_MAX], name[32];
	uint64_t w0, w1;

	(void)state;
	state_writer_flush();
	w0 = state_writer_wakeups();
	for (int i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "r%d.state", i);
		assert_true(save(name, "{\"r\":1}") > 0);
	}
	w1 = state_writer_wakeups();
	assert_true(w1 - w0 >= 1);
	assert_true(w1 - w0 <= 5);
	/* Written in the writer's own time: at most 10 s of it. */
	path_of(path, sizeof(path), "r49.state");
	for (int k = 0; state_writer_status(path) != 0; k++) {
		struct timespec ts = {0, 10 * 1000 * 1000};

		assert_true(k < 1000);
		nanosleep(&ts, NULL);
	}
	for (int i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "r%d.state", i);
		assert_file(name, "{\"r\":1}");
	}
	/* Queued behind routine saves being gathered, a synced save goes
	 * first and wakes the writer itself. */
	assert_true(save("r0.state", "{\"r\":2}") > 0);
	path_of(path, sizeof(path), "now.state");
	w0 = state_writer_wakeups();
	assert_int_equal(state_writer_save_now(dir, path, "now.state", strdup("{\"now\":1}")), 0);
	assert_true(state_writer_wakeups() > w0);
	assert_file("now.state", "{\"now\":1}");
	state_writer_flush();
	assert_file("r0.state", "{\"r\":2}");
}

/* Saves to be synced, queued while the writer is held, then waited for:
 * 70 in the test's directory and one in another, queued last so that it
 * is written first (such saves go ahead of the others). Each is on disk
 * when its wait returns, and the writer synced a directory three times:
 * the other one, then the 70 in two turns of at most STATE_WRITER_BATCH. */
static void test_durable_saves_batched(void **state)
{
	struct state_writer_ticket t[71];
	char path[PATH_MAX], name[32], text[32], other[PATH_MAX / 2 + 16];
	uint64_t s0;

	(void)state;
	assert_true(STATE_WRITER_BATCH < 70);
	snprintf(other, sizeof(other), "%s/other", dir);
	assert_int_equal(mkdir(other, 0700), 0);
	state_writer_flush();
	s0 = state_writer_dir_syncs();
	state_writer_hold(true);
	for (int i = 0; i < 70; i++) {
		snprintf(name, sizeof(name), "d%d.state", i);
		snprintf(text, sizeof(text), "{\"d\":%d}", i);
		path_of(path, sizeof(path), name);
		assert_int_equal(state_writer_save_durable(dir, path, name, strdup(text), &t[i]), 0);
	}
	snprintf(path, sizeof(path), "%s/o.state", other);
	assert_int_equal(state_writer_save_durable(other, path, "o.state", strdup("{\"o\":1}"), &t[70]), 0);
	/* Nothing is written while the writer is held. */
	assert_null(read_back("d0.state"));
	assert_int_equal(state_writer_dir_syncs(), s0);
	state_writer_hold(false);
	for (int i = 0; i < 71; i++)
		assert_int_equal(state_writer_wait(&t[i]), 0);
	for (int i = 0; i < 70; i++) {
		snprintf(name, sizeof(name), "d%d.state", i);
		snprintf(text, sizeof(text), "{\"d\":%d}", i);
		assert_file(name, text);
	}
	assert_file("other/o.state", "{\"o\":1}");
	assert_int_equal(state_writer_dir_syncs() - s0, 3);
	path_of(path, sizeof(path), "d0.state");
	assert_int_equal(state_writer_status(path), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_save_and_flush, setup, teardown),
		cmocka_unit_test_setup_teardown(test_newest_wins, setup, teardown),
		cmocka_unit_test_setup_teardown(test_save_now_is_on_disk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failure_reported_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sync_before_reading, setup, teardown),
		cmocka_unit_test_setup_teardown(test_routine_saves_gathered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_durable_saves_batched, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
