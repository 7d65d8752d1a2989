/* exec: runs a program and takes the last number it prints on stdout.
 * The command is an argv list (or a string split at blanks) run without a
 * shell, unless `shell = true` hands one string to /bin/sh -c. The child
 * gets /dev/null as stdin, a clean signal mask and its own process group;
 * on timeout the whole group gets SIGKILL. A non-zero exit is invalid, with
 * the status and the start of stderr. The exit is watched with a pidfd, so
 * the daemon's SIGCHLD handling is left alone; where pidfd_open(2) is
 * missing (kernels before 5.3, valgrind) a 20 ms timer polls waitpid(2). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sources/parse.h"
#include "sources/registry.h"

#define EXEC_MAX_ARGS 256
#define EXEC_STDERR_KEEP 512
#define EXEC_WAIT_POLL_USEC 20000

extern char **environ;

struct exec_src {
	char **argv;
	size_t argc;
	/* The run in flight. */
	pid_t pid;
	int pidfd, out_fd, err_fd;
	sd_event_source *exit_src, *out_src, *err_src, *timer;
	char *out;
	size_t out_len;
	bool out_too_big;
	char err[EXEC_STDERR_KEEP + 1];
	size_t err_len;
	bool timed_out;
};

static const char *const exec_keys[] = { "command", "shell", NULL };

static void free_argv(struct exec_src *p)
{
	for (size_t i = 0; i < p->argc; i++)
		free(p->argv[i]);
	free(p->argv);
	p->argv = NULL;
	p->argc = 0;
}

