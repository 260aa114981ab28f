/* make_weights.c — synthetic weights streamed into a GGUF file: a job is a run of whole rows
 * of one tensor; workers generate and quantize jobs into a ring of slots while the calling
 * thread writes the slots out in file order. Uses model/gguf.h, quant/ and pthreads. */
#include "model/make_weights.h"
#include "core/xpu.h"
#include "quant/f16.h"
#include "quant/formats.h"
#include "quant/ggml_types.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#define JOB_ELEMS (1u << 20) /* elements a job aims at: a few MiB of scratch per worker */
#define MAX_THREADS 256

/* ---- the generator ------------------------------------------------------------------------ */

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

uint64_t xpu_mw_key(uint64_t seed, const char *name)
{
	uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 0x100000001b3u;
	return mix64(h ^ mix64(seed + 0x9e3779b97f4a7c15u));
}

/* The sum of four 16-bit uniforms (Irwin-Hall, n = 4), centred: integer arithmetic only, so
 * every machine and compiler gives the same value; mean 0, sd sqrt((65536^2 - 1) / 3). */
#define SUM4_SD 37837.22578

static int32_t centred_sum4(uint64_t key, uint64_t i)
{
	uint64_t h = mix64(key + (i + 1) * 0x9e3779b97f4a7c15u);
	int32_t s = (int32_t)(h & 0xffff) + (int32_t)(h >> 16 & 0xffff) +
		    (int32_t)(h >> 32 & 0xffff) + (int32_t)(h >> 48);
	return s - 131070;
}

static float value_at(uint64_t key, uint64_t i, float mean, float k)
{
	return mean + (float)centred_sum4(key, i) * k;
}

float xpu_mw_value(uint64_t key, uint64_t i, float mean, float std)
{
	return value_at(key, i, mean, (float)(std / SUM4_SD));
}

/* ---- jobs ---------------------------------------------------------------------------------- */

struct job {
	uint32_t tensor;
	uint64_t first;  /* element */
	uint64_t count;  /* elements, whole rows */
	size_t bytes;    /* what they take in the tensor's type */
};

struct slot {
	uint8_t *buf;
	uint64_t done;   /* job + 1 once that job's bytes are in buf */
};

struct run {
	const struct xpu_mw_tensor *t;
	uint64_t *keys;
	struct job *jobs;
	uint64_t njobs;
	struct slot *slots;
	uint64_t nslots;
	pthread_mutex_t mu;
	pthread_cond_t cv;   /* one condition, broadcast: a slot filled, written, or stop */
	uint64_t next;       /* the next job a worker takes */
	uint64_t written;    /* jobs written out */
	bool stop;
};

struct worker {
	struct run *r;
	float *x;
	pthread_t th;
};

static size_t type_bytes(int32_t type, uint64_t elems)
{
	const struct ggml_type_info *ti = ggml_type_info(type);
	return (size_t)(elems / ti->block_elems * ti->block_bytes);
}

