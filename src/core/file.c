/* file.c — a whole file read into a counted allocation, for the module overrides and caches
 * that the backends read at start-up. */
#include "xpu.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int xpu_read_file(const char *path, size_t max, bool missing_ok, void **data, size_t *size)
{
	*data = NULL;
	*size = 0;
	FILE *f = fopen(path, "rb");
	if (!f) {
		int e = errno;
		xpu_fail("%s: %s", path, strerror(e));
		return missing_ok && e == ENOENT ? 1 : -1;
	}
	long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
	if (n < 0 || (unsigned long)n > max) {
		fclose(f);
		return n < 0 ? xpu_fail("%s: cannot tell its size", path)
			     : xpu_fail("%s: %ld bytes, more than the %zu read here", path, n, max);
	}
	void *buf = xpu_malloc(n ? (size_t)n : 1);
	bool read = buf && fseek(f, 0, SEEK_SET) == 0 && fread(buf, 1, (size_t)n, f) == (size_t)n;
	fclose(f);
	if (!read) {
		xpu_free(buf);
		return xpu_fail(buf ? "%s: could not read its %ld bytes" : "%s: out of host memory for its %ld bytes", path, n);
	}
	*data = buf;
	*size = (size_t)n;
	return 0;
}
