/* device.c — opening devices by id ("cpu:0", "cuda:1"), capabilities, fingerprints.
 * Devices are opened on first use through their backend's vtable and live for the process. */
#include "device.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct xpu_device *devices[XPU_MAX_DEVICES];
static int ndevices;
static pthread_mutex_t devices_lock = PTHREAD_MUTEX_INITIALIZER;

const char *xpu_backend_state_word(enum xpu_backend_state s)
{
	switch (s) {
	case XPU_NOT_BUILT: return "not built";
	case XPU_NOT_LOADABLE: return "not loadable";
	case XPU_NOT_USABLE: return "not usable";
	case XPU_USABLE: return "usable";
	}
	return "?";
}

static int find_backend(const char *id, int *index)
{
	const char *colon = strchr(id, ':');
	size_t n = colon ? (size_t)(colon - id) : strlen(id);
	*index = 0;
	if (colon) {
		char *end;
		long v = strtol(colon + 1, &end, 10);
		if (end == colon + 1 || *end || v < 0 || v > 1000)
			return xpu_fail("device '%s': '%s' is not a device index", id, colon + 1);
		*index = (int)v;
	}
	for (int b = 0; b < xpu_backend_count(); b++) {
		const char *name = xpu_backend_at(b)->name;
		if (strlen(name) == n && strncmp(name, id, n) == 0)
			return b;
	}
	return xpu_fail("device '%s': no backend named '%.*s'", id, (int)n, id);
}

static struct xpu_device *open_device(int b, int index)
{
	const struct xpu_backend_ops *ops = xpu_backend_at(b);
	const struct xpu_probe *p = xpu_backend_probe(b);
	if (p->state != XPU_USABLE) {
		xpu_fail("%s:%d: %s backend is %s: %s", ops->name, index, ops->name,
			 xpu_backend_state_word(p->state), p->reason);
		return NULL;
	}
	if (index >= p->device_count) {
		xpu_fail("%s:%d: no such device (%d %s device%s)", ops->name, index, p->device_count,
			 ops->name, p->device_count == 1 ? "" : "s");
		return NULL;
	}
	struct xpu_device *d = xpu_calloc(1, sizeof *d);
	if (!d)
		return NULL;
	d->ops = ops;
	d->index = index;
	snprintf(d->id, sizeof d->id, "%s:%d", ops->name, index);
	if (ops->open(d, index)) {
		xpu_fail("%s: %s", d->id, xpu_error());
		xpu_free(d);
		return NULL;
	}
	d->default_stream = xpu_stream_new(d);
	if (!d->default_stream) {
		ops->close(d);
		xpu_free(d);
		return NULL;
	}
	return d;
}

struct xpu_device *xpu_device_get(const char *id)
{
	int index;
	int b = find_backend(id, &index);
	if (b < 0)
		return NULL;
	pthread_mutex_lock(&devices_lock);
	struct xpu_device *d = NULL;
	for (int i = 0; i < ndevices; i++)
		if (devices[i]->ops == xpu_backend_at(b) && devices[i]->index == index)
			d = devices[i];
	if (!d && ndevices < XPU_MAX_DEVICES) {
		d = open_device(b, index);
		if (d)
			devices[ndevices++] = d;
	} else if (!d) {
		xpu_fail("%s: more than %d devices open", id, XPU_MAX_DEVICES);
	}
	pthread_mutex_unlock(&devices_lock);
	return d;
}

struct xpu_device *xpu_device_default(void)
{
	return xpu_device_get("cpu:0");
}

/* Every usable device of every backend, opened; backends that fail to open are skipped
 * (xpu.devices() reports their state separately). */
int xpu_device_list(struct xpu_device **out, int max)
{
	int n = 0;
	for (int b = 0; b < xpu_backend_count(); b++) {
		const struct xpu_probe *p = xpu_backend_probe(b);
		if (p->state != XPU_USABLE)
			continue;
		for (int i = 0; i < p->device_count && n < max; i++) {
			char id[48];
			snprintf(id, sizeof id, "%s:%d", xpu_backend_at(b)->name, i);
			struct xpu_device *d = xpu_device_get(id);
			if (d)
				out[n++] = d;
		}
	}
	return n;
}

bool xpu_device_supports(const struct xpu_device *d, int32_t cap)
{
	if (cap < 0 || cap >= XPU_CAP_WORDS * 64)
		return false;
	return (d->caps[cap / 64] >> (cap % 64)) & 1;
}

int xpu_device_add_cap(struct xpu_device *d, const char *cap)
{
	int32_t id = xpu_name_id(XPU_NAME_CAP, cap);
	if (id < 0)
		return -1;
	if (id >= XPU_CAP_WORDS * 64)
		return xpu_fail("capability '%s': more than %d capabilities", cap, XPU_CAP_WORDS * 64);
	d->caps[id / 64] |= (uint64_t)1 << (id % 64);
	return 0;
}

bool xpu_kernel_available(const struct xpu_device *d, int kernel_id)
{
	return kernel_id >= 0 && kernel_id < XPU_MAX_KERNELS && d->entries[kernel_id] != NULL;
}

void xpu_device_fingerprint(const struct xpu_device *d, char *out, size_t n)
{
	snprintf(out, n, "%s|%s|%s|%s|%s", d->ops->name, d->geo.name, d->geo.uuid, d->geo.driver,
		 d->geo.arch);
}

int xpu_kernel_manifest(struct xpu_device *d, struct xpu_kernel *k, struct xpu_manifest *m)
{
	memset(m, 0, sizeof *m);
	m->registers = m->spill_bytes = m->lds_static_bytes = -1;
	m->max_threads = m->resident_groups_per_cu = -1;
	m->launch_block = (int32_t)k->def->block;
	if (!xpu_kernel_available(d, k->id))
		return xpu_fail("kernel '%s' is not built for %s", k->def->name, d->id);
	if (!d->ops->manifest) {
		snprintf(m->note, sizeof m->note, "%s reports no manifest", d->ops->name);
		return 0;
	}
	return d->ops->manifest(d, k, m);
}

uint64_t xpu_kernel_resident_groups(struct xpu_device *d, struct xpu_kernel *k)
{
	if (d->resident[k->id] == 0) {
		struct xpu_manifest m;
		int ok = xpu_kernel_manifest(d, k, &m) == 0 && m.resident_groups_per_cu > 0 && d->geo.simd_count > 0;
		d->resident[k->id] = ok ? (int64_t)m.resident_groups_per_cu * d->geo.simd_count : -1;
	}
	return d->resident[k->id] > 0 ? (uint64_t)d->resident[k->id] : 0;
}
