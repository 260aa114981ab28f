/* err.c — the per-thread error message behind xpu_fail / xpu_error. */
#include "xpu.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[1024];

int xpu_fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof last_error, fmt, ap);
	va_end(ap);
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
