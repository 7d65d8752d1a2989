/* Unit tests for the persisted state: round trips, the safe start on every
 * kind of damage a file can suffer, and the pure operations (expiry,
 * reconciliation of an action in flight, pause and pin). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
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
#include <cjson/cJSON.h>

#include "agent/forecast-state.h"
#include "state/state.h"

#define NOW INT64_C(1764680000000) /* 2025-12-02, a realistic epoch in ms */
#define WINDOW_MS (300 * MS_PER_SEC)
#define HOUR_MS (3600 * MS_PER_SEC)

/* The two clocks of a running daemon: the wall clock reads `wall`, the
 * monotonic one counts from some boot `mono` ms ago. */
static struct clock_now clocks(int64_t wall, int64_t mono)
{
	return (struct clock_now){.wall_ms = wall, .mono_ms = mono};
}

static char dir[64];
static struct signal_conf sig = {.name = "cpu", .window_ms = 60 * MS_PER_SEC};
static struct group_conf gc = {
	.name = "web",
	.signals = &sig,
	.n_signals = 1,
	.behavior = {.scale_in = {.stabilization_ms = WINDOW_MS}},
};

static int setup(void **st)
{
	(void)st;
	snprintf(dir, sizeof(dir), "/tmp/test-state.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **st)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[PATH_MAX];

	(void)st;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	return rmdir(dir);
}

/* A state as a running daemon would have it: histories, an action in
 * flight, a pin, a pause and a dry-run override. */
static void sample_state(struct group_state *s)
{
	state_init(s);
	for (int i = 0; i < 10; i++) {
		s->engine.down_recs[i] = (struct engine_rec){.t_ms = NOW - 290000 + i * 15000, .count = 10 - i};
		s->engine.up_recs[i] = (struct engine_rec){.t_ms = NOW - 290000 + i * 15000, .count = 2 + i};
	}
	s->engine.n_down_recs = s->engine.n_up_recs = 10;
	s->engine.events[0] = (struct engine_event){.t_ms = NOW - 60000, .delta = 3};
	s->engine.events[1] = (struct engine_event){.t_ms = NOW - 30000, .delta = -2};
	s->engine.n_events = 2;
	s->engine.last_action_ms = NOW - 30000;
	s->engine.last_action_dir = DIR_IN;
	s->in_flight = (struct state_action){.direction = DIR_OUT, .from = 4, .to = 7, .started_ms = NOW - 5000,
					     .deadline_ms = NOW - 5000 + STATE_IN_FLIGHT_DEADLINE_MS};
	strcpy(s->in_flight.request_id, "op-1234");
	s->pin = (struct state_pin){.active = true, .count = 5, .until_ms = NOW + 7200000, .forced = true};
	s->pause = (struct state_pause){.active = true, .until_ms = 0};
	s->dry_run = STATE_DRY_RUN_ON;
}

/* Every field of a state set, and set field by field, so that the bytes
 * between them stay zero and the state compares as bytes. */
static void full_state(struct group_state *s, size_t n_up, size_t n_down, size_t n_events, size_t id_len)
{
	memset(s, 0, sizeof(*s));
	s->engine.version = 7;
	for (size_t i = 0; i < n_up; i++) {
		s->engine.up_recs[i].t_ms = NOW - 1000000 + (int64_t)i * 1000;
		s->engine.up_recs[i].count = (int)i + 1;
	}
	for (size_t i = 0; i < n_down; i++) {
		s->engine.down_recs[i].t_ms = NOW - 2000000 + (int64_t)i * 2000;
		s->engine.down_recs[i].count = 100 - (int)i;
	}
	for (size_t i = 0; i < n_events; i++) {
		s->engine.events[i].t_ms = NOW - 3000000 + (int64_t)i * 3000;
		s->engine.events[i].delta = i % 2 ? -(int)i : (int)i + 1;
	}
	s->engine.n_up_recs = n_up;
	s->engine.n_down_recs = n_down;
	s->engine.n_events = n_events;
	s->engine.last_action_ms = NOW - 11;
	s->engine.last_action_dir = DIR_IN;
	s->engine.no_scale_in_before_ms = NOW + 12;
	s->in_flight.direction = DIR_OUT;
	s->in_flight.from = 13;
	s->in_flight.to = 14;
	s->in_flight.started_ms = NOW - 15;
	s->in_flight.deadline_ms = NOW + 16;
	memset(s->in_flight.request_id, 'r', id_len);
	s->pin.active = true;
	s->pin.count = 17;
	s->pin.until_ms = NOW + 18;
	s->pin.forced = true;
	s->pause.active = true;
	s->pause.until_ms = NOW + 19;
	s->dry_run = STATE_DRY_RUN_OFF;
	s->boot.pending_since_ms = NOW - 20;
	s->boot.pending_target = 21;
	s->boot.measured_ms = 22000;
	s->boot.n_measured = 23;
}

/* The form every group's state rests in (state_pack()) gives back every
 * byte of the state, whatever it holds, and takes only the room the
 * histories use. */
static void test_packed_round_trip(void **unused)
{
	static const size_t shapes[][4] = {
		{0, 0, 0, 0}, {1, 8, 2, 0}, {ENGINE_MAX_HISTORY, ENGINE_MAX_HISTORY, ENGINE_MAX_HISTORY, STATE_REQUEST_ID_MAX - 1},
		{3, 0, ENGINE_MAX_HISTORY, 7}, {0, 1, 0, 1},
	};
	struct state_packed *p = NULL;
	struct group_state a, b, fresh;

	(void)unused;
	for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
		full_state(&a, shapes[k][0], shapes[k][1], shapes[k][2], shapes[k][3]);
		assert_int_equal(state_pack(&a, &p), 0);
		memset(&b, 0xa5, sizeof(b));
		state_unpack(p, &b);
		assert_memory_equal(&a, &b, sizeof(a));
		assert_true(p->size >= sizeof(*p) + (shapes[k][0] + shapes[k][1] + shapes[k][2]) * 12 + shapes[k][3]);
		assert_true(p->size < sizeof(*p) + (shapes[k][0] + shapes[k][1] + shapes[k][2]) * 12 + shapes[k][3] + 64);
	}
	/* What the engine leaves past the entries is not kept. */
	full_state(&a, 2, 2, 2, 3);
	a.engine.down_recs[5].count = 99;
	strcpy(a.in_flight.request_id, "op");
	a.in_flight.request_id[5] = 'x';
	assert_int_equal(state_pack(&a, &p), 0);
	state_unpack(p, &b);
	state_canonical(&a);
	assert_int_equal(b.engine.down_recs[5].count, 0);
	assert_memory_equal(&a, &b, sizeof(a));
	/* A fresh state, the most common one, is small. */
	state_init(&fresh);
	assert_int_equal(state_pack(&fresh, &p), 0);
	assert_true(p->size <= 192);
	assert_true(p->size * 5 < sizeof(struct group_state));
	state_unpack(p, &b);
	assert_memory_equal(&fresh, &b, sizeof(b));
	free(p);
}

