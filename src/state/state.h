/* Persisted per-group state: what a restart must not forget.
 *
 * One JSON file per group, `<state_directory>/<group>.state`, holds the
 * engine's state (recommendation histories for the stabilization windows,
 * scale events for rate limits, the last action for cooldowns), the action
 * in flight, a pin, a pause and a per-group dry-run override. It is written
 * atomically (temporary file in the same directory, fsync, rename, fsync of
 * the directory), so a crash leaves either the old or the new file.
 *
 * Loading never fails the daemon: a missing file is a fresh start, and a
 * file that cannot be trusted (bad JSON, another format version, values out
 * of range, histories out of order, another group's file) is a warning and a
 * safe start, which holds scale-in until a full window of fresh data.
 *
 * Times: in memory, the engine's histories, its hold after a safe start and
 * the action in flight are monotonic (clock.h); the file holds them as
 * wall-clock times, mapped by their distance from now on save and back on
 * load (see state.c for the clamping of times the file puts in the future).
 * A pin's and a pause's expiry are wall-clock times in memory too: an
 * operator names them as times of day.
 *
 * The functions here are pure apart from state_save() and state_load(); the
 * group runtime calls them on the loop's thread. */
#ifndef AUTOSCALED_STATE_H
#define AUTOSCALED_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/clock.h"
#include "config/config.h"
#include "engine/engine.h"
#include "engine/forecast.h"

#define STATE_FORMAT_VERSION 1
/* A state file larger than this is not ours (the real ones are a few KiB). */
#define STATE_MAX_FILE_SIZE (1024 * 1024)
/* Counts beyond this are treated as corruption. */
#define STATE_MAX_COUNT 1000000
/* A restored action whose target the driver never shows is given up after
 * this long; the next evaluation then starts from what is observed. */
#define STATE_IN_FLIGHT_DEADLINE_MS (15 * 60 * MS_PER_SEC)
/* A steady group's state (only the newest recommendations' times moved
 * on) is written at most this often outside a cluster; see state_to_json(). */
#define STATE_REFRESH_MS (60 * MS_PER_SEC)
#define STATE_REQUEST_ID_MAX 128

/* An action handed to the driver and not yet seen complete. */
struct state_action {
	enum scale_direction direction; /* DIR_NONE: nothing in flight */
	int from, to;
	int64_t started_ms;   /* monotonic */
	int64_t deadline_ms;  /* monotonic */
	char request_id[STATE_REQUEST_ID_MAX]; /* the driver's, "" when none */
};

/* A count held by an operator: the engine still evaluates and logs, the pin
 * decides the final count (an engine input, struct observation). */
struct state_pin {
	bool active;
	int count;
	int64_t until_ms;  /* wall clock; > 0: expires then */
	bool forced;       /* allowed outside the profile's [min, max] */
};

/* A pause: evaluate and log, never act (an engine input too). */
struct state_pause {
	bool active;
	int64_t until_ms;  /* wall clock; 0: until resumed */
};

enum state_dry_run {
	STATE_DRY_RUN_CONFIG = 0, /* as the configuration says */
	STATE_DRY_RUN_ON,
	STATE_DRY_RUN_OFF,
};

struct group_state {
	struct engine_state engine;
	struct state_action in_flight;
	struct state_pin pin;
	struct state_pause pause;
	enum state_dry_run dry_run;
	struct forecast_boot boot; /* launch to ready, measured from the group's own actions */
};

/* A group's state at rest, in as few bytes as it holds: the histories at
 * their length, the request id at its own (struct group_state keeps room
 * for ENGINE_MAX_HISTORY entries in each history and the longest id, 1.4
 * KB, where a steady group uses some 200 bytes). The daemon keeps every
 * group's state this way and works on one at a time in full (group.c).
 * The fields here are read as they are; the tail is state_pack()'s. */
struct state_packed {
	size_t size;                  /* the allocation's bytes */
	uint32_t version;
	enum scale_direction last_action_dir;
	int64_t last_action_ms;
	int64_t no_scale_in_before_ms;
	struct state_pin pin;
	struct state_pause pause;
	enum state_dry_run dry_run;
	enum scale_direction in_flight_dir;
	int in_flight_from, in_flight_to;
	int64_t in_flight_started_ms, in_flight_deadline_ms;
	struct forecast_boot boot;
	uint8_t n_up_recs, n_down_recs, n_events, id_len;
	/* up_recs, down_recs, events (twelve bytes each), then the request id */
	unsigned char tail[];
};

