/* fault_yaml.c — libyaml's allocator where the build links it through these: `make check-oom`
 * links a copy of libyaml.a whose malloc, realloc, strdup and free are renamed to these
 * (objcopy --redefine-sym), so fault injection reaches the YAML parser. Unused otherwise. */
#include "core/fault.h"

#include <stdlib.h>
#include <string.h>

void *xpu_yaml_malloc(size_t n)
{
	return xpu_fault(XPU_FAULT_YAML) ? NULL : malloc(n);
}

void *xpu_yaml_realloc(void *p, size_t n)
{
	return xpu_fault(XPU_FAULT_YAML) ? NULL : realloc(p, n);
}

char *xpu_yaml_strdup(const char *s)
{
	return xpu_fault(XPU_FAULT_YAML) ? NULL : strdup(s);
}

void xpu_yaml_free(void *p)
{
	free(p);
}
