/* registry.c — the list of backends, probed once each. The only file that knows which
 * backends this binary was built with; XPULUA_DISABLE_<NAME>=1 turns one off at run time. */
#include "core/device.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const struct xpu_backend_ops xpu_cpu_backend;
extern const struct xpu_backend_ops xpu_cuda_backend;
extern const struct xpu_backend_ops xpu_hip_backend;
extern const struct xpu_backend_ops xpu_vulkan_backend;

static const struct xpu_backend_ops *const built[] = {
	&xpu_cpu_backend,
	&xpu_cuda_backend,
	&xpu_hip_backend,
	&xpu_vulkan_backend,
};

#define NBUILT ((int)(sizeof built / sizeof *built))

static struct xpu_probe probes[NBUILT];
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

int xpu_backend_count(void)
{
	return NBUILT;
}

const struct xpu_backend_ops *xpu_backend_at(int i)
{
	return built[i];
}

static bool disabled(const char *name)
{
	char var[64] = "XPULUA_DISABLE_";
	size_t n = strlen(var);
	for (size_t i = 0; name[i] && n < sizeof var - 1; i++)
		var[n++] = (char)toupper((unsigned char)name[i]);
	var[n] = 0;
	const char *v = getenv(var);
	return v && *v && strcmp(v, "0") != 0;
}

static void probe_all(void)
{
	xpu_kernels_init();
	for (int i = 0; i < xpu_backend_count(); i++) {
		const struct xpu_backend_ops *ops = xpu_backend_at(i);
		struct xpu_probe *p = &probes[i];
		if (!ops->probe) { /* a vtable with no probe: its backend was compiled out */
			p->state = XPU_NOT_BUILT;
			snprintf(p->reason, sizeof p->reason, "this xpulua was built without the %s backend",
				 ops->name);
		} else if (strcmp(ops->name, "cpu") != 0 && disabled(ops->name)) {
			p->state = XPU_NOT_LOADABLE;
			snprintf(p->reason, sizeof p->reason, "disabled by XPULUA_DISABLE_* in the environment");
		} else {
			ops->probe(p);
		}
	}
}

const struct xpu_probe *xpu_backend_probe(int i)
{
	pthread_once(&probe_once, probe_all);
	return &probes[i];
}
