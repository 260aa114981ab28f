/* err.c — the per-thread error message behind xpu_fail / xpu_error. */
#include "xpu.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[1024];

int xpu_fail(const char *fmt, ...)
{
	/* format aside first: callers wrap the previous message, xpu_fail("x: %s", xpu_error()) */
	char msg[sizeof last_error];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	memcpy(last_error, msg, sizeof msg);
	return -1;
}

const char *xpu_error(void)
{
	return last_error[0] ? last_error : "unknown error";
}

void xpu_error_clear(void)
{
	last_error[0] = 0;
}
