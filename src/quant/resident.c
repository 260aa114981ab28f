/* resident.c — the host reference split of GGUF blocks into resident rows (scale prefix
 * padded to a dword, then the payloads) and its inverse, for tests and the CPU path.
 * Uses formats.h and core/xpu.h. */
#include "formats.h"
#include "core/xpu.h"

#include <string.h>

static int check_rows(const char *what, const struct xpu_format *f, uint64_t nblocks, uint64_t bpr)
{
	if (!f)
		return xpu_fail("%s: no format", what);
	if (bpr == 0)
		return xpu_fail("%s: blocks per row is 0", what);
	if (nblocks % bpr)
		return xpu_fail("%s: %llu blocks is not a whole number of rows of %llu", what,
				(unsigned long long)nblocks, (unsigned long long)bpr);
	return 0;
}

int xpu_resident_split(const struct xpu_format *f, const void *blocks, uint64_t nblocks,
		       uint64_t bpr, void *rows)
{
	if (check_rows("resident split", f, nblocks, bpr))
		return -1;
	const uint64_t prefix = xpu_row_prefix_bytes(f, bpr), row_bytes = xpu_row_resident_bytes(f, bpr);
	const uint32_t pay_off = xpu_format_payload_offset(f);
	const uint8_t *src = blocks;
	uint8_t *out = rows;
	for (uint64_t r = 0; r < nblocks / bpr; r++) {
		uint8_t *row = out + r * row_bytes;
		memset(row + bpr * f->scale_bytes, 0, prefix - bpr * f->scale_bytes);
		for (uint64_t j = 0; j < bpr; j++) {
			const uint8_t *blk = src + (r * bpr + j) * f->block_bytes;
			memcpy(row + j * f->scale_bytes, blk + f->scale_offset, f->scale_bytes);
			memcpy(row + prefix + j * f->payload_bytes, blk + pay_off, f->payload_bytes);
		}
	}
	return 0;
}

int xpu_resident_join(const struct xpu_format *f, const void *rows, uint64_t nblocks,
		      uint64_t bpr, void *blocks)
{
	if (check_rows("resident join", f, nblocks, bpr))
		return -1;
	const uint64_t prefix = xpu_row_prefix_bytes(f, bpr), row_bytes = xpu_row_resident_bytes(f, bpr);
	const uint32_t pay_off = xpu_format_payload_offset(f);
	const uint8_t *in = rows;
	uint8_t *dst = blocks;
	for (uint64_t r = 0; r < nblocks / bpr; r++) {
		const uint8_t *row = in + r * row_bytes;
		for (uint64_t j = 0; j < bpr; j++) {
			uint8_t *blk = dst + (r * bpr + j) * f->block_bytes;
			memcpy(blk + f->scale_offset, row + j * f->scale_bytes, f->scale_bytes);
			memcpy(blk + pay_off, row + prefix + j * f->payload_bytes, f->payload_bytes);
		}
	}
	return 0;
}
