/* kernel.c — the kernel registry: names and argument signatures from the kernel table,
 * parsed once at start-up; the census counters live here. */
#include "device.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct xpu_kernel kernels[XPU_MAX_KERNELS];
static int nkernels;
static pthread_once_t kernels_once = PTHREAD_ONCE_INIT;
static int init_status;

static const char *const kind_names[] = {
	[XPU_ARG_BUF] = "buf", [XPU_ARG_U32] = "u32", [XPU_ARG_I32] = "i32",
	[XPU_ARG_U64] = "u64", [XPU_ARG_I64] = "i64", [XPU_ARG_F32] = "f32",
};

const char *xpu_arg_kind_name(enum xpu_arg_kind k)
{
	return kind_names[k];
}

/* "name:kind" with kind one of the names above; buffers may add "@N" (widest access,
 * a power of two) and "!" (the kernel writes through it). */
static int parse_one(const char *tok, size_t len, struct xpu_arg_spec *a)
{
	char buf[64];
	if (len >= sizeof buf)
		return xpu_fail("signature item '%.*s' is too long", (int)len, tok);
	memcpy(buf, tok, len);
	buf[len] = 0;
	char *colon = strchr(buf, ':');
	if (!colon || colon == buf || (size_t)(colon - buf) >= sizeof a->name)
		return xpu_fail("signature item '%s' is not name:kind", buf);
	*colon = 0;
	strcpy(a->name, buf);
	char *kind = colon + 1;
	a->writes = false;
	a->align = 1;
	size_t kl = strlen(kind);
	if (kl && kind[kl - 1] == '!') {
		a->writes = true;
		kind[--kl] = 0;
	}
	char *at = strchr(kind, '@');
	if (at) {
		*at = 0;
		a->align = (uint32_t)strtoul(at + 1, NULL, 10);
		if (a->align == 0 || (a->align & (a->align - 1)))
			return xpu_fail("signature item '%s': alignment '%s' is not a power of two", buf, at + 1);
	}
	for (int k = 0; k < (int)(sizeof kind_names / sizeof *kind_names); k++) {
		if (strcmp(kind, kind_names[k]) == 0) {
			a->kind = (enum xpu_arg_kind)k;
			if (a->kind != XPU_ARG_BUF && (at || a->writes))
				return xpu_fail("signature item '%s': only buffers take @ or !", buf);
			return 0;
		}
	}
	return xpu_fail("signature item '%s': unknown kind '%s'", buf, kind);
}

int xpu_parse_signature(const char *sig, struct xpu_arg_spec *out, int max)
{
	int n = 0;
	const char *p = sig;
	while (*p) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		const char *end = strchr(p, ' ');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (n == max)
			return xpu_fail("signature has more than %d arguments", max);
		if (parse_one(p, len, &out[n]))
			return -1;
		n++;
		p += len;
	}
	return n;
}

static struct xpu_kernel *find_kernel(const char *name)
{
	for (int i = 0; i < nkernels; i++)
		if (strcmp(kernels[i].def->name, name) == 0)
			return &kernels[i];
	return NULL;
}

static int add_kernel(const struct xpu_kernel_def *def)
{
	if (find_kernel(def->name))
		return xpu_fail("kernel '%s' is declared twice in the kernel table", def->name);
	if (nkernels == XPU_MAX_KERNELS)
		return xpu_fail("more than %d kernels", XPU_MAX_KERNELS);
	struct xpu_kernel *k = &kernels[nkernels];
	int n = xpu_parse_signature(def->signature, k->args, XPU_MAX_ARGS);
	if (n < 0)
		return xpu_fail("kernel '%s': %s", def->name, xpu_error());
	k->id = nkernels++;
	k->def = def;
	k->nargs = n;
	return 0;
}

static void init_once(void)
{
	for (int g = 0; xpu_kernel_groups[g]; g++)
		for (const struct xpu_kernel_def *d = xpu_kernel_groups[g]; d->name; d++)
			if (add_kernel(d)) {
				init_status = -1;
				fprintf(stderr, "xpulua: kernel table: %s\n", xpu_error());
				return;
			}
}

int xpu_kernels_init(void)
{
	pthread_once(&kernels_once, init_once);
	return init_status;
}

int xpu_kernel_count(void)
{
	xpu_kernels_init();
	return nkernels;
}

struct xpu_kernel *xpu_kernel_at(int id)
{
	xpu_kernels_init();
	return id >= 0 && id < nkernels ? &kernels[id] : NULL;
}


struct xpu_kernel *xpu_kernel_find(const char *name)
{
	xpu_kernels_init();
	return find_kernel(name);
}
