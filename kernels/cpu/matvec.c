/* matvec.c — the portable mat-vec bodies (the definition of the arithmetic), the choice of
 * path at run time and the host entry. Uses quant/formats.h, quant/f16.h, core/xpu.h. */
#include "matvec.h"
#include "quant/formats.h"
#include "quant/f16.h"
#include "quant/ggml_types.h"
#include "core/xpu.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

static const int8_t iq4nl_kv[16] = { -127, -104, -83, -65, -49, -35, -22, -10,
				     1, 13, 25, 38, 53, 69, 89, 113 };

static inline uint16_t rd16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}

static inline int32_t rd_i32(const uint8_t *p)
{
	int32_t v;
	memcpy(&v, p, 4);
	return v;
}

static inline float rd_f32(const uint8_t *p)
{
	float v;
	memcpy(&v, p, 4);
	return v;
}

/* ---- 32-element formats: eight blocks share one q8_K block -------------------------------- */

/* sum over the block of w_i * a_i, with w from the format's 16 or 32 payload bytes */
typedef int32_t (*small_dot_fn)(const uint8_t *q, const int8_t *a, int32_t bsum);

static int32_t dot_q4_0(const uint8_t *q, const int8_t *a, int32_t bsum)
{
	int32_t s = 0;
	for (int j = 0; j < 16; j++)
		s += (q[j] & 15) * a[j] + (q[j] >> 4) * a[j + 16];
	return s - 8 * bsum;
}

static int32_t dot_q8_0(const uint8_t *q, const int8_t *a, int32_t bsum)
{
	int32_t s = 0;
	for (int j = 0; j < 32; j++)
		s += (int8_t)q[j] * a[j];
	return s;
}

static int32_t dot_iq4_nl(const uint8_t *q, const int8_t *a, int32_t bsum)
{
	int32_t s = 0;
	for (int j = 0; j < 16; j++)
		s += iq4nl_kv[q[j] & 15] * a[j] + iq4nl_kv[q[j] >> 4] * a[j + 16];
	return s;
}