static void assert_same(const struct group_state *a, const struct group_state *b)
{
	assert_int_equal(a->engine.version, b->engine.version);
	assert_int_equal(a->engine.n_up_recs, b->engine.n_up_recs);
	assert_int_equal(a->engine.n_down_recs, b->engine.n_down_recs);
	assert_int_equal(a->engine.n_events, b->engine.n_events);
	assert_memory_equal(a->engine.up_recs, b->engine.up_recs, a->engine.n_up_recs * sizeof(struct engine_rec));
	assert_memory_equal(a->engine.down_recs, b->engine.down_recs,
			    a->engine.n_down_recs * sizeof(struct engine_rec));
	assert_memory_equal(a->engine.events, b->engine.events, a->engine.n_events * sizeof(struct engine_event));
	assert_int_equal(a->engine.last_action_ms, b->engine.last_action_ms);
	assert_int_equal(a->engine.last_action_dir, b->engine.last_action_dir);
	assert_int_equal(a->engine.no_scale_in_before_ms, b->engine.no_scale_in_before_ms);
	assert_int_equal(a->in_flight.direction, b->in_flight.direction);
	assert_int_equal(a->in_flight.from, b->in_flight.from);
	assert_int_equal(a->in_flight.to, b->in_flight.to);
	assert_int_equal(a->in_flight.started_ms, b->in_flight.started_ms);
	assert_int_equal(a->in_flight.deadline_ms, b->in_flight.deadline_ms);
	assert_string_equal(a->in_flight.request_id, b->in_flight.request_id);
	assert_int_equal(a->pin.active, b->pin.active);
	assert_int_equal(a->pin.count, b->pin.count);
	assert_int_equal(a->pin.until_ms, b->pin.until_ms);
	assert_int_equal(a->pin.forced, b->pin.forced);
	assert_int_equal(a->pause.active, b->pause.active);
	assert_int_equal(a->pause.until_ms, b->pause.until_ms);
	assert_int_equal(a->dry_run, b->dry_run);
}

static void write_text(const char *text, size_t len)
{
	char p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s/web.state", dir);
	f = fopen(p, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
}

static char *saved_text(void)
{
	struct group_state s;
	cJSON *j;
	char *t;

	sample_state(&s);
	j = state_to_json(&s, "web", clock_virtual(NOW), 0);
	assert_non_null(j);
	t = cJSON_Print(j);
	cJSON_Delete(j);
	assert_non_null(t);
	return t;
}

/* The safe start: a clean history and no scale-in for a full window. */
static void assert_safe(const struct group_state *s)
{
	assert_int_equal(s->engine.n_down_recs, 0);
	assert_int_equal(s->engine.n_up_recs, 0);
	assert_int_equal(s->engine.no_scale_in_before_ms, NOW + WINDOW_MS);
	assert_int_equal(s->in_flight.direction, DIR_NONE);
	assert_false(s->pin.active);
	assert_false(s->pause.active);
}

static void test_round_trip(void **st)
{
	struct group_state a, b;
	char p[PATH_MAX];
	struct stat sb;
	DIR *d;
	struct dirent *e;
	int n = 0;

	(void)st;
	/* The sample's times are monotonic ones here, a week of wall-clock
	 * time behind: the file holds them as wall-clock times, and a load a
	 * second later on both clocks gives them back exactly. */
	sample_state(&a);
	assert_int_equal(state_save(dir, "web", &a, clocks(NOW + 7 * 24 * HOUR_MS, NOW)), 0);
	assert_int_equal(state_load(dir, &gc, clocks(NOW + 7 * 24 * HOUR_MS + 1000, NOW + 1000), &b),
			 STATE_RESTORED);
	assert_same(&a, &b);

	/* Saving again replaces the file and leaves no temporary behind: the
	 * state it replaced is the group's spare file now. */
	a.pin.count = 6;
	assert_int_equal(state_save(dir, "web", &a, clock_virtual(NOW + 1000)), 0);
	assert_int_equal(state_load(dir, &gc, clock_virtual(NOW + 2000), &b), STATE_RESTORED);
	assert_int_equal(b.pin.count, 6);
	d = opendir(dir);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' || (strncmp(e->d_name, ".web", 4) == 0 && strcmp(e->d_name, ".web.state.spare")))
			n++;
	closedir(d);
	assert_int_equal(n, 1);
	snprintf(p, sizeof(p), "%s/web.state", dir);
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0640);
	snprintf(p, sizeof(p), "%s/.web.state.spare", dir);
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0640);
}

static void test_clean_state_round_trip(void **st)
{
	struct group_state a, b;

	(void)st;
	state_init(&a);
	assert_int_equal(state_save(dir, "web", &a, clock_virtual(NOW)), 0);
	assert_int_equal(state_load(dir, &gc, clock_virtual(NOW), &b), STATE_RESTORED);
	assert_same(&a, &b);
	assert_int_equal(b.in_flight.direction, DIR_NONE);
	assert_int_equal(b.dry_run, STATE_DRY_RUN_CONFIG);
}

static void test_missing_is_fresh(void **st)
{
	struct group_state s;

	(void)st;
	assert_int_equal(state_load(dir, &gc, clock_virtual(NOW), &s), STATE_FRESH);
	assert_int_equal(s.engine.n_down_recs, 0);
	assert_int_equal(s.engine.no_scale_in_before_ms, 0);
}

/* A FIFO (or a directory) where the state file should be: a safe start at
 * once, not a daemon blocked in open(2) waiting for a writer. The alarm
 * turns such a hang into a failure. */
static void test_not_a_regular_file(void **st)
{
	struct group_state s;
	char p[PATH_MAX];

	(void)st;
	alarm(10);
	assert_int_equal(state_path(dir, "web", p, sizeof(p)), 0);
	assert_int_equal(mkfifo(p, 0600), 0);
	assert_int_equal(state_load(dir, &gc, clock_virtual(NOW), &s), STATE_SAFE);
	assert_safe(&s);
	/* The next save replaces it with a real state file. */
	assert_int_equal(state_save(dir, "web", &s, clock_virtual(NOW)), 0);
	assert_int_equal(state_load(dir, &gc, clock_virtual(NOW), &s), STATE_RESTORED);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(mkdir(p, 0700), 0);
	assert_int_equal(state_load(dir, &gc, clock_virtual(NOW), &s), STATE_SAFE);
	assert_int_equal(rmdir(p), 0);
	alarm(0);
}

