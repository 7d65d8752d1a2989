/* Opening the files the daemon reads (the configuration and its includes,
 * state files, secrets) so that no file can block it.
 *
 * A plain open(2) of a FIFO waits for a writer, and a read of a device may
 * never end: a configuration, state or secret path that names one would
 * hang the daemon, or `autoscaled -n`, for good. These files are written
 * by operators and by the daemon itself, and are always regular files. */
#ifndef AUTOSCALED_FILE_H
#define AUTOSCALED_FILE_H

#include <sys/stat.h>

/* Refuse a file that its group or others may access (secrets), but for
 * one of root's that only the daemon's own group may read when the daemon
 * is not root. */
#define FILE_PRIVATE 1u

/* What FILE_PRIVATE accepts, for the error messages. */
#define FILE_PRIVATE_RULE                                                                                      \
	"run chmod 600 on it and chown it to the daemon's user (autoscaled), or, for a daemon that is not root, " \
	"chmod 640 and chown root:autoscaled"

/* Opens PATH for reading: with O_NONBLOCK, so that neither the open nor a
 * read can wait (a read of an ordinary file never does; one of a kernel
 * interface that waits for data says EAGAIN), O_CLOEXEC and O_NOCTTY; then
 * checks that it is a regular file. With FILE_PRIVATE, a file whose mode gives
 * its group or others any access is refused with -EPERM, unless the daemon
 * is not root, root owns the file and the only other access is reading by
 * the daemon's effective group.
 *
 * Returns the descriptor (the caller closes it) or a negative errno:
 * -EISDIR for a directory, -EINVAL for any other file that is not a
 * regular one (file_strerror() says so), -EPERM as above. *ret_st, when
 * not NULL, is filled when the descriptor is returned and on -EPERM (so
 * that the caller can name the mode). */
int file_open_regular(const char *path, unsigned flags, struct stat *ret_st);

/* Reads the regular file PATH whole, opened as file_open_regular() does
 * (with its flags), into a malloc'ed buffer with a NUL after the content.
 * It reads without waiting: a kernel interface that is a regular file but
 * waits for data (/proc/kmsg) is -EAGAIN, never a reader that hangs.
 * At most `max` bytes: a larger file is -EFBIG, whatever its size said when
 * it was opened (it may grow while it is read). With FILE_PRIVATE the
 * buffer holds a secret: every copy that is given up is wiped first.
 *
 * Returns 0 with *ret (the caller frees it; wipes a secret first) and, when
 * not NULL, *ret_len; or -EFBIG, -ENOMEM or the errors of
 * file_open_regular(), with nothing allocated. *ret_st is filled as by
 * file_open_regular(). */
int file_read_all(const char *path, unsigned flags, size_t max, char **ret, size_t *ret_len, struct stat *ret_st);

/* The words for an error of file_open_regular() or file_read_all(): "not
 * a regular file" for -EINVAL, that reading would wait for -EAGAIN,
 * strerror() otherwise. */
const char *file_strerror(int r);

#endif
