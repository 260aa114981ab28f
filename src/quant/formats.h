/* formats.h — the weight formats the integer route serves: GGUF block layouts, the q8_K
 * activation block, the resident row layout, and the host reference quantize / dequantize /
 * split / pack. Uses core/xpu.h (errors); never lua.h. docs/ARITHMETIC.md is the spec. */
#ifndef XPU_FORMATS_H
#define XPU_FORMATS_H

#include "format_list.h"

#include <stdint.h>
#include <stdbool.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the block layouts are little-endian and are read in place"
#endif

/* One block's reference quantize (block_elems floats in) and dequantize (quantize.c). */
typedef void (*xpu_block_quant_fn)(const float *x, uint8_t *block);
typedef void (*xpu_block_deq_fn)(const uint8_t *block, float *y);

/* The backends whose decode kernels the table records; hip builds the cuda sources. */
enum xpu_format_backend { XPU_FB_CPU, XPU_FB_CUDA, XPU_FB_VULKAN, XPU_FB_COUNT };

/* One served format: a row of format_list.h. The scale sits at one end of the block (offset 0
 * or the tail), so the rest, the payload, is one contiguous run. A format with no scale bytes
 * (q4_K) has no row prefix: its whole block is the payload. */
struct xpu_format {
	const char *name;        /* ggml's spelling */
	int32_t type;            /* the GGUF type number, also the format name id */
	uint32_t block_elems;
	uint32_t block_bytes;
	uint32_t scale_bytes;    /* per block, into the resident row's scale prefix */
	uint32_t scale_offset;   /* where the scale lies in the GGUF block */
	uint32_t payload_bytes;  /* block_bytes - scale_bytes */
	bool streams;            /* CUDA / HIP: the dense wave walks several rows */
	unsigned kernels[XPU_FB_COUNT]; /* XPU_FK_* bits per backend */
	xpu_block_quant_fn quantize;
	xpu_block_deq_fn dequantize;
};

/* Each row's reference block functions, defined in quantize.c. */
#define XPU_FORMAT_BLOCK_FNS(name, ...)                                                          \
	void xpu_quant_##name(const float *x, uint8_t *block);                                  \
	void xpu_deq_##name(const uint8_t *block, float *y);
XPU_FORMAT_LIST(XPU_FORMAT_BLOCK_FNS)
#undef XPU_FORMAT_BLOCK_FNS

/* "head", "tail" or "none": where the scale lies in the block. */
const char *xpu_format_scale_layout(const struct xpu_format *f);
/* "cpu", "cuda", "vulkan". */
const char *xpu_format_backend_name(enum xpu_format_backend b);

int xpu_format_count(void);
const struct xpu_format *xpu_format_at(int i);
/* By GGUF type, or by name; NULL (no message) when the format is not served. */
const struct xpu_format *xpu_format_get(int32_t type);
const struct xpu_format *xpu_format_find(const char *name);

/* Where the payload starts inside a GGUF block. */
static inline uint32_t xpu_format_payload_offset(const struct xpu_format *f)
{
	return f->scale_offset == 0 ? f->scale_bytes : 0;
}

/* The resident row of bpr blocks: scale prefix padded to a dword, then the payloads. */
uint64_t xpu_row_prefix_bytes(const struct xpu_format *f, uint64_t bpr);
uint64_t xpu_row_resident_bytes(const struct xpu_format *f, uint64_t bpr);
/* A layout is dword-clean when every payload and the prefix start on a dword. */
bool xpu_format_dword_clean(const struct xpu_format *f);

/* ---- the q8_K activation block ---------------------------------------------------------- */

#define XPU_Q8K_ELEMS 256
#define XPU_Q8K_BYTES 320
#define XPU_Q8K_SUMS 256   /* int32 sum[8] */
#define XPU_Q8K_SCALE 288  /* f32 d */

/* Packs 256 floats into one 320-byte block (ARITHMETIC.md, "q8_K activation block"). */
void xpu_q8k_pack_block(const float *x, uint8_t *out);
/* n floats (a multiple of 256) into n / 256 blocks. */
int xpu_q8k_pack(const float *x, uint64_t n, void *out);
/* The activation's values as floats, d * q, for references. */
int xpu_q8k_unpack(const void *blocks, uint64_t n, float *y);

/* ---- reference quantize / dequantize (quantize.c) --------------------------------------- */

/* n must be a multiple of block_elems; blocks holds n / block_elems blocks. */
int xpu_quantize(const struct xpu_format *f, const float *x, uint64_t n, void *blocks);
/* Bit for bit ggml's dequantize_row_* (no fused multiply-add). */
int xpu_dequantize(const struct xpu_format *f, const void *blocks, uint64_t n, float *y);

/* ---- the host reference split (resident.c) ---------------------------------------------- */

/* nblocks GGUF blocks (a whole number of rows of bpr) into nblocks / bpr resident rows. */
int xpu_resident_split(const struct xpu_format *f, const void *blocks, uint64_t nblocks,
		       uint64_t bpr, void *rows);
/* The inverse: resident rows back into GGUF blocks. */
int xpu_resident_join(const struct xpu_format *f, const void *rows, uint64_t nblocks,
		      uint64_t bpr, void *blocks);

#endif