/* q5_0's payload: qh (bit j: element j's fifth bit), then q4_0's nibbles; levels 0..31 - 16 */
static int32_t dot_q5_0(const uint8_t *q, const int8_t *a, int32_t bsum)
{
	const uint32_t qh = (uint32_t)rd_i32(q);
	const uint8_t *qs = q + 4;
	int32_t s = 0;
	for (int j = 0; j < 16; j++) {
		const int32_t lo = (qs[j] & 15) | ((qh >> j) & 1) << 4;
		const int32_t hi = (qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4;
		s += lo * a[j] + hi * a[j + 16];
	}
	return s - 16 * bsum;
}

static float row_small(const uint8_t *row, const uint8_t *x, uint32_t bpr, uint32_t pay,
		       small_dot_fn dot)
{
	float acc[32] = { 0 };
	const uint8_t *payload = row + (bpr * 2 + 3) / 4 * 4;
	for (uint32_t b = 0; b < bpr; b++) {
		const uint8_t *xb = x + (uint64_t)(b / 8) * XPU_Q8K_BYTES;
		const int32_t bsum = rd_i32(xb + XPU_Q8K_SUMS + 4 * (b % 8));
		const int32_t s = dot(payload + (uint64_t)b * pay, (const int8_t *)xb + 32 * (b % 8), bsum);
		const float d = xpu_f16_to_f32(rd16(row + 2 * b)), xs = rd_f32(xb + XPU_Q8K_SCALE);
		const float v = (d * xs) * (float)s;
		acc[b % 32] = acc[b % 32] + v;
	}
	return xpu_wave_reduce(acc);
}

static void rows_q4_0(float *y, const uint8_t *w, uint64_t rb, const uint8_t *x,
			uint32_t bpr, uint64_t n)
{
	for (uint64_t r = 0; r < n; r++)
		y[r] = row_small(w + r * rb, x, bpr, 16, dot_q4_0);
}

static void rows_q8_0(float *y, const uint8_t *w, uint64_t rb, const uint8_t *x,
			uint32_t bpr, uint64_t n)
{
	for (uint64_t r = 0; r < n; r++)
		y[r] = row_small(w + r * rb, x, bpr, 32, dot_q8_0);
}

static void rows_iq4_nl(float *y, const uint8_t *w, uint64_t rb, const uint8_t *x,
			uint32_t bpr, uint64_t n)
{
	for (uint64_t r = 0; r < n; r++)
		y[r] = row_small(w + r * rb, x, bpr, 16, dot_iq4_nl);
}

static void rows_q5_0(float *y, const uint8_t *w, uint64_t rb, const uint8_t *x,
		      uint32_t bpr, uint64_t n)
{
	for (uint64_t r = 0; r < n; r++)
		y[r] = row_small(w + r * rb, x, bpr, 20, dot_q5_0);
}

/* ---- 256-element formats: one q8_K block per weight block -------------------------------- */

/* ggml's get_scale_min_k4 */
static void scale_min_k4(int j, const uint8_t *q, int32_t *sc, int32_t *m)
{
	if (j < 4) {
		*sc = q[j] & 63;
		*m = q[j + 4] & 63;
	} else {
		*sc = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
		*m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
	}
}

/* q4_K (fifth_bit false) and q5_K: no prefix, the block as in the file: d, dmin, scales[12], [qh[32],]
 * qs[128]; bit j of qh[l] is the fifth bit of sub-block j's element l */
static float row_affine_K(const uint8_t *row, const uint8_t *x, uint32_t bpr, uint32_t block_bytes,
			  bool fifth_bit)
{
	float acc[32] = { 0 };
	for (uint32_t b = 0; b < bpr; b++) {
		const uint8_t *head = row + block_bytes * (uint64_t)b, *scales = head + 4;
		const uint8_t *qh = head + 16, *qs = head + (fifth_bit ? 48 : 16);
		const uint8_t *xb = x + (uint64_t)b * XPU_Q8K_BYTES;
		const int8_t *a = (const int8_t *)xb;
		int32_t isum = 0, msum = 0;
		for (int j = 0; j < 8; j++) {
			int32_t sc, m, s = 0;
			scale_min_k4(j, scales, &sc, &m);
			const uint8_t *q = qs + 32 * (j / 2);
			const int shift = 4 * (j & 1);
			for (int l = 0; l < 32; l++) {
				const int32_t h = fifth_bit ? ((qh[l] >> j) & 1) << 4 : 0;
				s += (((q[l] >> shift) & 15) | h) * a[32 * j + l];
			}
			isum += sc * s;
			msum += m * rd_i32(xb + XPU_Q8K_SUMS + 4 * j);
		}
		const float d = xpu_f16_to_f32(rd16(head));
		const float dmin = xpu_f16_to_f32(rd16(head + 2));
		const float xs = rd_f32(xb + XPU_Q8K_SCALE);
		const float v = (d * xs) * (float)isum - (dmin * xs) * (float)msum;
		acc[b % 32] = acc[b % 32] + v;
	}
	return xpu_wave_reduce(acc);
}

/* q6_K's 256 signed 6-bit values in element order (ARITHMETIC.md) */
static void unpack_q6_K(const uint8_t *p, int8_t *q)
{
	for (int h = 0; h < 2; h++, q += 128) {
		const uint8_t *ql = p + 64 * h, *qh = p + 128 + 32 * h;
		for (int l = 0; l < 32; l++) {
			q[l] = (int8_t)(((ql[l] & 15) | ((qh[l] >> 0) & 3) << 4) - 32);
			q[l + 32] = (int8_t)(((ql[l + 32] & 15) | ((qh[l] >> 2) & 3) << 4) - 32);
			q[l + 64] = (int8_t)(((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32);
			q[l + 96] = (int8_t)(((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32);
		}
	}
}

static float row_q6_K(const uint8_t *row, const uint8_t *x, uint32_t bpr)
{
	float acc[32] = { 0 };
	const uint8_t *payload = row + ((uint64_t)bpr * 2 + 3) / 4 * 4;
	for (uint32_t b = 0; b < bpr; b++) {
		const uint8_t *p = payload + (uint64_t)b * 208;
		const int8_t *sc = (const int8_t *)(p + 192);
		const uint8_t *xb = x + (uint64_t)b * XPU_Q8K_BYTES;
		const int8_t *a = (const int8_t *)xb;
		int8_t q[256];
		unpack_q6_K(p, q);
		int32_t isum = 0;
		for (int g = 0; g < 16; g++) {
			int32_t s = 0;
			for (int i = 16 * g; i < 16 * g + 16; i++)
				s += q[i] * a[i];
			isum += sc[g] * s;
		}
		const float d = xpu_f16_to_f32(rd16(row + 2 * b)), xs = rd_f32(xb + XPU_Q8K_SCALE);
		const float v = (d * xs) * (float)isum;
		acc[b % 32] = acc[b % 32] + v;
	}
	return xpu_wave_reduce(acc);
}

static void rows_q4_K(float *y, const uint8_t *w, uint64_t rb, const uint8_t *x,
			uint32_t bpr, uint64_t n)
{
	for (uint64_t r = 0; r < n; r++)
		y[r] = row_affine_K(w + r * rb, x, bpr, 144, false);
}

static void rows_q5_K(float *y, const uint8_t *w, uint64_t rb, const uint8_t *x,
		      uint32_t bpr, uint64_t n)
{
	for (uint64_t r = 0; r < n; r++)
		y[r] = row_affine_K(w + r * rb, x, bpr, 176, true);
}

static void rows_q6_K(float *y, const uint8_t *w, uint64_t rb, const uint8_t *x,
			uint32_t bpr, uint64_t n)
{
	for (uint64_t r = 0; r < n; r++)
		y[r] = row_q6_K(w + r * rb, x, bpr);
}

/* Every served format has its portable body, rows_<name>: format_list.h's rows. */
#define PORTABLE_ROWS(name, type, ...) { GGML_##type, rows_##name },
const struct xpu_mv_impl xpu_mv_portable[] = {
	XPU_FORMAT_LIST(PORTABLE_ROWS)
	{ 0, NULL },
};
#undef PORTABLE_ROWS

/* ---- the path ------------------------------------------------------------------------------ */

static const char *const path_names[XPU_MV_PATHS] = { "portable", "avx2", "vnni" };
static atomic_int chosen_path = -1;

#if defined(__x86_64__) || defined(__i386__)
/* F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports knows no "f16c". */
static bool cpu_has_f16c(void)
{
	unsigned eax, ebx, ecx, edx;
	return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
}
#endif

/* Bit p set: path p runs here. CPUID is asked once: under a hypervisor each CPUID traps to
 * it (microseconds), and the kernel bodies look their path up on every launch. */
static unsigned paths_here(void)
{
	unsigned bits = 1u << XPU_MV_PORTABLE;
#if defined(__x86_64__) || defined(__i386__)
	bool avx2 = __builtin_cpu_supports("avx2") && cpu_has_f16c();
	if (avx2)
		bits |= 1u << XPU_MV_AVX2;
	if (avx2 && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl"))
		bits |= 1u << XPU_MV_VNNI;
#endif
	return bits;
}

bool xpu_matvec_path_available(int path)
{
	static atomic_uint known; /* paths_here() | 1u << 31 once asked */
	unsigned k = atomic_load_explicit(&known, memory_order_relaxed);
	if (!k) {
		k = paths_here() | 1u << 31;
		atomic_store_explicit(&known, k, memory_order_relaxed);
	}
	return path >= 0 && path < XPU_MV_PATHS && (k >> path & 1u);
}

const char *xpu_matvec_path_name(int path)
{
	return path >= 0 && path < XPU_MV_PATHS ? path_names[path] : "unknown";
}

int xpu_matvec_path_find(const char *name)
{
	for (int p = 0; name && p < XPU_MV_PATHS; p++)
		if (strcmp(path_names[p], name) == 0)
			return p;
	return -1;
}

static int best_path(void)
{
	const char *env = getenv("XPULUA_CPU_SIMD");
	int asked = xpu_matvec_path_find(env);
	if (asked >= 0 && xpu_matvec_path_available(asked))
		return asked;
	for (int p = XPU_MV_PATHS - 1; p > 0; p--)
		if (xpu_matvec_path_available(p))
			return p;
	return XPU_MV_PORTABLE;
}

int xpu_matvec_path(void)
{
	int p = atomic_load_explicit(&chosen_path, memory_order_relaxed);
	if (p < 0) {
		p = best_path();
		atomic_store(&chosen_path, p);
	}
	return p;
}

int xpu_matvec_set_path(int path)
{
	if (path < 0 || path >= XPU_MV_PATHS)
		return xpu_fail("mat-vec path %d does not exist", path);
	if (!xpu_matvec_path_available(path))
		return xpu_fail("mat-vec path '%s' does not run on this CPU", path_names[path]);
	atomic_store(&chosen_path, path);
	return 0;
}

static const struct xpu_mv_impl *const path_lists[XPU_MV_PATHS] = {
	xpu_mv_portable, xpu_mv_avx2, xpu_mv_vnni,
};

xpu_mv_rows_fn xpu_matvec_fn(int32_t type, int path)
{
	if (path < 0 || path >= XPU_MV_PATHS || !xpu_matvec_path_available(path))
		return NULL;
	for (const struct xpu_mv_impl *i = path_lists[path]; i->rows; i++)
		if (i->type == type)
			return i->rows;
	return NULL;
}

int xpu_matvec_host(int32_t type, int path, float *y, const void *w, const void *x,
		    uint32_t rows, uint32_t cols)
{
	const struct xpu_format *f = xpu_format_get(type);
	if (!f)
		return xpu_fail("mat-vec: format %d has no mat-vec", (int)type);
	if (cols % XPU_Q8K_ELEMS)
		return xpu_fail("mat-vec: %u columns is not a multiple of 256", cols);
	xpu_mv_rows_fn fn = xpu_matvec_fn(type, path);
	if (!fn)
		return xpu_fail("mat-vec: no %s body for %s on this CPU", xpu_matvec_path_name(path), f->name);
	const uint32_t bpr = cols / f->block_elems;
	fn(y, w, xpu_row_resident_bytes(f, bpr), x, bpr, rows);
	return 0;
}