/* The file's text, its inode and its size. */
static char *file_text(const char *p, struct stat *sb)
{
	char *t = NULL;
	FILE *f = fopen(p, "r");
	long n;

	assert_non_null(f);
	assert_int_equal(fstat(fileno(f), sb), 0);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	rewind(f);
	t = calloc(1, (size_t)n + 1);
	assert_non_null(t);
	assert_int_equal(fread(t, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return t;
}

/* Writes TEXT to the state file P as HOW says and checks that it then
 * holds WANT, in the file whose inode was BEFORE (SAME) or in a new one.
 * Returns the file's inode. */
static ino_t write_and_check(const char *p, const char *text, enum state_write how, const char *want, ino_t before,
			     bool same)
{
	struct stat sb;
	char *t;

	assert_int_equal(state_write_file(dir, p, "web.state", text, how), 0);
	t = file_text(p, &sb);
	assert_string_equal(t, want);
	free(t);
	if (same)
		assert_int_equal(sb.st_ino, before);
	else
		assert_int_not_equal(sb.st_ino, before);
	return sb.st_ino;
}

/* The file at P holds WANT; returns its inode. */
static ino_t assert_text(const char *p, const char *want)
{
	struct stat sb;
	char *t = file_text(p, &sb);

	assert_string_equal(t, want);
	free(t);
	return sb.st_ino;
}

/* The file at P holds WANT and is the inode INO. */
static void assert_file_is(const char *p, const char *want, ino_t ino)
{
	assert_int_equal(assert_text(p, want), ino);
}

/* Saves that replace the file whole swap it with the group's spare file:
 * the two inodes take turns, the text is exact (a longer spare is cut),
 * and the old state is the spare. A spare that is not a plain file of one
 * link is not written through: removed, and the save makes a new file. */
static void test_write_through_spare(void **st)
{
	char p[PATH_MAX], sp[PATH_MAX], q[PATH_MAX];
	struct stat sb;
	ino_t i1, i2;

	(void)st;
	alarm(10);
	assert_int_equal(state_path(dir, "web", p, sizeof(p)), 0);
	snprintf(sp, sizeof(sp), "%s/.web.state.spare", dir);
	snprintf(q, sizeof(q), "%s/elsewhere", dir);
	i1 = write_and_check(p, "{\"a\": 1}", STATE_WRITE_DURABLE, "{\"a\": 1}\n", 0, false);
	i2 = write_and_check(p, "{\"a\": 22222222}", STATE_WRITE_DURABLE, "{\"a\": 22222222}\n", i1, false);
	assert_file_is(sp, "{\"a\": 1}\n", i1);
	/* Back to the first inode, shorter than the spare was. */
	write_and_check(p, "{}", STATE_WRITE_DURABLE, "{}\n", i2, false);
	assert_file_is(p, "{}\n", i1);
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0640);
	assert_file_is(sp, "{\"a\": 22222222}\n", i2);
	/* Unsynced, the same. */
	write_and_check(p, "[3]", STATE_WRITE_RENAME, "[3]\n", i1, false);
	assert_file_is(p, "[3]\n", i2);

	/* A spare with another link keeps what it holds for that link. */
	assert_int_equal(link(sp, q), 0);
	write_and_check(p, "[4]", STATE_WRITE_DURABLE, "[4]\n", i2, false);
	assert_text(q, "{}\n");
	assert_int_equal(unlink(q), 0);
	/* A spare that is a symbolic link: its target is left as it was. */
	unlink(sp);
	assert_int_equal(symlink(q, sp), 0);
	assert_int_equal(state_write_file(dir, p, "web.state", "[5]", STATE_WRITE_DURABLE), 0);
	assert_int_equal(lstat(q, &sb), -1);
	assert_text(p, "[5]\n");
	assert_int_equal(lstat(sp, &sb) == 0 && S_ISLNK(sb.st_mode), 0);
	/* A FIFO as the spare does not block the save (the alarm fails a
	 * hang). */
	unlink(sp);
	assert_int_equal(mkfifo(sp, 0600), 0);
	assert_int_equal(state_write_file(dir, p, "web.state", "[6]", STATE_WRITE_DURABLE), 0);
	assert_text(p, "[6]\n");
	alarm(0);
}

/* Routine saves overwrite a small file in place, padded to its old length
 * with spaces, and it still reads back; saves that must be durable, large
 * ones, and paths that are not a plain file of one link are replaced by a
 * rename, as before. */
static void test_write_in_place(void **st)
{
	char p[PATH_MAX], q[PATH_MAX], big[STATE_IN_PLACE_MAX + 16];
	struct group_state a, b;
	struct stat s1, s2;
	ino_t ino;
	cJSON *j;
	char *t;

	(void)st;
	alarm(10);
	assert_int_equal(state_path(dir, "web", p, sizeof(p)), 0);
	ino = write_and_check(p, "{\"a\": 1000}", STATE_WRITE_DURABLE, "{\"a\": 1000}\n", 0, false);
	/* Shorter: same file, same length, the rest blanks and a newline. */
	write_and_check(p, "{\"a\": 1}", STATE_WRITE_IN_PLACE, "{\"a\": 1}   \n", ino, true);
	t = file_text(p, &s2);
	assert_non_null(j = cJSON_Parse(t));
	cJSON_Delete(j);
	free(t);
	/* Longer: the same file grows. */
	write_and_check(p, "{\"a\": 123456}", STATE_WRITE_IN_PLACE, "{\"a\": 123456}\n", ino, true);
	/* A routine save not allowed in place is renamed, unsynced. */
	ino = write_and_check(p, "{\"a\": 3}", STATE_WRITE_RENAME, "{\"a\": 3}\n", ino, false);
	/* A durable save is a new file renamed over the old one. */
	ino = write_and_check(p, "{\"a\": 2}", STATE_WRITE_DURABLE, "{\"a\": 2}\n", ino, false);
	/* Larger than one write in place: renamed, with its own length. */
	memset(big, ' ', sizeof(big) - 1);
	big[0] = '1';
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(state_write_file(dir, p, "web.state", big, STATE_WRITE_IN_PLACE), 0);
	t = file_text(p, &s2);
	assert_int_not_equal(s2.st_ino, ino);
	assert_int_equal(s2.st_size, (off_t)sizeof(big));
	free(t);
	/* A small save after it: the file is too large to overwrite. */
	ino = write_and_check(p, "{}", STATE_WRITE_IN_PLACE, "{}\n", s2.st_ino, false);
	/* A hard link someone made keeps what it had. */
	snprintf(q, sizeof(q), "%s/copy", dir);
	assert_int_equal(link(p, q), 0);
	write_and_check(p, "[]", STATE_WRITE_IN_PLACE, "[]\n", ino, false);
	t = file_text(q, &s1);
	assert_string_equal(t, "{}\n");
	free(t);
	/* A symbolic link is replaced, its target left as it was; a FIFO is
	 * replaced without blocking (the alarm fails a hang). */
	assert_int_equal(unlink(p), 0);
	assert_int_equal(symlink(q, p), 0);
	assert_int_equal(state_write_file(dir, p, "web.state", "[1]", STATE_WRITE_IN_PLACE), 0);
	assert_int_equal(lstat(p, &s2), 0);
	assert_true(S_ISREG(s2.st_mode));
	t = file_text(q, &s1);
	assert_string_equal(t, "{}\n");
	free(t);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(mkfifo(p, 0600), 0);
	assert_int_equal(state_write_file(dir, p, "web.state", "[2]", STATE_WRITE_IN_PLACE), 0);
	assert_int_equal(lstat(p, &s2), 0);
	assert_true(S_ISREG(s2.st_mode));
	/* A padded state file reads back as the state it holds. */
	state_init(&a);
	a.pin.active = true;
	a.pin.count = 6;
	{
		cJSON *o = state_to_json(&a, "web", clock_virtual(NOW), 0);
		char *text = cJSON_Print(o), *wide;

		cJSON_Delete(o);
		assert_non_null(wide = calloc(1, strlen(text) + 201));
		memcpy(wide, text, strlen(text));
		memset(wide + strlen(text), ' ', 200);
		assert_int_equal(state_write_file(dir, p, "web.state", wide, STATE_WRITE_DURABLE), 0);
		free(wide);
		free(file_text(p, &s1));
		assert_int_equal(state_write_file(dir, p, "web.state", text, STATE_WRITE_IN_PLACE), 0);
		free(text);
	}
	free(file_text(p, &s2));
	assert_int_equal(s2.st_ino, s1.st_ino);
	assert_int_equal(s2.st_size, s1.st_size);
	assert_int_equal(state_load(dir, &gc, clock_virtual(NOW + 1000), &b), STATE_RESTORED);
	assert_same(&a, &b);
	alarm(0);
}

static void test_bad_names(void **st)
{
	struct group_state s;
	char p[64];

	(void)st;
	state_init(&s);
	assert_int_equal(state_path(dir, "../etc/x", p, sizeof(p)), -EINVAL);
	assert_int_equal(state_path(dir, ".hidden", p, sizeof(p)), -EINVAL);
	assert_int_equal(state_path(dir, "", p, sizeof(p)), -EINVAL);
	assert_int_equal(state_path(dir, "web", p, 8), -ENAMETOOLONG);
	assert_int_equal(state_save(dir, "a/b", &s, clock_virtual(NOW)), -EINVAL);
	assert_int_equal(state_save("/nonexistent-dir-for-test", "web", &s, clock_virtual(NOW)), -ENOENT);
}

/* Replaces the first occurrence of `from` in the saved text by `to`, writes
 * the result and expects a safe start. */
static void corrupt_and_expect_safe(const char *from, const char *to)
{
	char *t = saved_text();
	char *at = strstr(t, from);
	char buf[16384];
	struct group_state s;

	assert_non_null(at);
	snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - t), t, to, at + strlen(from));
	free(t);
	write_text(buf, strlen(buf));
	assert_int_equal(state_load(dir, &gc, clock_virtual(NOW), &s), STATE_SAFE);
	assert_safe(&s);
}

