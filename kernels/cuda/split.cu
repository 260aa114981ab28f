/* split.cu — the bind split of GGUF blocks into resident rows (seed 001 §25.4.1), the four
 * forms of src/ops/quant/table.c: payload dwords, prefix dwords, scale bytes, and the byte
 * form for any layout. Work item t = group * block.x + thread.x, as on the CPU; the table
 * leaves the block free, so these take any block up to 1024. */
#include "xpu_cuda.cuh"

#define SPLIT_MAX_BLOCK 1024

static __device__ __forceinline__ uint64_t split_item(void)
{
	return xpu_group() * blockDim.x + threadIdx.x;
}

/* Four source bytes as a little-endian dword: the GGUF block is not aligned, the row is. */
static __device__ __forceinline__ uint32_t split_word(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* One item per payload dword: dword k of chunk block b to its row's payload j. */
extern "C" __global__ void __launch_bounds__(SPLIT_MAX_BLOCK)
split_payload_dword(uint32_t *out, const uint8_t *src, unsigned int total, unsigned int block_base,
		    unsigned int block_bytes, unsigned int payload_words, unsigned int src_payload_off,
		    unsigned int bpr, unsigned int prefix_words, unsigned int row_words)
{
	const uint64_t t = split_item();
	if (t >= total)
		return;
	const uint64_t b = t / payload_words, k = t % payload_words, gb = block_base + b;
	const uint64_t row = gb / bpr, j = gb % bpr;
	out[row * row_words + prefix_words + j * payload_words + k] =
		split_word(src + b * block_bytes + src_payload_off + 4 * k);
}

/* Byte pos of chunk row rl's prefix: a scale byte, or the zero padding after the scales. */
static __device__ __forceinline__ uint32_t prefix_byte(const uint8_t *src, uint64_t rl, uint64_t pos,
						       uint32_t bb, uint32_t sb, uint32_t soff, uint32_t bpr)
{
	if (pos >= (uint64_t)bpr * sb)
		return 0;
	return src[(rl * bpr + pos / sb) * bb + soff + pos % sb];
}

/* One item per prefix dword of a chunk of whole rows (a dword may span two blocks' scales). */
extern "C" __global__ void __launch_bounds__(SPLIT_MAX_BLOCK)
split_scale_dword(uint32_t *out, const uint8_t *src, unsigned int total, unsigned int row_base,
		  unsigned int block_bytes, unsigned int scale_bytes, unsigned int scale_off,
		  unsigned int bpr, unsigned int prefix_words, unsigned int row_words)
{
	const uint64_t t = split_item();
	if (t >= total)
		return;
	const uint64_t rl = t / prefix_words, k = t % prefix_words;
	uint32_t w = 0;
	for (uint32_t e = 0; e < 4; e++)
		w |= prefix_byte(src, rl, 4 * k + e, block_bytes, scale_bytes, scale_off, bpr) << 8 * e;
	out[((uint64_t)row_base + rl) * row_words + k] = w;
}

/* Chunk block b's scale into its row's prefix; the row's last block also zeroes the padding,
 * so every prefix byte has exactly one writer. */
static __device__ __forceinline__ void place_scale(uint8_t *out, const uint8_t *src, uint64_t b, uint32_t base,
						   uint32_t bb, uint32_t sb, uint32_t soff, uint32_t bpr,
						   uint32_t row_bytes)
{
	const uint64_t gb = base + b, row = gb / bpr, j = gb % bpr;
	uint8_t *o = out + row * row_bytes;
	const uint8_t *s = src + b * bb + soff;
	for (uint32_t i = 0; i < sb; i++)
		o[j * sb + i] = s[i];
	if (j == bpr - 1) {
		const uint64_t used = (uint64_t)bpr * sb, prefix = (used + 3) / 4 * 4;
		for (uint64_t i = used; i < prefix; i++)
			o[i] = 0;
	}
}

/* One item per block: its scale only. */
extern "C" __global__ void __launch_bounds__(SPLIT_MAX_BLOCK)
split_scale_bytes(uint8_t *out, const uint8_t *src, unsigned int nblocks, unsigned int block_base,
		  unsigned int block_bytes, unsigned int scale_bytes, unsigned int scale_off,
		  unsigned int bpr, unsigned int row_bytes)
{
	const uint64_t t = split_item();
	if (t < nblocks)
		place_scale(out, src, t, block_base, block_bytes, scale_bytes, scale_off, bpr, row_bytes);
}

/* One item per block, scale and payload, for any layout (payloads need not be dword-clean). */
extern "C" __global__ void __launch_bounds__(SPLIT_MAX_BLOCK)
split_bytes(uint8_t *out, const uint8_t *src, unsigned int nblocks, unsigned int block_base,
	    unsigned int block_bytes, unsigned int payload_bytes, unsigned int scale_bytes,
	    unsigned int scale_off, unsigned int bpr, unsigned int prefix, unsigned int row_bytes)
{
	const uint64_t t = split_item();
	if (t >= nblocks)
		return;
	place_scale(out, src, t, block_base, block_bytes, scale_bytes, scale_off, bpr, row_bytes);
	const uint64_t gb = block_base + t, row = gb / bpr, j = gb % bpr;
	uint8_t *o = out + row * row_bytes + prefix + j * payload_bytes;
	const uint8_t *s = src + t * block_bytes + (scale_off == 0 ? scale_bytes : 0);
	for (uint32_t i = 0; i < payload_bytes; i++)
		o[i] = s[i];
}
