/* buffer.c — device buffers and their views. A view holds a reference on the allocation,
 * so memory goes back to the device only when the last view is released. */
#include "device.h"

#include <stdatomic.h>
#include <string.h>

struct xpu_buffer *xpu_buffer_new(struct xpu_device *d, uint64_t bytes)
{
	struct xpu_alloc *a = xpu_calloc(1, sizeof *a);
	struct xpu_buffer *b = a ? xpu_calloc(1, sizeof *b) : NULL;
	if (!b) {
		xpu_free(a);
		return NULL;
	}
	if (d->ops->alloc(d, bytes, &a->handle, &a->host)) {
		xpu_fail("%s: cannot allocate %llu bytes: %s", d->id, (unsigned long long)bytes, xpu_error());
		xpu_free(a);
		xpu_free(b);
		return NULL;
	}
	a->dev = d;
	a->bytes = bytes;
	a->refs = 1;
	atomic_fetch_add(&d->buffer_bytes, bytes);
	b->alloc = a;
	b->bytes = bytes;
	return b;
}

struct xpu_buffer *xpu_buffer_view(struct xpu_buffer *b, uint64_t offset, uint64_t bytes)
{
	if (offset > b->bytes || bytes > b->bytes - offset) {
		xpu_fail("view [%llu, +%llu) is outside the %llu-byte buffer", (unsigned long long)offset,
			 (unsigned long long)bytes, (unsigned long long)b->bytes);
		return NULL;
	}
	struct xpu_buffer *v = xpu_calloc(1, sizeof *v);
	if (!v)
		return NULL;
	v->alloc = b->alloc;
	v->offset = b->offset + offset;
	v->bytes = bytes;
	b->alloc->refs++;
	return v;
}

void xpu_buffer_release(struct xpu_buffer *b)
{
	if (!b)
		return;
	struct xpu_alloc *a = b->alloc;
	if (--a->refs == 0) {
		atomic_fetch_sub(&a->dev->buffer_bytes, a->bytes);
		a->dev->ops->release(a->dev, a->handle);
		xpu_free(a);
	}
	xpu_free(b);
}

static int check_range(const struct xpu_buffer *b, uint64_t off, uint64_t n, const char *what)
{
	if (off > b->bytes || n > b->bytes - off)
		return xpu_fail("%s of %llu bytes at offset %llu is outside the %llu-byte buffer", what,
				(unsigned long long)n, (unsigned long long)off, (unsigned long long)b->bytes);
	return 0;
}

int xpu_buffer_upload(struct xpu_buffer *b, uint64_t off, const void *src, uint64_t n)
{
	if (check_range(b, off, n, "upload"))
		return -1;
	struct xpu_device *d = b->alloc->dev;
	return d->ops->upload(d->default_stream, b, b->offset + off, src, n);
}

int xpu_buffer_download(struct xpu_buffer *b, uint64_t off, void *dst, uint64_t n)
{
	if (check_range(b, off, n, "download"))
		return -1;
	struct xpu_device *d = b->alloc->dev;
	return d->ops->download(d->default_stream, b, b->offset + off, dst, n);
}

int xpu_buffer_copy(struct xpu_stream *s, struct xpu_buffer *dst, struct xpu_buffer *src)
{
	struct xpu_device *d = s->dev;
	if (dst->alloc->dev != d || src->alloc->dev != d)
		return xpu_fail("copy: the stream is on %s, dst on %s, src on %s: a device copy stays on its stream's device",
				d->id, dst->alloc->dev->id, src->alloc->dev->id);
	if (dst->bytes < src->bytes)
		return xpu_fail("copy: dst holds %llu bytes, src %llu", (unsigned long long)dst->bytes,
				(unsigned long long)src->bytes);
	if (dst->alloc == src->alloc && dst->offset < src->offset + src->bytes && src->offset < dst->offset + src->bytes)
		return xpu_fail("copy: dst [%llu, +%llu) and src [%llu, +%llu) of one allocation overlap",
				(unsigned long long)dst->offset, (unsigned long long)src->bytes,
				(unsigned long long)src->offset, (unsigned long long)src->bytes);
	if (!d->ops->copy)
		return xpu_fail("copy: the %s backend has no device copy", d->ops->name);
	if (src->bytes == 0)
		return 0;
	return d->ops->copy(s, dst, dst->offset, src, src->offset, src->bytes);
}

void *xpu_buffer_host(const struct xpu_buffer *b)
{
	return b->alloc->host ? (char *)b->alloc->host + b->offset : NULL;
}