static void test_corruptions(void **st)
{
	char big[STATE_MAX_FILE_SIZE + 16];
	struct group_state s;

	(void)st;
	/* Not JSON at all, and an empty file. */
	write_text("garbage\x01\x02", 9);
	assert_int_equal(state_load(dir, &gc, clock_virtual(NOW), &s), STATE_SAFE);
	assert_safe(&s);
	write_text("", 0);
	assert_int_equal(state_load(dir, &gc, clock_virtual(NOW), &s), STATE_SAFE);
	assert_safe(&s);
	write_text("[1,2,3]", 7);
	assert_int_equal(state_load(dir, &gc, clock_virtual(NOW), &s), STATE_SAFE);

	/* Another format version, another engine state version. */
	corrupt_and_expect_safe("\"format\":\t1", "\"format\":\t2");
	corrupt_and_expect_safe("\"version\":\t1", "\"version\":\t99");
	/* Another group's file copied over. */
	corrupt_and_expect_safe("\"group\":\t\"web\"", "\"group\":\t\"db\"");
	/* Values out of range: a negative count, a fractional time, a time
	 * far in the future, a direction that does not exist. */
	corrupt_and_expect_safe("\"count\":\t5", "\"count\":\t-5");
	corrupt_and_expect_safe("\"from\":\t4", "\"from\":\t4.5");
	corrupt_and_expect_safe("\"last_action_ms\":\t", "\"last_action_ms\":\t9");
	corrupt_and_expect_safe("\"last_action_dir\":\t\"in\"", "\"last_action_dir\":\t\"sideways\"");
	corrupt_and_expect_safe("\"dry_run\":\ttrue", "\"dry_run\":\t\"yes\"");
	/* An action in flight that goes the wrong way. */
	corrupt_and_expect_safe("\"to\":\t7", "\"to\":\t2");
	/* A missing history, a history that is not in time order, a pair
	 * that is not a pair. */
	corrupt_and_expect_safe("\"down_recs\"", "\"down_recz\"");
	corrupt_and_expect_safe("[1764679710000, 10]", "[1764679999000, 10]");
	corrupt_and_expect_safe("[1764679710000, 10]", "[1764679710000]");

	/* A file larger than any state file. */
	memset(big, ' ', sizeof(big));
	write_text(big, sizeof(big));
	assert_int_equal(state_load(dir, &gc, clock_virtual(NOW), &s), STATE_SAFE);
	assert_safe(&s);
}

static void test_too_many_entries(void **st)
{
	char buf[16384];
	size_t n = 0;
	struct group_state s;

	(void)st;
	n += (size_t)snprintf(buf + n, sizeof(buf) - n,
			      "{\"format\":1,\"group\":\"web\",\"engine\":{\"version\":1,\"up_recs\":[],\"events\":[],"
			      "\"last_action_ms\":0,\"last_action_dir\":\"none\",\"no_scale_in_before_ms\":0,"
			      "\"down_recs\":[");
	for (int i = 0; i <= ENGINE_STORED_HISTORY; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s[%d,%d]", i ? "," : "", i, 200 - i);
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "]}}");
	write_text(buf, n);
	assert_int_equal(state_load(dir, &gc, clock_virtual(NOW), &s), STATE_SAFE);
	assert_safe(&s);
}

/* A file of a release that kept 64 entries a history (ENGINE_STORED_HISTORY)
 * reads back folded to what the engine keeps, as the engine folds its own:
 * the scale-in window keeps its largest recommendation and its newest time,
 * and the events keep every instance they added. */