static int split_blanks(const char *cmd, struct exec_src *p)
{
	char *copy = strdup(cmd), *save = NULL;

	if (!copy)
		return -ENOMEM;
	p->argv = calloc(EXEC_MAX_ARGS + 1, sizeof(char *));
	if (!p->argv) {
		free(copy);
		return -ENOMEM;
	}
	for (char *t = strtok_r(copy, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
		if (p->argc == EXEC_MAX_ARGS) {
			free(copy);
			return -E2BIG;
		}
		p->argv[p->argc] = strdup(t);
		if (!p->argv[p->argc]) {
			free(copy);
			return -ENOMEM;
		}
		p->argc++;
	}
	free(copy);
	return 0;
}

static int exec_init(struct source *s, const struct signal_conf *sc, char *err, size_t errlen)
{
	struct exec_src *p = source_priv(s);
	const struct config_option *o = source_option(sc, "command");
	bool shell;
	int r;

	p->pidfd = p->out_fd = p->err_fd = -1;
	if ((r = source_opt_bool(sc, "shell", false, &shell, err, errlen)) < 0)
		return r;
	if (!o)
		return source_opt_error(sc, NULL, err, errlen, "option 'command' is required");
	if (shell) {
		if (o->type != OPTION_STRING)
			return source_opt_error(sc, o, err, errlen, "with shell = true, command must be one string");
		p->argv = calloc(4, sizeof(char *));
		if (!p->argv)
			return -ENOMEM;
		p->argc = 3;
		p->argv[0] = strdup("/bin/sh");
		p->argv[1] = strdup("-c");
		p->argv[2] = strdup(o->str);
		if (!p->argv[0] || !p->argv[1] || !p->argv[2])
			return -ENOMEM;
	} else if (o->type == OPTION_STRING) {
		r = split_blanks(o->str, p);
		if (r == -E2BIG)
			return source_opt_error(sc, o, err, errlen, "more than %d arguments", EXEC_MAX_ARGS);
		if (r < 0)
			return r;
	} else {
		if ((r = source_opt_list(sc, "command", &p->argv, &p->argc, err, errlen)) < 0)
			return r;
		if (p->argc > EXEC_MAX_ARGS)
			return source_opt_error(sc, o, err, errlen, "more than %d arguments", EXEC_MAX_ARGS);
	}
	if (p->argc == 0 || !p->argv[0][0])
		return source_opt_error(sc, o, err, errlen, "command is empty");
	return 0;
}

/* A reaper's event source is floating: the loop holds its only reference.
 * Turning it back into a normal source hands that reference to the caller,
 * who has none, so this frees the source (after the dispatch that called
 * us returns) and closes the pidfd it owns. Nothing may touch ES after it:
 * a second release would reach a source already cut from its loop. */
static void reaper_release(sd_event_source *es)
{
	sd_event_source_set_enabled(es, SD_EVENT_OFF);
	sd_event_source_set_floating(es, false);
}

/* Waits for an abandoned child in the background, so that cancelling a
 * run never leaves a zombie: on its pidfd, or by polling. */
static int on_orphan_exit(sd_event_source *es, int fd, uint32_t revents, void *userdata)
{
	pid_t pid = (pid_t)(intptr_t)userdata;

	waitpid(pid, NULL, WNOHANG);
	reaper_release(es);
	return 0;
}

static int on_orphan_tick(sd_event_source *es, uint64_t usec, void *userdata)
{
	pid_t pid = (pid_t)(intptr_t)userdata;

	if (waitpid(pid, NULL, WNOHANG) == 0) {
		sd_event_source_set_time(es, usec + EXEC_WAIT_POLL_USEC);
		sd_event_source_set_enabled(es, SD_EVENT_ONESHOT);
		return 0;
	}
	reaper_release(es);
	return 0;
}

static void reap_later(struct source *s, pid_t pid, int pidfd)
{
	sd_event_source *es = NULL;
	uint64_t now;
	int r;

	if (pidfd >= 0) {
		r = sd_event_add_io(source_event(s), &es, pidfd, EPOLLIN, on_orphan_exit, (void *)(intptr_t)pid);
		if (r >= 0)
			sd_event_source_set_io_fd_own(es, true);
	} else {
		r = sd_event_now(source_event(s), CLOCK_MONOTONIC, &now);
		if (r >= 0)
			r = sd_event_add_time(source_event(s), &es, CLOCK_MONOTONIC, now + EXEC_WAIT_POLL_USEC, 1000,
					      on_orphan_tick, (void *)(intptr_t)pid);
	}
	if (r < 0) {
		if (pidfd >= 0)
			close(pidfd);
		return;
	}
	sd_event_source_set_floating(es, true);
	sd_event_source_unref(es);
}

static void run_close(struct source *s, bool abandon)
{
	struct exec_src *p = source_priv(s);

	p->exit_src = sd_event_source_disable_unref(p->exit_src);
	p->out_src = sd_event_source_disable_unref(p->out_src);
	p->err_src = sd_event_source_disable_unref(p->err_src);
	p->timer = sd_event_source_disable_unref(p->timer);
	if (p->out_fd >= 0)
		close(p->out_fd);
	if (p->err_fd >= 0)
		close(p->err_fd);
	p->out_fd = p->err_fd = -1;
	if (abandon && p->pid > 0) {
		kill(-p->pid, SIGKILL);
		if (waitpid(p->pid, NULL, WNOHANG) == 0) {
			reap_later(s, p->pid, p->pidfd);
			p->pidfd = -1;
		}
	}
	if (p->pidfd >= 0)
		close(p->pidfd);
	p->pidfd = -1;
	p->pid = 0;
	free(p->out);
	p->out = NULL;
	p->out_len = 0;
	p->out_too_big = false;
	p->err_len = 0;
	p->timed_out = false;
}

/* Reads what FD holds now; returns false at EOF or on an error. */
static bool drain(struct exec_src *p, int fd)
{
	char tmp[8192];

	for (;;) {
		ssize_t n = read(fd, tmp, sizeof(tmp));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN;
		if (n == 0)
			return false;
		if (fd == p->err_fd) {
			size_t k = (size_t)n < EXEC_STDERR_KEEP - p->err_len ? (size_t)n : EXEC_STDERR_KEEP - p->err_len;

			memcpy(p->err + p->err_len, tmp, k);
			p->err_len += k;
			continue;
		}
		if (p->out_len + (size_t)n > SOURCE_MAX_REPLY) {
			p->out_too_big = true;
			continue;
		}
		char *o = realloc(p->out, p->out_len + (size_t)n + 1);

		if (!o)
			return false;
		p->out = o;
		memcpy(p->out + p->out_len, tmp, (size_t)n);
		p->out_len += (size_t)n;
	}
}

static int on_output(sd_event_source *es, int fd, uint32_t revents, void *userdata)
{
	struct exec_src *p = source_priv(userdata);

	if (!drain(p, fd))
		sd_event_source_set_enabled(es, SD_EVENT_OFF);
	return 0;
}

/* Makes a one-line excerpt of stderr for the reason. */
static const char *err_excerpt(struct exec_src *p)
{
	size_t n = p->err_len;

	while (n > 0 && (p->err[n - 1] == '\n' || p->err[n - 1] == ' '))
		n--;
	p->err[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (p->err[i] == '\n' || p->err[i] == '\r' || p->err[i] == '\t')
			p->err[i] = ' ';
		else if ((unsigned char)p->err[i] < 0x20)
			p->err[i] = '?';
	return p->err;
}

/* Ends the run once the child has exited; returns false while it runs. */
static bool check_exit(struct source *s)
{
	struct exec_src *p = source_priv(s);
	char what[64], msg[EXEC_STDERR_KEEP + 384];
	double v;
	int st = 0, r;

	if (waitpid(p->pid, &st, WNOHANG) == 0)
		return false;
	p->pid = 0;
	drain(p, p->out_fd);
	drain(p, p->err_fd);
	if (p->timed_out) {
		run_close(s, false);
		source_complete(s, -ETIMEDOUT, 0, "'%s' killed after %lld ms", p->argv[0],
				(long long)source_timeout_ms(s));
		return true;
	}
	if (WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) != 0)) {
		if (WIFSIGNALED(st))
			snprintf(what, sizeof(what), "killed by signal %d", WTERMSIG(st));
		else
			snprintf(what, sizeof(what), "exit status %d", WEXITSTATUS(st));
		snprintf(msg, sizeof(msg), "'%s' %s%s%s", p->argv[0], what, p->err_len ? ": " : "", err_excerpt(p));
		run_close(s, false);
		source_complete(s, -EIO, 0, "%s", msg);
		return true;
	}
	if (p->out_too_big) {
		run_close(s, false);
		source_complete(s, -EFBIG, 0, "'%s' printed more than 1 MiB", p->argv[0]);
		return true;
	}
	r = parse_last_number(p->out ? p->out : "", p->out_len, &v);
	run_close(s, false);
	if (r < 0)
		source_complete(s, -ENODATA, 0, "'%s' printed no number", p->argv[0]);
	else
		source_complete(s, 0, v, NULL);
	return true;
}

