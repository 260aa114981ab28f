/* waits.c — which launches of a deferred sequence wait for the ones before them.
 *
 * A backend that replays a recorded sequence can let independent launches overlap: a launch
 * waits only where one of its buffers was written by a launch since the last wait, or where it
 * writes a buffer one of them read (read-after-write, write-after-write, write-after-read).
 * Buffers are whole allocations: a kernel may read outside its view (a strided view's reach,
 * the word past the end), so two views of one allocation count as the same buffer. The
 * decision depends only on the sequence, so a repeated sequence decides the same. */
#include "device.h"

static bool touched(const struct xpu_waits *w, const struct xpu_alloc *a, bool writes)
{
	for (uint32_t i = 0; i < w->n; i++)
		if (w->alloc[i] == a && (writes || w->wrote[i]))
			return true;
	return false;
}

static void touch(struct xpu_waits *w, const struct xpu_alloc *a, bool writes)
{
	for (uint32_t i = 0; i < w->n; i++)
		if (w->alloc[i] == a) {
			w->wrote[i] |= writes;
			return;
		}
	w->alloc[w->n] = a;
	w->wrote[w->n++] = writes;
}

bool xpu_waits_next(struct xpu_waits *w, const struct xpu_kernel *k, const struct xpu_karg *args)
{
	bool wait = w->n == 0 || w->n + (uint32_t)k->nargs > XPU_WAITS_TRACKED ||
		    w->since >= XPU_WAITS_TRACKED;
	for (int i = 0; i < k->nargs && !wait; i++)
		if (args[i].kind == XPU_ARG_BUF)
			wait = touched(w, args[i].b.buf->alloc, k->args[i].writes);
	if (wait)
		w->n = w->since = 0;
	for (int i = 0; i < k->nargs; i++)
		if (args[i].kind == XPU_ARG_BUF)
			touch(w, args[i].b.buf->alloc, k->args[i].writes);
	w->since++;
	return wait;
}
