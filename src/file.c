/* Opening the files the daemon reads without blocking; see file.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "file.h"

/* A secret must be its owner's alone. A daemon that is not root (the
 * unit's User=autoscaled) may also read one that root owns and only the
 * daemon's own group may read (root:autoscaled 0640): configuration
 * management deploys secrets so that the service can read them but not
 * change them. Root needs no such exception, so a daemon running as root
 * still refuses 0640. */
static bool file_mode_private(const struct stat *st)
{
	if (!(st->st_mode & (S_IRWXG | S_IRWXO)))
		return true;
	return geteuid() != 0 && st->st_uid == 0 && st->st_gid == getegid() &&
	       !(st->st_mode & (S_IWGRP | S_IXGRP | S_IRWXO));
}

int file_open_regular(const char *path, unsigned flags, struct stat *ret_st)
{
	struct stat st;
	int fd, fl, r;

	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		/* A socket cannot be opened at all: it is not a regular file
		 * either. */
		return errno == ENXIO ? -EINVAL : -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		r = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		goto fail;
	}
	if ((flags & FILE_PRIVATE) && !file_mode_private(&st)) {
		if (ret_st)
			*ret_st = st;
		r = -EPERM;
		goto fail;
	}
	/* Reads of a regular file never block; callers expect plain ones. */
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		r = -errno;
		goto fail;
	}
	if (ret_st)
		*ret_st = st;
	return fd;
fail:
	close(fd);
	return r;
}

const char *file_strerror(int r)
{
	return r == -EINVAL ? "not a regular file" : strerror(-r);
}
