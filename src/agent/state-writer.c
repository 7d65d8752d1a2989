/* The writer of the groups' state files; see state-writer.h.
 *
 * One entry per path with a save queued, being written, or a failed write
 * not yet reported, in a table by path; the entries with a text to write
 * form a FIFO queue, an urgent save goes to its head. Everything is under
 * one lock; the writer drops it while it writes. An entry is freed once
 * its newest text is written (and nobody waits on it), so the table holds
 * only the files in flight. */
#include <errno.h>
#include <glib.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/state-writer.h"
#include "state/state.h"

struct entry {
	char *dir, *path, *name;
	char *text;              /* the newest text not yet being written, or NULL */
	int64_t seq;             /* its number */
	int64_t done_seq;        /* the number of the newest write that ended */
	int err;                 /* that write's result when it failed, until reported */
	bool writing;
	bool durable;            /* the text queued must be synced: a waiter needs it on disk */
	bool in_place;           /* unless durable, it may be written in place (STATE_WRITE_IN_PLACE) */
	int waiters;
	struct entry *next;      /* in the queue, while text is set */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;  /* a text was queued */
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;  /* a write ended */
static GHashTable *entries;
static struct entry *head, *tail;
static int64_t last_seq;
static bool started;
/* Callers waiting for writes (state_writer_sync(), state_writer_flush()):
 * the writer does not wait to gather routine saves while one does. */
static int hurry;
/* The writer sleeps without a deadline (nothing queued): a routine save
 * wakes it only then. */
static bool idle;
static uint64_t wakeups;

static void entry_free(struct entry *e)
{
	free(e->dir);
	free(e->path);
	free(e->name);
	free(e->text);
	free(e);
}

/* Frees an entry that holds nothing any more; under the lock. */
static void entry_release(struct entry *e)
{
	if (!e->text && !e->writing && !e->err && e->waiters == 0) {
		g_hash_table_remove(entries, e->path);
		entry_free(e);
	}
}

/* Until the routine saves queued have waited STATE_WRITER_GATHER_MS, or a
 * save that must be synced is queued, or a caller waits (under the lock).
 * The saves gathered are written one after the other: the writer and the
 * loop wake each other once a turn instead of once a save. */
static void gather(void)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += (long)STATE_WRITER_GATHER_MS * 1000000L;
	until.tv_sec += until.tv_nsec / 1000000000L;
	until.tv_nsec %= 1000000000L;
	while (head && !head->durable && hurry == 0)
		if (pthread_cond_clockwait(&work, &lock, CLOCK_MONOTONIC, &until) == ETIMEDOUT)
			break;
}

static void *writer_main(void *arg)
{
	bool draining = false;

	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;) {
		struct entry *e;
		enum state_write how;
		char *text;
		int64_t seq;
		int r;

		if (!head) {
			draining = false;
			idle = true;
			while (!head)
				pthread_cond_wait(&work, &lock);
			idle = false;
		}
		if (!draining) {
			gather();
			draining = true;
			if (!head)
				continue;
		}
		e = head;
		head = e->next;
		if (!head)
			tail = NULL;
		e->next = NULL;
		text = e->text;
		seq = e->seq;
		how = e->durable ? STATE_WRITE_DURABLE : e->in_place ? STATE_WRITE_IN_PLACE : STATE_WRITE_RENAME;
		e->text = NULL;
		e->durable = false;
		e->writing = true;
		pthread_mutex_unlock(&lock);
		r = state_write_file(e->dir, e->path, e->name, text, how);
		free(text);
		pthread_mutex_lock(&lock);
		e->writing = false;
		e->done_seq = seq;
		/* A later write that succeeds clears an earlier failure. */
		e->err = r;
		pthread_cond_broadcast(&done);
		entry_release(e);
	}
	return NULL;
}

/* Under the lock. */
static int start_writer(void)
{
	pthread_attr_t attr;
	pthread_t t;
	int r;

	if (started)
		return 0;
	if (!entries)
		entries = g_hash_table_new(g_str_hash, g_str_equal);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = -pthread_create(&t, &attr, writer_main, NULL);
	pthread_attr_destroy(&attr);
	if (r == 0)
		started = true;
	return r;
}

/* Queues TEXT for PATH and returns its entry (under the lock). */
static int queue(const char *dir, const char *path, const char *name, char *text, bool urgent, bool in_place,
		 struct entry **ret)
{
	struct entry *e;
	int r = start_writer();