/* Packs S into *P, growing or shrinking it (realloc) to what S holds; a
 * NULL *P is allocated. Returns 0, or -ENOMEM with *P as it was. */
int state_pack(const struct group_state *s, struct state_packed **p);
/* Fills S from P, every byte: the entries and the id's bytes past what P
 * holds are zero, so two equal states unpacked are equal as bytes. */
void state_unpack(const struct state_packed *p, struct group_state *s);
/* Zeroes the bytes of S that state_pack() does not keep: the histories'
 * room past their entries, the request id's past its end. */
void state_canonical(struct group_state *s);

enum state_origin {
	STATE_FRESH,    /* no file: a first start */
	STATE_RESTORED, /* the file was read and trusted */
	STATE_SAFE,     /* the file could not be trusted: safe start */
};

/* Initialises a fresh state: a clean engine state, no overrides. */
void state_init(struct group_state *s);

/* Puts `s` into the safe start of a group whose history was lost: a clean
 * engine state that allows no scale-in before mono_ms (monotonic now) + the
 * longest window a scale-in depends on (the scale-in stabilization window,
 * signal windows and scale-in rule windows). */
void state_safe_start(struct group_state *s, const struct group_conf *gc, int64_t mono_ms);

/* Holds scale-in in S until a full window of fresh data from MONO_MS
 * (monotonic now): the longest window a scale-in depends on, as
 * state_safe_start() does, keeping any later hold S already has. */
void state_hold_scale_in(struct group_state *s, const struct group_conf *gc, int64_t mono_ms);

/* A new owner's state in a cluster (cluster.h, the group's record): *OWN,
 * what this agent has from evaluating the group as a non-owner, becomes
 * the previous owner's record REC (its actions for rate limits and
 * cooldowns, its action in flight, its pin, pause, dry-run and boot time),
 * with OWN's recommendations made after REC's newest added to the windows.
 * When REC is not FINAL (its writer crashed or lost the group) and this
 * agent has only evaluated the group since COVERED_SINCE_MS, later than
 * two intervals after REC's newest recommendation, the gap between them
 * may have held recommendations nobody kept: scale-in is then held for the
 * longest window from MONO_MS, as after a lost state. Returns whether it
 * was. Times are monotonic. */
bool state_merge_record(struct group_state *own, const struct group_state *rec, bool final, int64_t covered_since_ms,
			const struct group_conf *gc, int64_t mono_ms);

/* Writes "<dir>/<group>.state" into buf. Returns 0, -EINVAL for a group
 * name that cannot be a file name, or -ENAMETOOLONG. */
int state_path(const char *dir, const char *group, char *buf, size_t len);

/* Saves the state of group `gc` atomically. Returns 0 or a negative errno;
 * does not log (the caller knows whether a failure is worth repeating). */
/* How state_write_file() writes. */
enum state_write {
	/* Atomically: the group's spare file ".NAME.spare" in DIR, written
	 * and swapped with PATH in one rename (RENAME_EXCHANGE), or where it
	 * cannot be, a temporary file named after NAME renamed over PATH; the
	 * file synced before the rename and the directory after it, so that
	 * a power loss too leaves the old text or the new one. */
	STATE_WRITE_DURABLE,
	/* As STATE_WRITE_DURABLE, but the directory is left to the caller:
	 * the rename is durable only once state_sync_dir() has synced DIR
	 * after it. Several files renamed in one directory then take one
	 * sync of it between them instead of one each. */
	STATE_WRITE_DURABLE_FILE,
	/* The same as STATE_WRITE_DURABLE, unsynced: a power loss may lose the save (the kernel
	 * writes it back within its writeback interval). */
	STATE_WRITE_RENAME,
	/* A file of at most STATE_IN_PLACE_MAX bytes whose new text fits too
	 * is overwritten in place, padded with spaces to its old length: a
	 * fraction of the CPU of a new file renamed over it, which the kernel
	 * must allocate and start writing back at once. A reader that reads
	 * it during the write may see a mix, and a power loss may leave it
	 * torn, which reads as a state that cannot be trusted (a safe start):
	 * only for a state that holds nothing but history. Anything else is
	 * written as STATE_WRITE_RENAME. */
	STATE_WRITE_IN_PLACE,
};

/* Writes TEXT to PATH in DIR, HOW says how, so that the daemon after a
 * crash of its own finds the old text or the new one, readable by the
 * daemon's group. 0 or a negative errno. */
