/* The writer of the groups' state files: one thread that writes them off
 * the loop, so that thousands of groups whose state changes at every
 * evaluation do not hold the loop on the disk (two fsyncs a file).
 *
 * Saves of one file coalesce: the newest text queued for a path replaces
 * one not yet written, so a file is written at most once per turn of the
 * writer however often it changes, and never an older text after a newer.
 * Each file is written as state_write_file() does: a crash of the daemon
 * leaves the old file or the new one. What the writer had not written yet
 * at a crash is lost. A save that must be on disk before the daemon goes on
 * (an action about to start, or done, or an operator's pause) waits for its
 * write (state_writer_save_now(), or state_writer_save_durable() and then
 * state_writer_wait() for several at once), which is also synced, file and
 * directory, so that a power loss cannot take it back either. The routine
 * saves after each evaluation (the windows' history) are not synced: two fsyncs a
 * group an interval were half of the daemon's CPU with 10,000 groups, and
 * a power loss that takes the newest of them back leaves an older state,
 * or none and a safe start; a routine save of a state that holds nothing
 * but history may be written in place (STATE_WRITE_IN_PLACE), which a power
 * loss may tear, a safe start too. (The group runtime also writes a steady
 * group's routine saves only once a minute: refresh_ms() in group.c.)
 *
 * Routine saves are gathered: the first one queued to an idle writer
 * wakes it, and it writes once they have waited STATE_WRITER_GATHER_MS (or
 * at once when a save that must be synced is queued, or a caller waits for
 * the writes), with every save queued meanwhile, in one turn. At 10,000
 * groups the loop and the writer woke each other hundreds of times a
 * second, once a save; the price is that a crash of the daemon loses up to
 * that much more of the history.
 *
 * The loop's thread queues and waits; the thread is started on the first
 * save and runs for the process. */
#ifndef AUTOSCALED_STATE_WRITER_H
#define AUTOSCALED_STATE_WRITER_H

#include <stdbool.h>
#include <stdint.h>

/* How long routine saves are gathered before the writer's turn. */
#define STATE_WRITER_GATHER_MS 100

/* Queues TEXT (taken, freed by the writer) as the newest content of PATH,
 * which lies in DIR and is named NAME there (state_write_file()'s
 * arguments, copied), to be written in place when IN_PLACE (unless an
 * earlier save of it not yet written must be synced), else renamed.
 * Returns the save's number (> 0), or a negative errno when it could not
 * be queued (TEXT is freed). */
int64_t state_writer_save(const char *dir, const char *path, const char *name, char *text, bool in_place);
/* A save that must be synced, to wait for (state_writer_wait()). */
struct state_writer_entry;
struct state_writer_ticket {
	struct state_writer_entry *e;
	int64_t seq;
};
/* As state_writer_save(), ahead of every routine save queued, and synced,
 * file and directory; returns at once, 0 or a negative errno (TEXT is
 * freed), and *RET is the save's ticket, which must be waited for. The
 * saves that must be synced, queued together in one directory, are
 * written in one turn of the writer and take one sync of the directory
 * between them (at most STATE_WRITER_BATCH a turn). */
#define STATE_WRITER_BATCH 64
int state_writer_save_durable(const char *dir, const char *path, const char *name, char *text,
			      struct state_writer_ticket *ret);
/* Waits until the save of ticket T is written (and synced): returns 0 or
 * the negative errno of its write. */
int state_writer_wait(struct state_writer_ticket *t);
/* state_writer_save_durable(), then state_writer_wait(). */
int state_writer_save_now(const char *dir, const char *path, const char *name, char *text);
/* What became of the newest save of PATH: 0 when it is written or there
 * is none, 1 while one is queued or being written, or the negative errno
 * of the newest write, which failed. */
int state_writer_status(const char *path);
/* Waits until no save of PATH is queued or being written (before PATH is
 * read back). */
void state_writer_sync(const char *path);
/* Waits until every save queued is written (a clean stop). */
void state_writer_flush(void);
/* How many times a save woke the writer, and how many times it synced a
 * directory; holding the writer keeps it from starting a turn (for the
 * tests). */
uint64_t state_writer_wakeups(void);
uint64_t state_writer_dir_syncs(void);
void state_writer_hold(bool hold);

#endif
