/* l_threads.c — xpu.T.threads: several threads using one device at once through the core's C
 * API, each on a stream of its own (buffers made, uploaded, copied on the device, copied by a
 * copy_bytes launch, synced, read back, checked, released), so ThreadSanitizer (make
 * check-tsan) sees the backends' locks and the CPU pool contended; Lua itself runs one thread.
 * Uses core/device.h, pthreads and lauxlib. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "core/device.h"
#include "core/xpu.h"
#include "lua/lx.h"

#define MAX_THREADS 16

struct worker {
	struct xpu_device *dev;
	struct xpu_kernel *copy;
	int id, iters;
	uint64_t bytes;
	int rounds;     /* rounds that checked out */
	char err[320];  /* the first failure, "" when none */
};

static struct xpu_karg buf_arg(struct xpu_buffer *b)
{
	struct xpu_karg a = { .kind = XPU_ARG_BUF };
	a.b.buf = b;
	a.b.offset = b->offset;
	a.b.bytes = b->bytes;
	return a;
}

/* One round: a -> b by the device copy, b -> c by copy_bytes, c read back and compared. */
static int round_trip(struct worker *w, struct xpu_stream *s, uint8_t *want, uint8_t *got, int it)
{
	const uint64_t n = w->bytes;
	for (uint64_t i = 0; i < n; i++)
		want[i] = (uint8_t)(w->id * 31 + it * 7 + i * 13 + 1);
	memset(got, 0xa5, n);
	struct xpu_buffer *a = xpu_buffer_new(w->dev, n), *b = xpu_buffer_new(w->dev, n);
	struct xpu_buffer *c = xpu_buffer_new(w->dev, n);
	int rc = !a || !b || !c ? -1 : 0;
	if (!rc)
		rc = xpu_buffer_upload(a, 0, want, n) || xpu_buffer_copy(s, b, a) ? -1 : 0;
	if (!rc) {
		const uint32_t grid[3] = { (uint32_t)((n + 255) / 256), 1, 1 }, block[3] = { 256, 1, 1 };
		struct xpu_karg args[3] = { buf_arg(c), buf_arg(b), { .kind = XPU_ARG_U64 } };
		args[2].u = n;
		rc = xpu_launch(s, w->copy, grid, block, args, 3) || xpu_stream_sync(s) ||
		     xpu_buffer_download(c, 0, got, n) ? -1 : 0;
	}
	if (!rc && memcmp(want, got, n)) {
		uint64_t i = 0;
		while (want[i] == got[i])
			i++;
		rc = xpu_fail("byte %llu is %u, wrote %u", (unsigned long long)i, got[i], want[i]);
	}
	xpu_buffer_release(a);
	xpu_buffer_release(b);
	xpu_buffer_release(c);
	return rc;
}

static void *worker_main(void *p)
{
	struct worker *w = p;
	uint8_t *want = xpu_malloc(w->bytes), *got = xpu_malloc(w->bytes);
	struct xpu_stream *s = want && got ? xpu_stream_new(w->dev) : NULL;
	if (!s)
		snprintf(w->err, sizeof w->err, "thread %d: %s", w->id, want && got ? xpu_error() : "out of memory");
	for (int it = 0; s && it < w->iters; it++) {
		if (round_trip(w, s, want, got, it)) {
			snprintf(w->err, sizeof w->err, "thread %d, round %d: %s", w->id, it, xpu_error());
			break;
		}
		w->rounds++;
	}
	if (s)
		xpu_stream_release(s);
	xpu_free(want);
	xpu_free(got);
	return NULL;
}

/* xpu.T.threads(dev, threads, rounds [, bytes = 4096]) -> rounds checked | nil, message */
static int t_threads(lua_State *L)
{
	struct xpu_device *d = lx_checkdevice(L, 1);
	const lua_Integer nt = luaL_checkinteger(L, 2), iters = luaL_checkinteger(L, 3);
	const lua_Integer bytes = luaL_optinteger(L, 4, 4096);
	luaL_argcheck(L, nt >= 1 && nt <= MAX_THREADS, 2, "threads must be 1 to 16");
	luaL_argcheck(L, iters >= 1 && iters <= 100000, 3, "rounds must be 1 to 100000");
	luaL_argcheck(L, bytes >= 1 && bytes <= (1 << 24), 4, "bytes must be 1 to 16 MiB");
	struct xpu_kernel *k = xpu_kernel_find("copy_bytes");
	if (!k || !xpu_kernel_available(d, k->id))
		return luaL_error(L, "xpu.T.threads: copy_bytes is not built for %s", d->id);
	struct worker w[MAX_THREADS];
	pthread_t t[MAX_THREADS];
	int started = 0;
	for (int i = 0; i < nt; i++) {
		w[i] = (struct worker){ .dev = d, .copy = k, .id = i, .iters = (int)iters, .bytes = (uint64_t)bytes };
		if (pthread_create(&t[i], NULL, worker_main, &w[i]))
			break;
		started++;
	}
	int total = 0;
	const char *first = started < nt ? "a thread could not be started" : NULL;
	for (int i = 0; i < started; i++) {
		pthread_join(t[i], NULL);
		total += w[i].rounds;
		if (!first && w[i].err[0])
			first = w[i].err;
	}
	if (first) {
		luaL_pushfail(L);
		lua_pushfstring(L, "xpu.T.threads on %s: %s", d->id, first);
		return 2;
	}
	lua_pushinteger(L, total);
	return 1;
}

static const luaL_Reg thread_funcs[] = {
	{ "threads", t_threads },
	{ NULL, NULL },
};

/* Adds xpu.T.threads to the xpu.T table at index t. */
void xpu_lua_open_threads(lua_State *L, int t)
{
	lua_pushvalue(L, t);
	luaL_setfuncs(L, thread_funcs, 0);
	lua_pop(L, 1);
}