#define STATE_IN_PLACE_MAX 4096
int state_write_file(const char *dir, const char *path, const char *name, const char *text, enum state_write how);
/* Syncs the directory DIR, so that the renames made in it are durable
 * (after STATE_WRITE_DURABLE_FILE). 0 or a negative errno. */
int state_sync_dir(const char *dir);
/* Reads at most STATE_MAX_FILE_SIZE bytes of a regular file PATH into a
 * malloc'd string. 0, -ENOENT, -EFBIG or another negative errno. */
int state_read_text(const char *path, char **ret);

int state_save(const char *dir, const char *group, const struct group_state *s, struct clock_now now);

/* Loads the state of `gc` into *ret, which is always initialised: returns
 * STATE_FRESH, STATE_RESTORED or STATE_SAFE (the warning, naming the file,
 * is logged here). `now` maps the file's times to monotonic ones and serves
 * the range checks and the safe start. */
enum state_origin state_load(const char *dir, const struct group_conf *gc, struct clock_now now,
			     struct group_state *ret);

/* Reads the state file at `path` for `gc` strictly, for `autoscaled
 * explain --state`: unlike state_load() a file that cannot be trusted is an
 * error (a reason in why), not a safe start. Returns 0 or a negative errno
 * (-EINVAL for a file that is not a state of `gc`). Does not log. */
int state_read_file(const char *path, const struct group_conf *gc, struct clock_now now, struct group_state *ret,
		    char *why, size_t why_len);

/* The JSON form (owned by the caller; NULL on ENOMEM) and its parser, for
 * the group `gc`; both map times at `now` (see above). The parser returns 0
 * or -EINVAL and writes a reason to why.
 *
 * REFRESH_MS > 0 says that the newest recommendations may have been
 * recommended again, unsaved, for up to that long after the save (the
 * daemon writes a steady group's state that often, not at every
 * evaluation): the parser then holds the scale-in window's newest
 * recommendation until that long after the save, or until now when that
 * is sooner, so that a crash takes no recommendation out of the window
 * early. The scale-out window's is left as saved (its entry expiring
 * early can only bring a scale-out sooner). 0 for an exact state. */
struct cJSON;
struct cJSON *state_to_json(const struct group_state *s, const char *group, struct clock_now now,
			    int64_t refresh_ms);
int state_from_json(const struct cJSON *j, const struct group_conf *gc, struct clock_now now,
		    struct group_state *ret, char *why, size_t why_len);

/* Drops a pin or a pause whose time (wall clock) has come. Returns true
 * when `s` changed (the caller saves it and logs). */
bool state_expire(struct group_state *s, int64_t wall_ms);

enum state_reconcile {
	RECONCILE_NONE,     /* nothing was in flight */
	RECONCILE_PENDING,  /* still in flight: no second action */
	RECONCILE_DONE,     /* the observation shows the target reached */
	RECONCILE_STOPPED,  /* the group is stable short of the target: the
			     * operation died with the process (libvirt) */
	RECONCILE_EXPIRED,  /* the deadline passed without the target */
};

/* Compares an action in flight that no call of this process is carrying
 * out (one restored after a restart) with what the driver observes
 * (`current`, `stable`). A backend still converging (not stable) is waited
 * for until the deadline: no second action. On DONE, STOPPED or EXPIRED the
 * action is cleared from `s`; the caller records what happened (the whole
 * step on DONE, the part observed on STOPPED) with engine_record_action so
 * that rate limits and cooldowns count it, and saves. */
enum state_reconcile state_reconcile(struct group_state *s, int current, bool stable, int64_t mono_ms);

/* Whether actions are dry runs for this group: the override if set, else
 * `configured`. */
bool state_dry_run(const struct group_state *s, bool configured);
bool state_packed_dry_run(const struct state_packed *p, bool configured);

/* Makes this process the only daemon using state directory `dir`: takes an
 * open-file-description write lock on "<dir>/autoscaled.lock" and writes
 * the process's pid into it. The lock lasts as long as the returned
 * descriptor stays open (the process keeps it until exit; it is
 * close-on-exec, so commands the daemon runs do not hold it). Returns the
 * descriptor, -EBUSY when another process holds the lock (its pid, read
 * from the file, in *ret_pid; 0 when it has not written it yet), or another
 * negative errno. Does not log. */
int state_lock(const char *dir, long *ret_pid);

#endif
