/* Opening the files the daemon reads without blocking; see file.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/file.h"

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
	int fd, r;

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
	/* O_NONBLOCK stays: a read of an ordinary file never waits anyway,
	 * and a kernel interface that is a regular file but waits for data
	 * (/proc/kmsg) then says EAGAIN instead of hanging its reader. */
	if (ret_st)
		*ret_st = st;
	return fd;
fail:
	close(fd);
	return r;
}

/* Frees a buffer, wiping it first when it held a secret. */
static void drop(char *buf, size_t size, unsigned flags)
{
	if (buf && (flags & FILE_PRIVATE))
		explicit_bzero(buf, size);
	free(buf);
}

int file_read_all(const char *path, unsigned flags, size_t max, char **ret, size_t *ret_len, struct stat *ret_st)
{
	struct stat st;
	size_t cap, n = 0;
	char *buf;
	int fd, r = 0;

	fd = file_open_regular(path, flags, &st);
	if (ret_st && (fd >= 0 || fd == -EPERM))
		*ret_st = st;
	if (fd < 0)
		return fd;
	if ((uint64_t)st.st_size > max) {
		close(fd);
		return -EFBIG;
	}
	/* One byte more than the file says it holds, to see its end in one
	 * pass; a file that grows gets more room, up to one byte past max. */
	cap = (size_t)st.st_size + 1;
	buf = malloc(cap + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t k;

		if (n == cap) {
			size_t ncap = cap > max / 2 ? max + 1 : cap * 2;
			char *nb;

			if (cap > max) {
				r = -EFBIG;
				break;
			}
			/* Not realloc(): it may leave a secret's copy behind. */
			nb = malloc(ncap + 1);
			if (!nb) {
				r = -ENOMEM;
				break;
			}
			memcpy(nb, buf, n);
			drop(buf, cap + 1, flags);
			buf = nb;
			cap = ncap;
		}
		k = read(fd, buf + n, cap - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			r = errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN : -errno;
			break;
		}
		if (k == 0)
			break;
		n += (size_t)k;
	}
	close(fd);
	if (r < 0) {
		drop(buf, cap + 1, flags);
		return r;
	}
	buf[n] = '\0';
	*ret = buf;
	if (ret_len)
		*ret_len = n;
	return 0;
}

const char *file_strerror(int r)
{
	if (r == -EINVAL)
		return "not a regular file";
	if (r == -EAGAIN)
		return "not an ordinary file: reading it would wait for data";
	return strerror(-r);
}
