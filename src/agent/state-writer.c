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
#include "base/heap.h"
#include "state/state.h"

struct state_writer_entry {
	char *dir, *path, *name;
	char *text;              /* the newest text not yet being written, or NULL */
	int64_t seq;             /* its number */
	int64_t done_seq;        /* the number of the newest write that ended */
	int err;                 /* that write's result when it failed, until reported */
	bool writing;
	bool durable;            /* the text queued must be synced: a waiter needs it on disk */
	bool in_place;           /* unless durable, it may be written in place (STATE_WRITE_IN_PLACE) */
	int waiters;
	struct state_writer_entry *next; /* in the queue, while text is set */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;  /* a text was queued */
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;  /* a write ended */
static GHashTable *entries;
static struct state_writer_entry *head, *tail;
static int64_t last_seq;
static bool started;
/* Callers waiting for writes (state_writer_sync(), state_writer_flush()):
 * the writer does not wait to gather routine saves while one does. */
static int hurry;
/* The writer sleeps without a deadline (nothing queued): a routine save
 * wakes it only then. */
static bool idle;
static uint64_t wakeups, dir_syncs;

/* One save the writer has taken from the queue. */
struct write_turn {
	struct state_writer_entry *e;
	char *text;
	int64_t seq;
	enum state_write how;
	int r;
};
/* The writer starts no turn (state_writer_hold(), for the tests). */
static bool held;

static void entry_free(struct state_writer_entry *e)
{
	free(e->dir);
	free(e->path);
	free(e->name);
	free(e->text);
	free(e);
}

/* Frees an entry that holds nothing any more; under the lock. */
static void entry_release(struct state_writer_entry *e)
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

/* Takes the entry at the head of the queue for writing (under the lock):
 * its text, its number and how it is written (a save that must be synced
 * with its directory left to the writer's turn). */
static void take_head(struct write_turn *w)
{
	struct state_writer_entry *e = head;

	head = e->next;
	if (!head)
		tail = NULL;
	e->next = NULL;
	w->e = e;
	w->text = e->text;
	w->seq = e->seq;
	w->how = e->durable ? STATE_WRITE_DURABLE_FILE : e->in_place ? STATE_WRITE_IN_PLACE : STATE_WRITE_RENAME;
	e->text = NULL;
	e->durable = false;
	e->writing = true;
}

static void *writer_main(void *arg)
{
	struct write_turn batch[STATE_WRITER_BATCH];
	bool draining = false;

	(void)arg;
	heap_thread_cache();
	pthread_mutex_lock(&lock);
	for (;;) {
		bool sync = false;
		size_t n = 1;

		if (!head || held) {
			draining = false;
			idle = !head;
			while (!head || held)
				pthread_cond_wait(&work, &lock);
			idle = false;
		}
		if (!draining) {
			gather();
			draining = true;
			if (!head)
				continue;
		}
		take_head(&batch[0]);
		/* The saves that must be synced, queued together, are synced
		 * together: each file, then their directory once for all their
		 * renames, where one save at a time synced the directory once
		 * each (the saves of actions come in bursts at 10,000 groups). */
		if (batch[0].how == STATE_WRITE_DURABLE_FILE)
			while (n < STATE_WRITER_BATCH && head && head->durable && strcmp(head->dir, batch[0].e->dir) == 0)
				take_head(&batch[n++]);
		pthread_mutex_unlock(&lock);
		for (size_t i = 0; i < n; i++) {
			batch[i].r = state_write_file(batch[i].e->dir, batch[i].e->path, batch[i].e->name, batch[i].text,
						      batch[i].how);
			free(batch[i].text);
			sync = sync || (batch[i].r == 0 && batch[i].how == STATE_WRITE_DURABLE_FILE);
		}
		if (sync) {
			int r = state_sync_dir(batch[0].e->dir);

			for (size_t i = 0; i < n; i++)
				if (batch[i].r == 0)
					batch[i].r = r;
		}
		pthread_mutex_lock(&lock);
		if (sync)
			dir_syncs++;
		for (size_t i = 0; i < n; i++) {
			struct state_writer_entry *e = batch[i].e;

			e->writing = false;
			e->done_seq = batch[i].seq;
			/* A later write that succeeds clears an earlier failure. */
			e->err = batch[i].r;
			entry_release(e);
		}
		pthread_cond_broadcast(&done);
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
		 struct state_writer_entry **ret)
{
	struct state_writer_entry *e;
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
			struct state_writer_entry **p = &head, *prev = NULL;

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
	 * idle wakes it. One that must be synced waits at the head of the
	 * queue for its waiter to wake the writer (state_writer_wait()), so
	 * that the saves queued before the first wait are written in one
	 * turn. */
	if (!urgent && idle) {
		idle = false;
		pthread_cond_signal(&work);
		wakeups++;
	}
	*ret = e;
	return 0;
}

int64_t state_writer_save(const char *dir, const char *path, const char *name, char *text, bool in_place)
{
	struct state_writer_entry *e;
	int64_t seq;
	int r;

	pthread_mutex_lock(&lock);
	r = queue(dir, path, name, text, false, in_place, &e);
	seq = r < 0 ? r : e->seq;
	pthread_mutex_unlock(&lock);
	return seq;
}

int state_writer_save_durable(const char *dir, const char *path, const char *name, char *text,
			      struct state_writer_ticket *ret)
{
	struct state_writer_entry *e;
	int r;

	pthread_mutex_lock(&lock);
	r = queue(dir, path, name, text, true, false, &e);
	if (r == 0) {
		e->waiters++;
		*ret = (struct state_writer_ticket){ .e = e, .seq = e->seq };
	}
	pthread_mutex_unlock(&lock);
	return r;
}

int state_writer_wait(struct state_writer_ticket *t)
{
	struct state_writer_entry *e = t->e;
	int r;

	pthread_mutex_lock(&lock);
	if (e->done_seq < t->seq) {
		idle = false;
		pthread_cond_signal(&work);
		wakeups++;
	}
	while (e->done_seq < t->seq)
		pthread_cond_wait(&done, &lock);
	e->waiters--;
	/* Reported here, not again by state_writer_status(). */
	r = e->err;
	if (e->done_seq == t->seq)
		e->err = 0;
	entry_release(e);
	pthread_mutex_unlock(&lock);
	t->e = NULL;
	return r;
}

int state_writer_save_now(const char *dir, const char *path, const char *name, char *text)
{
	struct state_writer_ticket t;
	int r = state_writer_save_durable(dir, path, name, text, &t);

	return r < 0 ? r : state_writer_wait(&t);
}

int state_writer_status(const char *path)
{
	struct state_writer_entry *e;
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
	struct state_writer_entry *e;

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
		const struct state_writer_entry *e = v;

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

void state_writer_hold(bool hold)
{
	pthread_mutex_lock(&lock);
	held = hold;
	if (!hold)
		pthread_cond_signal(&work);
	pthread_mutex_unlock(&lock);
}

/* A counter of the writer's, read under the lock. */
static uint64_t counter(const uint64_t *c)
{
	uint64_t n;

	pthread_mutex_lock(&lock);
	n = *c;
	pthread_mutex_unlock(&lock);
	return n;
}

uint64_t state_writer_dir_syncs(void)
{
	return counter(&dir_syncs);
}

uint64_t state_writer_wakeups(void)
{
	return counter(&wakeups);
}
