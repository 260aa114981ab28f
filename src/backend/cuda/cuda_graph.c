/* cuda_graph.c — deferral on CUDA streams: launches are recorded, and at the next submit point
 * the sequence runs as one CUDA graph, captured the first time a sequence is seen and replayed
 * from a small per-stream cache after that. Uses cuda_api.h (the driver table, CU()). */
#include "cuda_api.h"

#include <string.h>

int xpu_cuda_record(struct xpu_cuda_stream *cs, const struct xpu_cuda_launch *l)
{
	if (cs->nrec == cs->caprec) {
		uint32_t cap = cs->caprec ? cs->caprec * 2 : 64;
		struct xpu_cuda_launch *r = xpu_realloc(cs->rec, sizeof *r * cap);
		if (!r)
			return xpu_fail("out of host memory recording a deferred launch");
		cs->rec = r;
		cs->caprec = cap;
	}
	memcpy(&cs->rec[cs->nrec++], l, sizeof *l);
	return 0;
}

/* FNV-1a over the records' 8-byte words (a record is whole words, no padding): the key of
 * the cache; a hit is then compared in full. */
static uint64_t seq_hash(const struct xpu_cuda_launch *seq, uint32_t n)
{
	_Static_assert(sizeof *seq % 8 == 0, "a launch record is whole 8-byte words");
	uint64_t h = 0xcbf29ce484222325ull;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t w[sizeof *seq / 8];
		memcpy(w, &seq[i], sizeof w);
		for (size_t j = 0; j < sizeof w / 8; j++)
			h = (h ^ w[j]) * 0x100000001b3ull;
	}
	return h;
}

static struct xpu_cuda_graph *find_graph(struct xpu_cuda_stream *cs, uint64_t h)
{
	for (int i = 0; i < XPU_CUDA_GRAPHS; i++) {
		struct xpu_cuda_graph *g = &cs->graphs[i];
		if (g->exec && g->hash == h && g->n == cs->nrec &&
		    memcmp(g->seq, cs->rec, sizeof *g->seq * g->n) == 0)
			return g;
	}
	return NULL;
}

static void drop_graph(struct xpu_cuda_graph *g)
{
	if (g->exec)
		CUQ(cuGraphExecDestroy, g->exec);
	xpu_free(g->seq);
	memset(g, 0, sizeof *g);
}

/* The slot a new graph takes: an empty one, else the least recently replayed. */
static struct xpu_cuda_graph *free_slot(struct xpu_cuda_stream *cs)
{
	struct xpu_cuda_graph *old = &cs->graphs[0];
	for (int i = 0; i < XPU_CUDA_GRAPHS; i++) {
		if (!cs->graphs[i].exec)
			return &cs->graphs[i];
		if (cs->graphs[i].used < old->used)
			old = &cs->graphs[i];
	}
	drop_graph(old);
	return old;
}

bool xpu_cuda_can_overlap(void)
{
	return xpu_cu.cuStreamGetCaptureInfo_v2 && xpu_cu.cuStreamUpdateCaptureDependencies;
}

/* The nodes captured so far, for the edges of the next one: a launch that waits depends on
 * every node since the last launch that waited (`level`: they depend on all before them); one
 * that does not, on what that launch depended on (`before`), so it runs beside the launches
 * of its level. */
struct capture_deps {
	CUgraphNode before[XPU_WAITS_TRACKED], level[XPU_WAITS_TRACKED];
	size_t nbefore, nlevel;
};

static int capture_one(struct xpu_cuda_stream *cs, struct capture_deps *d, const struct xpu_cuda_launch *l,
		       bool first)
{
	if (!xpu_cuda_can_overlap())
		return xpu_cuda_issue(cs->s, l);
	if (l->wait) {
		memcpy(d->before, d->level, sizeof *d->level * d->nlevel);
		d->nbefore = d->nlevel;
		d->nlevel = 0;
	}
	if (!first && CU(cuStreamUpdateCaptureDependencies, cs->s, d->before, d->nbefore,
			 CU_STREAM_SET_CAPTURE_DEPENDENCIES))
		return -1;
	const CUgraphNode *now = NULL;
	size_t n = 0;
	if (xpu_cuda_issue(cs->s, l) ||
	    CU(cuStreamGetCaptureInfo_v2, cs->s, &(int){ 0 }, &(unsigned long long){ 0 }, &(CUgraph){ NULL }, &now, &n))
		return -1;
	if (n != 1 || d->nlevel == XPU_WAITS_TRACKED) /* the node just captured; at most a level of them */
		return xpu_fail("stream capture: %zu nodes after a launch, %zu in its level", n, d->nlevel);
	d->level[d->nlevel++] = now[0];
	return 0;
}

/* Capture the recorded launches on the stream into an executable graph. The capture is
 * always ended, so a launch that fails inside it leaves the stream usable. */
static int capture(struct xpu_cuda_stream *cs, CUgraphExec *exec)
{
	if (CU(cuStreamBeginCapture_v2, cs->s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))
		return -1;
	int rc = 0;
	struct capture_deps *deps = xpu_calloc(1, sizeof *deps);
	if (!deps)
		rc = -1;
	for (uint32_t i = 0; i < cs->nrec && rc == 0; i++)
		rc = capture_one(cs, deps, &cs->rec[i], i == 0);
	xpu_free(deps);
	CUgraph graph = NULL;
	CUresult end = xpu_cu.cuStreamEndCapture(cs->s, &graph);
	if (rc == 0)
		rc = xpu_cuda_check(end, "cuStreamEndCapture", __FILE__, __LINE__);
	if (rc == 0)
		rc = CU(cuGraphInstantiateWithFlags, exec, graph, 0);
	if (graph)
		xpu_cu.cuGraphDestroy(graph);
	return rc;
}

static int new_graph(struct xpu_cuda_stream *cs, uint64_t h, struct xpu_cuda_graph **out)
{
	struct xpu_cuda_launch *seq = xpu_malloc(sizeof *seq * cs->nrec);
	if (!seq)
		return xpu_fail("out of host memory keeping a deferred sequence");
	CUgraphExec exec = NULL;
	if (capture(cs, &exec)) {
		xpu_free(seq);
		return -1;
	}
	memcpy(seq, cs->rec, sizeof *seq * cs->nrec);
	struct xpu_cuda_graph *g = free_slot(cs);
	g->hash = h;
	g->n = cs->nrec;
	g->seq = seq;
	g->exec = exec;
	*out = g;
	return 0;
}

int xpu_cuda_flush(struct xpu_cuda_stream *cs)
{
	if (cs->nrec == 0)
		return 0;
	uint64_t h = seq_hash(cs->rec, cs->nrec);
	struct xpu_cuda_graph *g = find_graph(cs, h);
	int rc = g ? 0 : new_graph(cs, h, &g);
	if (rc == 0) {
		g->used = ++cs->tick;
		rc = CU(cuGraphLaunch, g->exec, cs->s);
	}
	cs->nrec = 0; /* submitted or failed: a failed sequence is not retried at the next point */
	xpu_waits_reset(&cs->waits);
	return rc;
}

void xpu_cuda_graphs_free(struct xpu_cuda_stream *cs)
{
	for (int i = 0; i < XPU_CUDA_GRAPHS; i++)
		drop_graph(&cs->graphs[i]);
	xpu_free(cs->rec);
	cs->rec = NULL;
	cs->nrec = cs->caprec = 0;
}
