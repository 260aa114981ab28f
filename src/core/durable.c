/* durable.c — directories, locks and crash-safe replacements of small files (durable.h).
 * Uses POSIX calls only: no shell is forked, so a path may start with '-' or hold quotes. */
#include "durable.h"
#include "xpu.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static atomic_int_fast64_t write_fail_after = -1;
static atomic_uint temp_seq;

void xpu_durable_fail_write_after(int64_t n)
{
	atomic_store(&write_fail_after, n);
}

static bool write_should_fail(void)
{
	int_fast64_t n = atomic_load(&write_fail_after);
	if (n < 0)
		return false;
	atomic_store(&write_fail_after, n ? n - 1 : -1);
	return n == 0;
}

/* ---- directories ----------------------------------------------------------------------- */

static int make_one(const char *dir)
{
	struct stat st;
	if (mkdir(dir, 0755) == 0)
		return 0;
	int e = errno;
	if (e == EEXIST && stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;
	if (e == EEXIST)
		return xpu_fail("cannot make directory %s: it exists and is not a directory", dir);
	return xpu_fail("cannot make directory %s: %s", dir, strerror(e));
}

int xpu_mkdir_p(const char *dir)
{
	char buf[PATH_MAX];
	size_t n = strlen(dir);
	if (n == 0)
		return xpu_fail("cannot make a directory of an empty path");
	if (n >= sizeof buf)
		return xpu_fail("cannot make directory %.80s...: the path is longer than %zu bytes", dir, sizeof buf - 1);
	memcpy(buf, dir, n + 1);
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = '\0';
	/* each prefix that ends before a '/', then the whole path */
	for (size_t i = 1; i < n; i++) {
		if (buf[i] != '/' || buf[i - 1] == '/')
			continue;
		buf[i] = '\0';
		int rc = make_one(buf);
		buf[i] = '/';
		if (rc)
			return rc;
	}
	return make_one(buf);
}

/* ---- the lock -------------------------------------------------------------------------- */

int xpu_lock_take(const char *path, int wait_ms)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return xpu_fail("cannot open the lock %s: %s", path, strerror(errno));
	/* polled rather than blocking, so that a holder stopped forever (^Z) is named, not waited on */
	for (int waited = 0;; waited += 2) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return fd;
		int e = errno;
		if (e != EWOULDBLOCK && e != EINTR) {
			close(fd);
			return xpu_fail("cannot lock %s: %s", path, strerror(e));
		}
		if (waited >= wait_ms) {
			close(fd);
			return xpu_fail("cannot lock %s: another process has held it for %d ms", path, wait_ms);
		}
		nanosleep(&(struct timespec){ .tv_nsec = 2000000 }, NULL);
	}
}

void xpu_lock_release(int fd)
{
	if (fd >= 0)
		close(fd); /* closing the only descriptor of the open file drops its flock */
}

/* ---- the replacement ------------------------------------------------------------------- */

/* The directory part of path ("." for a bare name), into buf. */
static void dir_of(const char *path, char *buf, size_t size)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		snprintf(buf, size, ".");
	else if (slash == path)
		snprintf(buf, size, "/");
	else
		snprintf(buf, size, "%.*s", (int)(slash - path), path);
}

static int write_all(int fd, const char *path, const char *data, size_t n)
{
	while (n > 0) {
		ssize_t w = write_should_fail() ? (errno = ENOSPC, -1) : write(fd, data, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return xpu_fail("cannot write %s: %s", path, strerror(errno));
		data += w;
		n -= (size_t)w;
	}
	return 0;
}

/* fsync of the directory makes the rename itself survive a crash; file systems that cannot
 * sync a directory say EINVAL, and there nothing more can be done. */
static int sync_dir(const char *path)
{
	char dir[PATH_MAX];
	dir_of(path, dir, sizeof dir);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return xpu_fail("cannot open directory %s to sync it: %s", dir, strerror(errno));
	int rc = fsync(fd) == 0 || errno == EINVAL ? 0 : xpu_fail("cannot sync directory %s: %s", dir, strerror(errno));
	close(fd);
	return rc;
}

int xpu_replace_file(const char *path, const void *data, size_t n)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof tmp, "%s.%ld.%u.tmp", path, (long)getpid(), atomic_fetch_add(&temp_seq, 1)) >= (int)sizeof tmp)
		return xpu_fail("cannot write %.80s...: the path is too long", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return xpu_fail("cannot write %s (creating its temporary): %s", path, strerror(errno));
	/* the messages name path, not the temporary: one cause reads the same on every try */
	int rc = write_all(fd, path, data, n);
	if (!rc && fsync(fd) != 0)
		rc = xpu_fail("cannot write %s (syncing its temporary): %s", path, strerror(errno));
	if (close(fd) != 0 && !rc)
		rc = xpu_fail("cannot write %s (closing its temporary): %s", path, strerror(errno));
	if (!rc && rename(tmp, path) != 0)
		rc = xpu_fail("cannot write %s (renaming its temporary onto it): %s", path, strerror(errno));
	if (rc) {
		unlink(tmp);
		return rc;
	}
	return sync_dir(path);
}

/* ---- temporaries a killed writer left -------------------------------------------------- */

/* The writer's pid when name is "<base>.<pid>.<seq>.tmp", else 0. */
static long temp_writer(const char *name, const char *base)
{
	size_t b = strlen(base), n = strlen(name);
	if (n < b + 8 || strncmp(name, base, b) != 0 || name[b] != '.' || strcmp(name + n - 4, ".tmp") != 0)
		return 0;
	char *end;
	long pid = strtol(name + b + 1, &end, 10);
	if (pid <= 0 || *end != '.')
		return 0;
	const char *seq = end + 1;
	while (*seq >= '0' && *seq <= '9')
		seq++;
	return seq > end + 1 && strcmp(seq, ".tmp") == 0 ? pid : 0;
}

static bool process_gone(long pid)
{
	return pid != (long)getpid() && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

int xpu_sweep_temporaries(const char *path)
{
	char dir[PATH_MAX], full[PATH_MAX];
	dir_of(path, dir, sizeof dir);
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	DIR *d = opendir(dir);
	if (!d)
		return xpu_fail("cannot read directory %s: %s", dir, strerror(errno));
	int removed = 0;
	for (struct dirent *e; (e = readdir(d));) {
		long pid = temp_writer(e->d_name, base);
		if (pid && process_gone(pid) &&
		    snprintf(full, sizeof full, "%s/%s", dir, e->d_name) < (int)sizeof full && unlink(full) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}