static void test_longer_history_folded(void **st)
{
	char buf[16384];
	size_t n = 0, k;
	int sum = 0;
	struct group_state s;
	int64_t t0 = NOW - 3000 * 1000;

	(void)st;
	assert_true(ENGINE_STORED_HISTORY > ENGINE_MAX_HISTORY);
	n += (size_t)snprintf(buf + n, sizeof(buf) - n,
			      "{\"format\":1,\"group\":\"web\",\"engine\":{\"version\":1,\"up_recs\":[],"
			      "\"last_action_ms\":%" PRId64 ",\"last_action_dir\":\"out\",\"no_scale_in_before_ms\":0,"
			      "\"down_recs\":[",
			      t0 + (ENGINE_STORED_HISTORY - 1) * 15000);
	/* Falling recommendations 200, 199, ...: each one an entry. */
	for (int i = 0; i < ENGINE_STORED_HISTORY; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s[%" PRId64 ",%d]", i ? "," : "",
				      t0 + i * 15000, 200 - i);
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "],\"events\":[");
	for (int i = 0; i < ENGINE_STORED_HISTORY; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s[%" PRId64 ",1]", i ? "," : "", t0 + i * 15000);
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "]}}");
	write_text(buf, n);
	assert_int_equal(state_load(dir, &gc, clock_virtual(NOW), &s), STATE_RESTORED);
	assert_int_equal(s.engine.n_down_recs, ENGINE_MAX_HISTORY);
	assert_int_equal(s.engine.down_recs[0].count, 200);
	assert_int_equal(s.engine.down_recs[ENGINE_MAX_HISTORY - 1].count, 200 - (ENGINE_STORED_HISTORY - 1));
	for (k = 1; k < s.engine.n_down_recs; k++) {
		assert_true(s.engine.down_recs[k].count < s.engine.down_recs[k - 1].count);
		assert_true(s.engine.down_recs[k].t_ms > s.engine.down_recs[k - 1].t_ms);
	}
	assert_int_equal(s.engine.n_events, ENGINE_MAX_HISTORY);
	for (k = 0; k < s.engine.n_events; k++)
		sum += s.engine.events[k].delta;
	assert_int_equal(sum, ENGINE_STORED_HISTORY);
}

/* Every truncation of a good file is detected; random byte damage never
 * crashes and never yields values outside their ranges. */
static void test_truncations_and_flips(void **st)
{
	char *t = saved_text();
	size_t len = strlen(t);
	struct group_state s;
	char *buf = malloc(len + 1);

	(void)st;
	for (size_t cut = 0; cut < len; cut++) {
		write_text(t, cut);
		assert_int_equal(state_load(dir, &gc, clock_virtual(NOW), &s), STATE_SAFE);
		assert_int_equal(s.engine.no_scale_in_before_ms, NOW + WINDOW_MS);
	}
	write_text(t, len);
	assert_int_equal(state_load(dir, &gc, clock_virtual(NOW), &s), STATE_RESTORED);

	srand(42);
	for (int round = 0; round < 2000; round++) {
		enum state_origin o;

		memcpy(buf, t, len + 1);
		for (int k = 0; k < 1 + round % 4; k++)
			buf[(size_t)rand() % len] = (char)(rand() % 256);
		write_text(buf, len);
		o = state_load(dir, &gc, clock_virtual(NOW), &s);
		assert_true(o == STATE_RESTORED || o == STATE_SAFE);
		assert_in_range(s.engine.n_down_recs, 0, ENGINE_MAX_HISTORY);
		assert_in_range(s.engine.n_up_recs, 0, ENGINE_MAX_HISTORY);
		assert_in_range(s.engine.n_events, 0, ENGINE_MAX_HISTORY);
		assert_in_range(s.pin.count, 0, STATE_MAX_COUNT);
		for (size_t i = 1; i < s.engine.n_down_recs; i++)
			assert_true(s.engine.down_recs[i].t_ms >= s.engine.down_recs[i - 1].t_ms);
		if (o == STATE_SAFE)
			assert_safe(&s);
	}
	free(buf);
	free(t);
}

/* A state saved by one daemon and loaded by the next, after a reboot (the
 * monotonic clock starts again) and with the wall clock stepped while the
 * daemon was down. */
static void test_restart_maps_times(void **st)
{
	const int64_t m1 = 5000 * MS_PER_SEC, m2 = 20 * MS_PER_SEC, down = 60 * MS_PER_SEC;
	struct group_state a, b;
	cJSON *j, *e;
	char why[256];

	(void)st;
	state_init(&a);
	for (int i = 0; i < 10; i++)
		a.engine.down_recs[i] = (struct engine_rec){.t_ms = m1 - 290000 + i * 15000, .count = 10 - i};
	a.engine.n_down_recs = 10;
	a.engine.events[0] = (struct engine_event){.t_ms = m1 - 30000, .delta = -2};
	a.engine.n_events = 1;
	a.engine.last_action_ms = m1 - 30000;
	a.engine.last_action_dir = DIR_IN;
	a.engine.no_scale_in_before_ms = m1 + 100000;
	a.in_flight = (struct state_action){.direction = DIR_IN, .from = 6, .to = 4, .started_ms = m1 - 5000,
					    .deadline_ms = m1 - 5000 + STATE_IN_FLIGHT_DEADLINE_MS};
	j = state_to_json(&a, "web", clocks(NOW, m1), 0);
	assert_non_null(j);
	/* The file holds wall-clock times. */
	e = cJSON_GetObjectItem(j, "engine");
	assert_int_equal(cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItem(e, "down_recs"), 0), 0)->valuedouble,
			 NOW - 290000);
	assert_int_equal(cJSON_GetObjectItem(e, "no_scale_in_before_ms")->valuedouble, NOW + 100000);

	/* A minute later, the clock unchanged: every window has a minute less
	 * left than at the save, measured on the new monotonic clock. */
	assert_int_equal(state_from_json(j, &gc, clocks(NOW + down, m2), &b, why, sizeof(why)), 0);
	assert_int_equal(b.engine.down_recs[0].t_ms, m2 - down - 290000);
	assert_int_equal(b.engine.down_recs[9].t_ms, m2 - down - 290000 + 9 * 15000);
	assert_int_equal(b.engine.events[0].t_ms, m2 - down - 30000);
	assert_int_equal(b.engine.last_action_ms, m2 - down - 30000);
	assert_int_equal(b.engine.no_scale_in_before_ms, m2 - down + 100000);
	assert_int_equal(b.in_flight.started_ms, m2 - down - 5000);
	assert_int_equal(b.in_flight.deadline_ms, m2 - down - 5000 + STATE_IN_FLIGHT_DEADLINE_MS);

	/* The clock stepped back an hour: the file's times lie ahead of now.
	 * They count as now, and deadlines as at most their configured length
	 * from now: no window lasts longer than the configuration says. */
	assert_int_equal(state_from_json(j, &gc, clocks(NOW + down - HOUR_MS, m2), &b, why, sizeof(why)), 0);
	for (size_t i = 0; i < b.engine.n_down_recs; i++)
		assert_int_equal(b.engine.down_recs[i].t_ms, m2);
	assert_int_equal(b.engine.events[0].t_ms, m2);
	assert_int_equal(b.engine.last_action_ms, m2);
	assert_int_equal(b.engine.no_scale_in_before_ms, m2 + WINDOW_MS);
	assert_int_equal(b.in_flight.started_ms, m2);
	assert_int_equal(b.in_flight.deadline_ms, m2 + STATE_IN_FLIGHT_DEADLINE_MS);

	/* The clock stepped forward an hour: an hour counts as passed. */
	assert_int_equal(state_from_json(j, &gc, clocks(NOW + down + HOUR_MS, m2), &b, why, sizeof(why)), 0);
	assert_int_equal(b.engine.down_recs[9].t_ms, m2 - down - HOUR_MS - 290000 + 9 * 15000);
	assert_true(b.engine.no_scale_in_before_ms < m2);
	cJSON_Delete(j);

	/* A hold that has passed and no action at all are written as 0, and
	 * a 0 reads back as none. */
	a.engine.no_scale_in_before_ms = m1 - 1;
	a.engine.last_action_dir = DIR_NONE;
	j = state_to_json(&a, "web", clocks(NOW, m1), 0);
	e = cJSON_GetObjectItem(j, "engine");
	assert_int_equal(cJSON_GetObjectItem(e, "no_scale_in_before_ms")->valuedouble, 0);
	assert_int_equal(cJSON_GetObjectItem(e, "last_action_ms")->valuedouble, 0);
	assert_int_equal(state_from_json(j, &gc, clocks(NOW, m2), &b, why, sizeof(why)), 0);
	assert_int_equal(b.engine.no_scale_in_before_ms, 0);
	assert_int_equal(b.engine.last_action_ms, 0);
	cJSON_Delete(j);
}

