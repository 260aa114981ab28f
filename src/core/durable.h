/* durable.h — files that a crash or a second process cannot corrupt: directories made
 * without a shell, an exclusive lock beside a file, a replacement written to a temporary,
 * synced and renamed into place, and the sweep of temporaries a killed writer left. The
 * Autotune store (lua/xpu/autotune.lua) is written through these. Uses only POSIX. */
#ifndef XPU_DURABLE_H
#define XPU_DURABLE_H

#include <stddef.h>
#include <stdint.h>

/* mkdir -p: every missing directory of dir, mode 0755. 0, or -1 with the error naming the
 * component that could not be made and why. */
int xpu_mkdir_p(const char *dir);

/* Takes an exclusive lock (flock) on path, creating it empty if need be; waits at most
 * wait_ms for another holder. Returns the descriptor that holds it, or -1 with the error
 * naming the path (cannot create it, or held elsewhere for longer than wait_ms). */
int xpu_lock_take(const char *path, int wait_ms);
/* Releases a lock taken by xpu_lock_take (closing its descriptor); fd < 0 is ignored. */
void xpu_lock_release(int fd);

/* Replaces path with the n bytes of data: written to "<path>.<pid>.<seq>.tmp" beside it,
 * fsync'd, renamed onto path, then the directory fsync'd, so that after a crash path holds
 * either the old bytes or the new ones. On failure the temporary is removed, path is left as
 * it was, and the error names the file and the call that failed. */
int xpu_replace_file(const char *path, const void *data, size_t n);

/* Removes the temporaries of path ("<path>.<pid>.<seq>.tmp") whose writer process is gone.
 * Call it holding path's lock: a writer that holds it is the only one writing them. Returns
 * how many were removed, or -1 when the directory cannot be read. */
int xpu_sweep_temporaries(const char *path);

/* Test only: the write() after n more fails as a full disk would (n < 0: none fails). */
void xpu_durable_fail_write_after(int64_t n);

#endif