/* Fills job j into out: values, then the tensor's type. */
static void fill(const struct run *r, uint64_t j, float *x, uint8_t *out)
{
	const struct job *jb = &r->jobs[j];
	const struct xpu_mw_tensor *t = &r->t[jb->tensor];
	const uint64_t key = r->keys[jb->tensor];
	const float k = (float)(t->std / SUM4_SD);
	for (uint64_t e = 0; e < jb->count; e++)
		x[e] = value_at(key, jb->first + e, t->mean, k);
	if (t->type == GGML_F32)
		memcpy(out, x, jb->count * sizeof *x);
	else if (t->type == GGML_F16)
		for (uint64_t e = 0; e < jb->count; e++) {
			uint16_t h = xpu_f32_to_f16(x[e]);
			memcpy(out + 2 * e, &h, 2);
		}
	else /* the type and row width were checked: this cannot fail */
		xpu_quantize(xpu_format_get(t->type), x, jb->count, out);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct run *r = w->r;
	pthread_mutex_lock(&r->mu);
	while (!r->stop && r->next < r->njobs) {
		uint64_t j = r->next;
		if (j >= r->written + r->nslots) { /* its slot still holds an unwritten job */
			pthread_cond_wait(&r->cv, &r->mu);
			continue;
		}
		r->next++;
		pthread_mutex_unlock(&r->mu);
		struct slot *s = &r->slots[j % r->nslots];
		fill(r, j, w->x, s->buf);
		pthread_mutex_lock(&r->mu);
		s->done = j + 1;
		pthread_cond_broadcast(&r->cv);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/* ---- planning ------------------------------------------------------------------------------ */

static int check_tensor(const struct xpu_mw_tensor *t)
{
	if (t->type != GGML_F32 && t->type != GGML_F16 && !xpu_format_get(t->type)) {
		const struct ggml_type_info *ti = ggml_type_info(t->type);
		return xpu_fail("make weights: tensor '%s': type %s is not f32, f16 or a served format",
				t->name, ti ? ti->name : "unknown");
	}
	if (!isfinite(t->mean) || !isfinite(t->std) || t->std < 0)
		return xpu_fail("make weights: tensor '%s': mean %g, std %g (finite, std >= 0)",
				t->name, (double)t->mean, (double)t->std);
	return 0;
}

static uint64_t elements(const struct xpu_mw_tensor *t)
{
	uint64_t n = 1;
	for (uint32_t d = 0; d < t->n_dims; d++)
		n *= t->dims[d];
	return n;
}

/* The jobs of every tensor in order, and the largest job's bytes and elements. */
static int plan(struct run *r, uint64_t n, size_t *max_bytes, uint64_t *max_elems)
{
	uint64_t count = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t rows = elements(&r->t[i]) / r->t[i].dims[0];
		uint64_t per = JOB_ELEMS / r->t[i].dims[0] ? JOB_ELEMS / r->t[i].dims[0] : 1;
		count += (rows + per - 1) / per;
	}
	r->jobs = xpu_calloc(count ? count : 1, sizeof *r->jobs);
	if (!r->jobs)
		return -1;
	*max_bytes = 0;
	*max_elems = 0;
	for (uint64_t i = 0; i < n; i++) {
		const uint64_t row = r->t[i].dims[0], total = elements(&r->t[i]);
		const uint64_t per = (JOB_ELEMS / row ? JOB_ELEMS / row : 1) * row;
		for (uint64_t e = 0; e < total; e += per) {
			struct job *jb = &r->jobs[r->njobs++];
			jb->tensor = (uint32_t)i;
			jb->first = e;
			jb->count = total - e < per ? total - e : per;
			jb->bytes = type_bytes(r->t[i].type, jb->count);
			if (jb->bytes > *max_bytes)
				*max_bytes = jb->bytes;
			if (jb->count > *max_elems)
				*max_elems = jb->count;
		}
	}
	return 0;
}

/* Declares the tensors and lays out the run: keys, jobs, slots (allocated up front, so no
 * worker can fail). */
static int prepare(struct run *r, struct gguf_writer *w, uint64_t n, uint64_t seed, int threads,
		   uint64_t *max_elems)
{
	if (n > UINT32_MAX)
		return xpu_fail("make weights: %" PRIu64 " tensors", n);
	for (uint64_t i = 0; i < n; i++)
		if (check_tensor(&r->t[i]) ||
		    gguf_writer_tensor_info(w, r->t[i].name, r->t[i].n_dims, r->t[i].dims, r->t[i].type))
			return -1;
	r->keys = xpu_calloc(n ? n : 1, sizeof *r->keys);
	size_t max_bytes;
	if (!r->keys || plan(r, n, &max_bytes, max_elems))
		return -1;
	for (uint64_t i = 0; i < n; i++)
		r->keys[i] = xpu_mw_key(seed, r->t[i].name);
	r->nslots = 2 * (uint64_t)threads;
	r->slots = xpu_calloc(r->nslots, sizeof *r->slots);
	if (!r->slots)
		return -1;
	for (uint64_t s = 0; s < r->nslots; s++)
		if (!(r->slots[s].buf = xpu_malloc(max_bytes ? max_bytes : 1)))
			return -1;
	return 0;
}

static void release(struct run *r)
{
	for (uint64_t s = 0; r->slots && s < r->nslots; s++)
		xpu_free(r->slots[s].buf);
	xpu_free(r->slots);
	xpu_free(r->jobs);
	xpu_free(r->keys);
}

/* ---- the run -------------------------------------------------------------------------------- */

/* The calling thread writes each job's slot once it is filled, in job order. */
static int write_jobs(struct run *r, struct gguf_stream *s)
{
	for (uint64_t j = 0; j < r->njobs; j++) {
		struct slot *sl = &r->slots[j % r->nslots];
		pthread_mutex_lock(&r->mu);
		while (sl->done != j + 1)
			pthread_cond_wait(&r->cv, &r->mu);
		pthread_mutex_unlock(&r->mu);
		int rc = gguf_stream_put(s, sl->buf, r->jobs[j].bytes);
		pthread_mutex_lock(&r->mu);
		r->written++;
		r->stop = rc != 0;
		pthread_cond_broadcast(&r->cv);
		pthread_mutex_unlock(&r->mu);
		if (rc)
			return -1;
	}
	return 0;
}

static int start_workers(struct run *r, struct worker *wk, int threads, uint64_t max_elems,
			 int *started)
{
	for (int i = 0; i < threads; i++) {
		wk[i].r = r;
		wk[i].x = xpu_malloc((max_elems ? max_elems : 1) * sizeof(float));
		if (!wk[i].x)
			return -1;
		if (pthread_create(&wk[i].th, NULL, worker_main, &wk[i])) {
			xpu_free(wk[i].x);
			return xpu_fail("make weights: cannot start worker %d", i);
		}
		(*started)++;
	}
	return 0;
}

static void stop_workers(struct run *r, struct worker *wk, int started)
{
	pthread_mutex_lock(&r->mu);
	r->stop = true;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	for (int i = 0; i < started; i++) {
		pthread_join(wk[i].th, NULL);
		xpu_free(wk[i].x);
	}
}

int xpu_make_weights(struct gguf_writer *w, const char *path, const struct xpu_mw_tensor *t,
		     uint64_t n, uint64_t seed, int threads)
{
	if (threads < 1 || threads > MAX_THREADS)
		return xpu_fail("make weights: threads %d is outside 1..%d", threads, MAX_THREADS);
	struct run r = { .t = t };
	struct worker wk[MAX_THREADS];
	uint64_t max_elems = 0;
	int started = 0, rc = prepare(&r, w, n, seed, threads, &max_elems);
	struct gguf_stream *s = rc ? NULL : gguf_writer_begin(w, path);
	if (!rc && !s)
		rc = -1;
	pthread_mutex_init(&r.mu, NULL);
	pthread_cond_init(&r.cv, NULL);
	if (!rc)
		rc = start_workers(&r, wk, threads, max_elems, &started);
	if (!rc)
		rc = write_jobs(&r, s);
	stop_workers(&r, wk, started);
	if (!rc) {
		rc = gguf_stream_finish(s);
		s = NULL;
	}
	gguf_stream_abort(s);
	pthread_cond_destroy(&r.cv);
	pthread_mutex_destroy(&r.mu);
	release(&r);
	return rc;
}