	if (r < 0) {
		free(text);
		return r;
	}
	e = g_hash_table_lookup(entries, path);
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e || !(e->dir = strdup(dir)) || !(e->path = strdup(path)) || !(e->name = strdup(name))) {
			if (e)
				entry_free(e);
			free(text);
			return -ENOMEM;
		}
		g_hash_table_insert(entries, e->path, e);
	}
	if (e->text) {
		/* Coalesced: the newer text takes the older one's turn, unless
		 * it must go first. */
		free(e->text);
		if (urgent && head != e) {
			struct entry **p = &head, *prev = NULL;

			while (*p != e) {
				prev = *p;
				p = &(*p)->next;
			}
			*p = e->next;
			if (tail == e)
				tail = prev;
			e->next = head;
			head = e;
		}
	} else if (urgent) {
		e->next = head;
		head = e;
		if (!tail)
			tail = e;
	} else {
		e->next = NULL;
		if (tail)
			tail->next = e;
		else
			head = e;
		tail = e;
	}
	e->text = text;
	e->seq = ++last_seq;
	/* A newer routine text that takes an urgent one's place is written
	 * as the urgent one would have been: its waiter counts on it. */
	e->durable = e->durable || urgent;
	e->in_place = in_place;
	/* A routine save joins the writer's turn; only one that finds it
	 * idle, or that must be synced, wakes it. */
	if (urgent || idle) {
		idle = false;
		pthread_cond_signal(&work);
		wakeups++;
	}
	*ret = e;
	return 0;
}

int64_t state_writer_save(const char *dir, const char *path, const char *name, char *text, bool in_place)
{
	struct entry *e;
	int64_t seq;
	int r;

	pthread_mutex_lock(&lock);
	r = queue(dir, path, name, text, false, in_place, &e);
	seq = r < 0 ? r : e->seq;
	pthread_mutex_unlock(&lock);
	return seq;
}

int state_writer_save_now(const char *dir, const char *path, const char *name, char *text)
{
	struct entry *e;
	int64_t seq;
	int r;

	pthread_mutex_lock(&lock);
	r = queue(dir, path, name, text, true, false, &e);
	if (r < 0) {
		pthread_mutex_unlock(&lock);
		return r;
	}
	seq = e->seq;
	e->waiters++;
	while (e->done_seq < seq)
		pthread_cond_wait(&done, &lock);
	e->waiters--;
	/* Reported here, not again by state_writer_status(). */
	r = e->err;
	if (e->done_seq == seq)
		e->err = 0;
	entry_release(e);
	pthread_mutex_unlock(&lock);
	return r;
}

int state_writer_status(const char *path)
{
	struct entry *e;
	int r = 0;

	pthread_mutex_lock(&lock);
	e = entries ? g_hash_table_lookup(entries, path) : NULL;
	if (e && (e->text || e->writing))
		r = 1;
	else if (e && e->err) {
		r = e->err;
		e->err = 0;
		entry_release(e);
	}
	pthread_mutex_unlock(&lock);
	return r;
}

void state_writer_sync(const char *path)
{
	struct entry *e;

	pthread_mutex_lock(&lock);
	e = entries ? g_hash_table_lookup(entries, path) : NULL;
	if (e) {
		e->waiters++;
		hurry++;
		pthread_cond_signal(&work);
		while (e->text || e->writing)
			pthread_cond_wait(&done, &lock);
		hurry--;
		e->waiters--;
		entry_release(e);
	}
	pthread_mutex_unlock(&lock);
}

static bool any_in_flight(void)
{
	GHashTableIter it;
	gpointer k, v;

	if (!entries)
		return false;
	g_hash_table_iter_init(&it, entries);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		const struct entry *e = v;

		if (e->text || e->writing)
			return true;
	}
	return false;
}

void state_writer_flush(void)
{
	pthread_mutex_lock(&lock);
	hurry++;
	pthread_cond_signal(&work);
	while (any_in_flight())
		pthread_cond_wait(&done, &lock);
	hurry--;
	pthread_mutex_unlock(&lock);
}

uint64_t state_writer_wakeups(void)
{
	uint64_t n;

	pthread_mutex_lock(&lock);
	n = wakeups;
	pthread_mutex_unlock(&lock);
	return n;
}
