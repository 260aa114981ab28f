/* pad_band.h — pad_backward's border band, shared by the launcher (kernels/launch_shape.c),
 * the CPU body (kernels/cpu/shape_ops.c) and the CUDA body (kernels/cuda/shape_ops.cu) of
 * pad_backward_border. On one axis of d gradient coordinates padded lo before and hi after,
 * the band is the coordinates with more than one upstream term: under reflect (mode 1) 1 .. lo
 * and d - 1 - hi .. d - 2, under replicate (mode 2) 0 where lo > 0 and d - 1 where hi > 0,
 * none under constant (mode 0). Each side is shorter than the axis (the contract's rule), so
 * the band is two runs at most; they are kept apart and in order, merged where they meet.
 * Every other gradient element is the one upstream element at its place plus the pads. */
#ifndef XPU_PAD_BAND_H
#define XPU_PAD_BAND_H

#include <stdint.h>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define XPU_BAND_FN static __host__ __device__ __forceinline__
#else
#define XPU_BAND_FN static inline
#endif

/* Runs [s0, e0) and [s1, e1), s0 <= e0 <= s1 <= e1; either may be empty. */
struct xpu_pad_band {
	uint64_t s0, e0, s1, e1;
};

XPU_BAND_FN struct xpu_pad_band xpu_pad_band_of(uint64_t d, uint64_t lo, uint64_t hi, uint32_t mode)
{
	struct xpu_pad_band b = { 0, 0, 0, 0 };
	if (d == 0 || (mode != 1 && mode != 2))
		return b;
	if (mode == 1) {
		b.s0 = 1, b.e0 = lo ? lo + 1 : 1;
		b.s1 = hi ? d - 1 - hi : d, b.e1 = hi ? d - 1 : d;
	} else {
		b.s0 = 0, b.e0 = lo ? 1 : 0;
		b.s1 = hi ? d - 1 : d, b.e1 = d;
	}
	if (b.e0 == b.s0)
		b.s0 = b.e0 = 0;
	if (b.e1 == b.s1)
		b.s1 = b.e1 = d;
	if (b.s1 < b.s0) { /* the after side's run starts first */
		uint64_t s = b.s0, e = b.e0;
		b.s0 = b.s1, b.e0 = b.e1, b.s1 = s, b.e1 = e;
	}
	if (b.s1 <= b.e0) { /* they meet: one run */
		b.e0 = b.e1 > b.e0 ? b.e1 : b.e0;
		b.s1 = b.e1 = d;
	}
	return b;
}

XPU_BAND_FN uint64_t xpu_pad_band_count(struct xpu_pad_band b)
{
	return (b.e0 - b.s0) + (b.e1 - b.s1);
}

/* The band's k-th coordinate, k below its count. */
XPU_BAND_FN uint64_t xpu_pad_band_at(struct xpu_pad_band b, uint64_t k)
{
	return k < b.e0 - b.s0 ? b.s0 + k : b.s1 + (k - (b.e0 - b.s0));
}

/* pad_backward_border's items over gradient [planes, rows, cols] whose bands are rb (rows) and
 * cb (cols): every row's band columns, then the band rows' columns (the elements in both are
 * summed twice, each time to the same bits). Item u's gradient element. */
XPU_BAND_FN uint64_t xpu_pad_border_items(uint64_t planes, uint64_t rows, uint64_t cols, struct xpu_pad_band rb,
					   struct xpu_pad_band cb)
{
	return planes * (rows * xpu_pad_band_count(cb) + xpu_pad_band_count(rb) * cols);
}

XPU_BAND_FN uint64_t xpu_pad_border_element(uint64_t u, uint64_t planes, uint64_t rows, uint64_t cols,
					     struct xpu_pad_band rb, struct xpu_pad_band cb)
{
	const uint64_t nc = xpu_pad_band_count(cb), first = planes * rows * nc;
	if (u < first) {
		const uint64_t row = u / nc; /* over every plane's rows */
		return row * cols + xpu_pad_band_at(cb, u - row * nc);
	}
	u -= first;
	const uint64_t nr = xpu_pad_band_count(rb), line = u / cols, plane = line / nr;
	return (plane * rows + xpu_pad_band_at(rb, line - plane * nr)) * cols + (u - line * cols);
}

#endif
