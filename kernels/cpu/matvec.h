/* matvec.h — the CPU decode mat-vec bodies on the integer route: resident weight rows
 * against one token's q8_K activation, in docs/ARITHMETIC.md's canonical order. A portable
 * path and SIMD paths (AVX2, AVX-512 VNNI on 256-bit vectors) that give identical floats. */
#ifndef XPU_CPU_MATVEC_H
#define XPU_CPU_MATVEC_H

#include <stdbool.h>
#include <stdint.h>

enum xpu_mv_path { XPU_MV_PORTABLE, XPU_MV_AVX2, XPU_MV_VNNI, XPU_MV_PATHS };

/* n rows, the first at w, row_bytes apart, each of bpr blocks, against the q8_K blocks at x:
 * y[i] = row i . x. */
typedef void (*xpu_mv_rows_fn)(float *y, const uint8_t *w, uint64_t row_bytes,
			       const uint8_t *x, uint32_t bpr, uint64_t n);

struct xpu_mv_impl {
	int32_t type; /* GGUF type number; 0 ends a list */
	xpu_mv_rows_fn rows;
};

/* Each path's bodies (matvec.c, matvec_avx2.c), ended by { 0, NULL }. */
extern const struct xpu_mv_impl xpu_mv_portable[];
extern const struct xpu_mv_impl xpu_mv_avx2[];
extern const struct xpu_mv_impl xpu_mv_vnni[];

/* The path the kernels use: the best this CPU runs, unless XPULUA_CPU_SIMD (read once:
 * "portable", "avx2", "vnni") or xpu_matvec_set_path chose another. */
int xpu_matvec_path(void);
int xpu_matvec_set_path(int path); /* -1 with a message when this CPU cannot run it */
bool xpu_matvec_path_available(int path);
const char *xpu_matvec_path_name(int path);
int xpu_matvec_path_find(const char *name); /* -1 when unknown */

/* The body of `type` on `path` (NULL: none, or the CPU cannot run that path). */
xpu_mv_rows_fn xpu_matvec_fn(int32_t type, int path);
/* rows x cols resident matrix times one q8_K activation, on the host (tests, bindings). */
int xpu_matvec_host(int32_t type, int path, float *y, const void *w, const void *x,
		    uint32_t rows, uint32_t cols);

/* The canonical wave reduction of 32 lane accumulators (destroys acc). */
static inline float xpu_wave_reduce(float acc[32])
{
	for (int off = 16; off >= 1; off >>= 1)
		for (int l = 0; l < off; l++)
			acc[l] = acc[l] + acc[l + off]; /* acc[l] + acc[l ^ off], l < off */
	return acc[0];
}

#endif