/* A state saved with refresh_ms (a steady group's routine save, written
 * at most that often): after a crash, the scale-in window's newest
 * recommendation is held until refresh_ms after the save, or until now
 * when that is sooner, as it may have been recommended again unsaved; the
 * scale-out window's is left as saved, and so is every state written
 * without refresh_ms. */
static void test_refresh_holds_newest(void **st)
{
	const int64_t m1 = 5000 * MS_PER_SEC, m2 = 20 * MS_PER_SEC, refresh = 60 * MS_PER_SEC;
	struct group_state a, b;
	char why[256];
	cJSON *j;

	(void)st;
	state_init(&a);
	a.engine.down_recs[0] = (struct engine_rec){.t_ms = m1 - 100000, .count = 5};
	a.engine.down_recs[1] = (struct engine_rec){.t_ms = m1 - 10000, .count = 3};
	a.engine.n_down_recs = 2;
	a.engine.up_recs[0] = (struct engine_rec){.t_ms = m1 - 10000, .count = 3};
	a.engine.n_up_recs = 1;
	j = state_to_json(&a, "web", clocks(NOW, m1), refresh);
	assert_int_equal(cJSON_GetObjectItem(j, "refresh_ms")->valuedouble, refresh);

	/* Five minutes later: held until a minute after the save. */
	assert_int_equal(state_from_json(j, &gc, clocks(NOW + 5 * 60000, m2), &b, why, sizeof(why)), 0);
	assert_int_equal(b.engine.down_recs[0].t_ms, m2 - 5 * 60000 - 100000);
	assert_int_equal(b.engine.down_recs[1].t_ms, m2 - 5 * 60000 + refresh);
	assert_int_equal(b.engine.up_recs[0].t_ms, m2 - 5 * 60000 - 10000);
	/* Twenty seconds later: held until now. */
	assert_int_equal(state_from_json(j, &gc, clocks(NOW + 20000, m2), &b, why, sizeof(why)), 0);
	assert_int_equal(b.engine.down_recs[1].t_ms, m2);
	assert_int_equal(b.engine.up_recs[0].t_ms, m2 - 20000 - 10000);
	cJSON_Delete(j);

	/* An exact state (a clean stop's) is read as saved. */
	j = state_to_json(&a, "web", clocks(NOW, m1), 0);
	assert_null(cJSON_GetObjectItem(j, "refresh_ms"));
	assert_int_equal(state_from_json(j, &gc, clocks(NOW + 5 * 60000, m2), &b, why, sizeof(why)), 0);
	assert_int_equal(b.engine.down_recs[1].t_ms, m2 - 5 * 60000 - 10000);
	cJSON_Delete(j);
}

/* A wall-clock step while the daemon runs changes no time in memory: a
 * save after it and a load at the same instant give the same state. */
static void test_step_while_running(void **st)
{
	struct group_state a, b;

	(void)st;
	sample_state(&a);
	assert_int_equal(state_save(dir, "web", &a, clocks(NOW - HOUR_MS, NOW)), 0);
	assert_int_equal(state_load(dir, &gc, clocks(NOW - HOUR_MS, NOW), &b), STATE_RESTORED);
	assert_same(&a, &b);
	assert_int_equal(state_save(dir, "web", &a, clocks(NOW + HOUR_MS, NOW)), 0);
	assert_int_equal(state_load(dir, &gc, clocks(NOW + HOUR_MS, NOW), &b), STATE_RESTORED);
	assert_same(&a, &b);
}

static void test_expire(void **st)
{
	struct group_state s;

	(void)st;
	state_init(&s);
	s.pin = (struct state_pin){.active = true, .count = 3, .until_ms = NOW + 1000};
	s.pause = (struct state_pause){.active = true, .until_ms = 0};
	assert_false(state_expire(&s, NOW + 999));
	assert_true(s.pin.active);
	assert_true(state_expire(&s, NOW + 1000));
	assert_false(s.pin.active);
	/* An indefinite pause stays until resumed. */
	assert_true(s.pause.active);
	assert_false(state_expire(&s, NOW + 365LL * 86400000));
	s.pause.until_ms = NOW + 5;
	assert_true(state_expire(&s, NOW + 5));
	assert_false(s.pause.active);
}

/* A new owner's state in a cluster: the record's actions, overrides and
 * action in flight, its windows continued by what the new owner evaluated
 * after the record's newest recommendation, and a scale-in hold only when
 * a crash may have lost recommendations neither has. */
