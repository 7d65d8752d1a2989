/* Opening the files the daemon reads without blocking; see file.h. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "file.h"

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
	if ((flags & FILE_PRIVATE) && (st.st_mode & (S_IRWXG | S_IRWXO))) {
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