static int on_exit_event(sd_event_source *es, int fd, uint32_t revents, void *userdata)
{
	check_exit(userdata);
	return 0;
}

static int on_exit_tick(sd_event_source *es, uint64_t usec, void *userdata)
{
	if (!check_exit(userdata)) {
		sd_event_source_set_time(es, usec + EXEC_WAIT_POLL_USEC);
		sd_event_source_set_enabled(es, SD_EVENT_ONESHOT);
	}
	return 0;
}

static int on_timeout(sd_event_source *es, uint64_t usec, void *userdata)
{
	struct exec_src *p = source_priv(userdata);

	/* The exit event completes the poll once the group is gone. */
	p->timed_out = true;
	if (p->pid > 0)
		kill(-p->pid, SIGKILL);
	return 0;
}

static int spawn(struct exec_src *p, int out_w, int err_w, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, dflt;
	int r;

	sigemptyset(&none);
	sigemptyset(&dflt);
	sigaddset(&dflt, SIGPIPE);
	sigaddset(&dflt, SIGTERM);
	sigaddset(&dflt, SIGINT);
	sigaddset(&dflt, SIGHUP);
	sigaddset(&dflt, SIGCHLD);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out_w, 1);
	posix_spawn_file_actions_adddup2(&fa, err_w, 2);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &dflt);
	r = posix_spawnp(pid, p->argv[0], &fa, &attr, p->argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	return -r;
}

static int exec_poll(struct source *s)
{
	struct exec_src *p = source_priv(s);
	int out[2] = { -1, -1 }, errp[2] = { -1, -1 }, r;
	uint64_t now;

	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		r = -errno;
		goto fail;
	}
	r = spawn(p, out[1], errp[1], &p->pid);
	close(out[1]);
	close(errp[1]);
	out[1] = errp[1] = -1;
	p->out_fd = out[0];
	p->err_fd = errp[0];
	out[0] = errp[0] = -1;
	if (r < 0) {
		p->pid = 0;
		run_close(s, false);
		source_complete_later(s, r, 0, "cannot run '%s': %s", p->argv[0], strerror(-r));
		return 0;
	}
	fcntl(p->out_fd, F_SETFL, O_NONBLOCK);
	fcntl(p->err_fd, F_SETFL, O_NONBLOCK);
	p->pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
	r = sd_event_now(source_event(s), CLOCK_MONOTONIC, &now);
	if (r >= 0 && p->pidfd >= 0)
		r = sd_event_add_io(source_event(s), &p->exit_src, p->pidfd, EPOLLIN, on_exit_event, s);
	else if (r >= 0)
		r = sd_event_add_time(source_event(s), &p->exit_src, CLOCK_MONOTONIC, now + EXEC_WAIT_POLL_USEC, 1000,
				      on_exit_tick, s);
	if (r < 0 ||
	    (r = sd_event_add_io(source_event(s), &p->out_src, p->out_fd, EPOLLIN, on_output, s)) < 0 ||
	    (r = sd_event_add_io(source_event(s), &p->err_src, p->err_fd, EPOLLIN, on_output, s)) < 0 ||
	    (r = sd_event_add_time(source_event(s), &p->timer, CLOCK_MONOTONIC,
				   now + (uint64_t)source_timeout_ms(s) * 1000, 1000, on_timeout, s)) < 0) {
		run_close(s, true);
		return r;
	}
	/* Reading the output before the exit event keeps pipes from filling. */
	sd_event_source_set_priority(p->exit_src, SD_EVENT_PRIORITY_NORMAL + 1);
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
	return r;
}

static void exec_cancel(struct source *s)
{
	run_close(s, true);
}

static void exec_free(struct source *s)
{
	struct exec_src *p = source_priv(s);

	run_close(s, true);
	free_argv(p);
}

const struct source_ops source_exec = {
	.name = "exec",
	.options = exec_keys,
	.init = exec_init,
	.poll = exec_poll,
	.cancel = exec_cancel,
	.done = exec_free,
	.priv_size = sizeof(struct exec_src),
};