static void test_merge_record(void **st)
{
	struct group_conf g = gc;
	struct group_state rec, own, m;
	int64_t now = 100000;

	(void)st;
	g.interval_ms = 15000;
	state_init(&rec);
	rec.engine.down_recs[0] = (struct engine_rec){.t_ms = 1000, .count = 8};
	rec.engine.down_recs[1] = (struct engine_rec){.t_ms = 5000, .count = 6};
	rec.engine.n_down_recs = 2;
	rec.engine.events[0] = (struct engine_event){.t_ms = 900, .delta = 3};
	rec.engine.n_events = 1;
	rec.engine.last_action_ms = 900;
	rec.engine.last_action_dir = DIR_OUT;
	rec.in_flight = (struct state_action){.direction = DIR_OUT, .from = 3, .to = 6, .started_ms = 4000,
					      .deadline_ms = 4000 + STATE_IN_FLIGHT_DEADLINE_MS};
	rec.pin = (struct state_pin){.active = true, .count = 5};
	state_init(&own);
	own.engine.down_recs[0] = (struct engine_rec){.t_ms = 3000, .count = 9}; /* before the record's newest */
	own.engine.down_recs[1] = (struct engine_rec){.t_ms = 7000, .count = 7};
	own.engine.down_recs[2] = (struct engine_rec){.t_ms = 9000, .count = 4};
	own.engine.n_down_recs = 3;
	own.boot.measured_ms = 90000;
	own.boot.n_measured = 2;

	/* Evaluated since before the record's newest: no hole. */
	m = own;
	assert_false(state_merge_record(&m, &rec, false, 2000, &g, now));
	assert_int_equal(m.engine.n_down_recs, 3);
	assert_int_equal(m.engine.down_recs[0].count, 8);
	assert_int_equal(m.engine.down_recs[1].t_ms, 7000);
	assert_int_equal(m.engine.down_recs[1].count, 7);
	assert_int_equal(m.engine.down_recs[2].count, 4);
	assert_int_equal(m.engine.n_events, 1);
	assert_int_equal(m.engine.events[0].delta, 3);
	assert_int_equal(m.engine.last_action_ms, 900);
	assert_int_equal(m.in_flight.direction, DIR_OUT);
	assert_int_equal(m.in_flight.to, 6);
	assert_true(m.pin.active);
	assert_int_equal(m.pin.count, 5);
	assert_int_equal(m.boot.measured_ms, 90000); /* the record had none */
	assert_int_equal(m.engine.no_scale_in_before_ms, 0);

	/* Evaluated only from well after it, and the record was not its
	 * writer's last: scale-in waits the longest window. */
	m = own;
	assert_true(state_merge_record(&m, &rec, false, 5000 + 2 * 15000 + 1, &g, now));
	assert_int_equal(m.engine.no_scale_in_before_ms, now + WINDOW_MS);
	/* Two intervals of slack are not a hole. */
	m = own;
	assert_false(state_merge_record(&m, &rec, false, 5000 + 2 * 15000, &g, now));
	/* Its writer's last record: nothing was decided after it. */
	m = own;
	assert_false(state_merge_record(&m, &rec, true, 5000 + 2 * 15000 + 1, &g, now));
	assert_int_equal(m.engine.no_scale_in_before_ms, 0);
	/* A hold of the new owner's own is kept. */
	m = own;
	m.engine.no_scale_in_before_ms = now + 1;
	assert_false(state_merge_record(&m, &rec, true, 0, &g, now));
	assert_int_equal(m.engine.no_scale_in_before_ms, now + 1);
}

static void test_reconcile(void **st)
{
	struct group_state s;

	(void)st;
	state_init(&s);
	assert_int_equal(state_reconcile(&s, 3, true, NOW), RECONCILE_NONE);

	/* A scale-out from 4 to 7 is pending while the backend converges,
	 * however long it takes within the deadline, and done once 7 are seen
	 * and the group is stable. */
	s.in_flight = (struct state_action){.direction = DIR_OUT, .from = 4, .to = 7, .started_ms = NOW,
					    .deadline_ms = NOW + 60000};
	assert_int_equal(state_reconcile(&s, 5, false, NOW + 1000), RECONCILE_PENDING);
	assert_int_equal(state_reconcile(&s, 7, false, NOW + 2000), RECONCILE_PENDING);
	assert_int_equal(state_reconcile(&s, 7, true, NOW + 3000), RECONCILE_DONE);
	assert_int_equal(s.in_flight.direction, DIR_NONE);

	/* Stable short of the target: the operation died with the old
	 * process; waiting longer would only block the group. */
	s.in_flight = (struct state_action){.direction = DIR_OUT, .from = 4, .to = 7, .started_ms = NOW,
					    .deadline_ms = NOW + 60000};
	assert_int_equal(state_reconcile(&s, 5, true, NOW + 1000), RECONCILE_STOPPED);
	assert_int_equal(s.in_flight.direction, DIR_NONE);

	/* A scale-in from 6 to 3 that the backend never finishes gives up at
	 * the deadline. */
	s.in_flight = (struct state_action){.direction = DIR_IN, .from = 6, .to = 3, .started_ms = NOW,
					    .deadline_ms = NOW + 60000};
	assert_int_equal(state_reconcile(&s, 5, false, NOW + 59999), RECONCILE_PENDING);
	assert_int_equal(state_reconcile(&s, 5, false, NOW + 60000), RECONCILE_EXPIRED);
	assert_int_equal(s.in_flight.direction, DIR_NONE);
	s.in_flight = (struct state_action){.direction = DIR_IN, .from = 6, .to = 3, .started_ms = NOW,
					    .deadline_ms = NOW + 60000};
	assert_int_equal(state_reconcile(&s, 3, true, NOW + 1), RECONCILE_DONE);
}

/* A pause and a pin are engine inputs now (test-engine); what stays here is
 * the dry-run override. */
static void test_dry_run(void **st)
{
	struct group_state s;

	(void)st;
	state_init(&s);
	assert_true(state_dry_run(&s, true));
	assert_false(state_dry_run(&s, false));
	s.dry_run = STATE_DRY_RUN_OFF;
	assert_false(state_dry_run(&s, true));
	s.dry_run = STATE_DRY_RUN_ON;
	assert_true(state_dry_run(&s, false));
}

/* The boot time measured from the group's own actions survives a restart;
 * the action being timed does not (its start is on the old monotonic
 * clock). A file without one (written before boot times were measured) is
 * still read. */
static void test_boot_time_persists(void **st)
{
	struct group_state a, b;

	(void)st;
	state_init(&a);
	forecast_boot_action(&a.boot, 1000, 2, 4);
	forecast_boot_observe(&a.boot, 1000 + 95 * MS_PER_SEC, 4);
	forecast_boot_action(&a.boot, 500 * MS_PER_SEC, 4, 5);
	assert_int_equal(state_save(dir, "web", &a, clock_virtual(NOW)), 0);
	assert_int_equal(state_load(dir, &gc, clock_virtual(NOW + 1000), &b), STATE_RESTORED);
	assert_int_equal(forecast_boot_horizon(&b.boot, 120 * MS_PER_SEC), 95 * MS_PER_SEC);
	assert_int_equal(b.boot.n_measured, 1);
	assert_int_equal(b.boot.pending_since_ms, 0);

	state_init(&a);
	assert_int_equal(state_save(dir, "web", &a, clock_virtual(NOW)), 0);
	assert_int_equal(state_load(dir, &gc, clock_virtual(NOW + 1000), &b), STATE_RESTORED);
	assert_int_equal(forecast_boot_horizon(&b.boot, 120 * MS_PER_SEC), 120 * MS_PER_SEC);
}

