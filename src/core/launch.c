/* launch.c — streams, and the launch path: every argument is checked against the kernel's
 * signature (count, kind, device, base alignment, extent) before anything reaches a driver. */
#include "device.h"

#include <inttypes.h>
#include <string.h>

struct xpu_stream *xpu_stream_new(struct xpu_device *d)
{
	struct xpu_stream *s = xpu_calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->dev = d;
	s->waits = -1;
	if (d->ops->stream_open(s)) {
		xpu_fail("%s: cannot open a stream: %s", d->id, xpu_error());
		xpu_free(s);
		return NULL;
	}
	return s;
}

void xpu_stream_release(struct xpu_stream *s)
{
	if (!s)
		return;
	s->dev->ops->stream_close(s);
	xpu_free(s);
}

int xpu_stream_sync(struct xpu_stream *s)
{
	return s->dev->ops->sync(s);
}

int xpu_stream_set_deferred(struct xpu_stream *s, bool on)
{
	if (s->dev->ops->set_deferred && s->dev->ops->set_deferred(s, on))
		return -1;
	s->deferred = on;
	return 0;
}

static int check_buffer(const struct xpu_device *d, const struct xpu_kernel *k, int i,
			const struct xpu_karg *a, uint64_t need)
{
	const struct xpu_arg_spec *spec = &k->args[i];
	const char *kn = k->def->name;
	if (!a->b.buf)
		return xpu_fail("kernel '%s' argument %d '%s': no buffer", kn, i + 1, spec->name);
	if (a->b.buf->alloc->dev != d)
		return xpu_fail("kernel '%s' argument %d '%s': buffer lives on %s, launch is on %s", kn,
				i + 1, spec->name, a->b.buf->alloc->dev->id, d->id);
	if (a->b.offset % spec->align)
		return xpu_fail("kernel '%s' argument %d '%s': base not aligned (offset %" PRIu64
				" is not a multiple of %u, the widest access)", kn, i + 1, spec->name,
				a->b.offset, spec->align);
	if (a->b.bytes < need)
		return xpu_fail("kernel '%s' argument %d '%s': buffer too short (%" PRIu64
				" bytes, needs %" PRIu64 ")", kn, i + 1, spec->name, a->b.bytes, need);
	return 0;
}

int xpu_check_args(const struct xpu_device *d, const struct xpu_kernel *k,
		   const struct xpu_karg *args, int nargs)
{
	const char *kn = k->def->name;
	if (nargs != k->nargs)
		return xpu_fail("kernel '%s' takes %d arguments, got %d", kn, k->nargs, nargs);
	for (int i = 0; i < nargs; i++)
		if (args[i].kind != k->args[i].kind)
			return xpu_fail("kernel '%s' argument %d '%s': expected %s, got %s", kn, i + 1,
					k->args[i].name, xpu_arg_kind_name(k->args[i].kind),
					xpu_arg_kind_name(args[i].kind));
	uint64_t need[XPU_MAX_ARGS] = { 0 };
	if (k->def->extent && k->def->extent(args, need))
		return xpu_fail("kernel '%s': %s", kn, xpu_error());
	for (int i = 0; i < nargs; i++)
		if (args[i].kind == XPU_ARG_BUF && check_buffer(d, k, i, &args[i], need[i]))
			return -1;
	return 0;
}

static int check_geometry(const struct xpu_kernel *k, const uint32_t grid[3], const uint32_t block[3])
{
	for (int i = 0; i < 3; i++)
		if (grid[i] == 0 || block[i] == 0)
			return xpu_fail("kernel '%s': grid {%u,%u,%u} block {%u,%u,%u} has a zero extent",
					k->def->name, grid[0], grid[1], grid[2], block[0], block[1], block[2]);
	if (k->def->block && block[0] * block[1] * block[2] != k->def->block)
		return xpu_fail("kernel '%s' is built for a block of %u threads, launched with %u",
				k->def->name, k->def->block, block[0] * block[1] * block[2]);
	uint32_t waves = k->def->waves_max;
	if (waves && (block[1] != 1 || block[2] != 1 || block[0] % 32 || block[0] / 32 > waves))
		return xpu_fail("kernel '%s' takes a 1-D block of whole 32-lane waves, 32 to %u threads, "
				"launched with {%u,%u,%u}", k->def->name, 32 * waves, block[0], block[1], block[2]);
	return 0;
}

int xpu_launch(struct xpu_stream *s, struct xpu_kernel *k, const uint32_t grid[3],
	       const uint32_t block[3], const struct xpu_karg *args, int nargs)
{
	struct xpu_device *d = s->dev;
	if (!xpu_kernel_available(d, k->id))
		return xpu_fail("kernel '%s' is not built for %s", k->def->name, d->id);
	if (check_geometry(k, grid, block) || xpu_check_args(d, k, args, nargs))
		return -1;
	struct xpu_karg local[XPU_MAX_ARGS];
	memcpy(local, args, sizeof *args * (size_t)nargs);
	for (int i = 0; i < nargs; i++)
		if (local[i].kind == XPU_ARG_BUF)
			local[i].b.host = local[i].b.buf->alloc->host
				? (char *)local[i].b.buf->alloc->host + local[i].b.offset : NULL;
	if (d->ops->launch(s, k, grid, block, local))
		return xpu_fail("kernel '%s' on %s: %s", k->def->name, d->id, xpu_error());
	s->launches++;
	__atomic_add_fetch(&k->launches, 1, __ATOMIC_RELAXED);
	return 0;
}