/* The forecasters' history goes through its file unchanged but for the
 * predictions still waiting to be scored; a corrupt file is refused with a
 * reason and leaves the forecaster fresh. */
static void test_forecast_persists(void **st)
{
	struct forecast_conf cpu_fc = { .mode = FORECAST_ON, .quantile = 0.9 };
	struct signal_conf sigs[2] = { { .name = "cpu", .forecast = &cpu_fc }, { .name = "queue" } };
	struct group_conf g2 = { .name = "web", .signals = sigs, .n_signals = 2 };
	struct forecast *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	struct forecast *fa[2] = { a, NULL }, *fb[2] = { b, NULL };
	struct forecast_value va, vb;
	char why[256], p[PATH_MAX];
	FILE *f;

	(void)st;
	forecast_init(a, 0.9);
	forecast_set_service(a, 0.99);
	for (int64_t t = NOW; t < NOW + 3 * 86400 * MS_PER_SEC; t += 60 * MS_PER_SEC) {
		assert_int_equal(forecast_update(a, t, 50.0 + (double)(t / 60000 % 97), 120 * MS_PER_SEC,
						 120 * MS_PER_SEC), 0);
		forecast_service(a, t / 60000 % 97 > 90, 0);
	}
	assert_true(a->q_adjust != 0);
	assert_int_equal(forecast_file_save(dir, &g2, fa), 0);
	forecast_init(b, 0.9);
	/* The service level is the configuration's: the offset measured for
	 * it comes back with the file. */
	cpu_fc.service_level = 0.99;
	assert_int_equal(forecast_file_load(dir, &g2, fb, why, sizeof(why)), 1);
	assert_true(b->service_level == 0.99);
	assert_true(fabs(b->q_adjust - a->q_adjust) < 1e-9);
	assert_true(a->service_short > 0 && a->n_service > 1000);
	assert_true(fabs(b->service_short - a->service_short) < 1e-9 && b->n_service == a->n_service);
	assert_int_equal(b->n_samples, a->n_samples);
	assert_true(a->step_error > 0);
	assert_true(fabs(b->step_error - a->step_error) < 1e-9 * a->step_error);
	assert_memory_equal(b->week, a->week, sizeof(a->week));
	assert_memory_equal(b->day, a->day, sizeof(a->day));
	assert_int_equal(forecast_predict(a, a->last_ms, 3600 * MS_PER_SEC, &va), 0);
	assert_int_equal(forecast_predict(b, b->last_ms, 3600 * MS_PER_SEC, &vb), 0);
	assert_true(fabs(va.upper - vb.upper) < 1e-6 * fabs(va.upper) + 1e-9);
	/* Another level asked for since: the offset starts again at 0, the
	 * history stays. */
	cpu_fc.service_level = 0.995;
	forecast_init(b, 0.9);
	assert_int_equal(forecast_file_load(dir, &g2, fb, why, sizeof(why)), 1);
	assert_true(b->service_level == 0.995 && b->q_adjust == 0);
	assert_int_equal(b->n_samples, a->n_samples);
	/* A file from before service levels (neither key) reads with none;
	 * an offset out of range is refused. */
	{
		cJSON *j = forecast_group_json(&g2, fa), *c = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "signals"), "cpu");

		cpu_fc.service_level = 0;
		cJSON_DeleteItemFromObject(c, "service_level");
		cJSON_DeleteItemFromObject(c, "q_adjust");
		cJSON_DeleteItemFromObject(c, "service_short");
		cJSON_DeleteItemFromObject(c, "service_samples");
		forecast_init(b, 0.9);
		assert_int_equal(forecast_group_from_json(j, &g2, fb, false, why, sizeof(why)), 1);
		assert_true(b->service_level == 0 && b->q_adjust == 0 && b->service_short == 0 && b->n_service == 0);
		cJSON_AddNumberToObject(c, "service_level", 0.99);
		cJSON_AddNumberToObject(c, "q_adjust", 1e6);
		assert_int_equal(forecast_group_from_json(j, &g2, fb, false, why, sizeof(why)), -EINVAL);
		assert_non_null(strstr(why, "service level"));
		cJSON_Delete(j);
	}

	/* Corrupt: a bucket too few. */
	snprintf(p, sizeof(p), "%s/web.forecast", dir);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs("{\"format\":1,\"group\":\"web\",\"signals\":{\"cpu\":{\"version\":1,\"day\":[]}}}", f);
	fclose(f);
	forecast_init(b, 0.9);
	assert_int_equal(forecast_file_load(dir, &g2, fb, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "forecaster"));
	assert_int_equal(b->n_samples, 0);
	/* Another group's file. */
	f = fopen(p, "w");
	fputs("{\"format\":1,\"group\":\"db\",\"signals\":{}}", f);
	fclose(f);
	assert_int_equal(forecast_file_load(dir, &g2, fb, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "another group"));
	unlink(p);
	assert_int_equal(forecast_file_load(dir, &g2, fb, why, sizeof(why)), -ENOENT);

	/* A cluster's new owner takes the record's forecaster only where it
	 * has learnt more than its own. */
	{
		cJSON *j = forecast_group_json(&g2, fa);
		uint64_t had;

		assert_non_null(j);
		forecast_init(b, 0.9);
		assert_int_equal(forecast_group_from_json(j, &g2, fb, true, why, sizeof(why)), 1);
		assert_int_equal(b->n_samples, a->n_samples);
		had = a->n_samples;
		b->n_samples = had + 1;
		assert_int_equal(forecast_group_from_json(j, &g2, fb, true, why, sizeof(why)), 0);
		assert_int_equal(b->n_samples, had + 1);
		/* A restart's file, though, is always taken. */
		assert_int_equal(forecast_group_from_json(j, &g2, fb, false, why, sizeof(why)), 1);
		assert_int_equal(b->n_samples, had);
		cJSON_Delete(j);
	}
	free(a);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
		cmocka_unit_test(test_packed_round_trip),
		cmocka_unit_test_setup_teardown(test_clean_state_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_is_fresh, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_a_regular_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_in_place, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_through_spare, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corruptions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_too_many_entries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_longer_history_folded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncations_and_flips, setup, teardown),
		cmocka_unit_test_setup_teardown(test_step_while_running, setup, teardown),
		cmocka_unit_test(test_restart_maps_times),
		cmocka_unit_test(test_expire),
		cmocka_unit_test(test_reconcile),
		cmocka_unit_test(test_merge_record),
		cmocka_unit_test(test_refresh_holds_newest),
		cmocka_unit_test(test_dry_run),
		cmocka_unit_test_setup_teardown(test_boot_time_persists, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forecast_persists, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
