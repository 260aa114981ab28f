/* bytes.glsl — byte reads of BYTES_SRC and byte-run writes into BYTES_DST (uint arrays the
 * includer names), for views that start on any byte. */
#ifndef XPU_BYTES_GLSL
#define XPU_BYTES_GLSL

uint src_byte(uint p)
{
	return (BYTES_SRC[p >> 2] >> ((p & 3u) * 8u)) & 255u;
}

/* The four bytes at p, little-endian. Allocations carry slack past their end, so the word
 * after the last one read is always there. */
uint src_word(uint p)
{
	uint s = (p & 3u) * 8u, lo = BYTES_SRC[p >> 2];
	if (s == 0u)
		return lo;
	return (lo >> s) | (BYTES_SRC[(p >> 2) + 1u] << (32u - s));
}

/* A word a run covers whole is stored; a partial word is merged with two atomics on its own
 * bytes, so items writing neighbouring bytes of one word never lose each other's bytes. */
void put_word(uint w, uint v, uint mask)
{
	if (mask == 0xffffffffu) {
		BYTES_DST[w] = v;
	} else if (mask != 0u) {
		atomicAnd(BYTES_DST[w], ~mask);
		atomicOr(BYTES_DST[w], v & mask);
	}
}

uint byte_mask(uint first, uint count)
{
	return count >= 4u ? 0xffffffffu : ((1u << (8u * count)) - 1u) << (8u * first);
}

/* n bytes from source byte spos to destination byte dpos. */
void copy_span(uint dpos, uint spos, uint n)
{
	if (n == 0u)
		return;
	uint end = dpos + n;
	for (uint w = dpos >> 2; w <= (end - 1u) >> 2; w++) {
		uint lo = max(4u * w, dpos), hi = min(4u * w + 4u, end), v = 0u;
		if (hi - lo == 4u) {
			v = src_word(spos + (lo - dpos));
		} else {
			for (uint p = lo; p < hi; p++)
				v |= src_byte(spos + (p - dpos)) << ((p & 3u) * 8u);
		}
		put_word(w, v, byte_mask(lo & 3u, hi - lo));
	}
}

void zero_span(uint dpos, uint n)
{
	if (n == 0u)
		return;
	uint end = dpos + n;
	for (uint w = dpos >> 2; w <= (end - 1u) >> 2; w++) {
		uint lo = max(4u * w, dpos), hi = min(4u * w + 4u, end);
		put_word(w, 0u, byte_mask(lo & 3u, hi - lo));
	}
}

#endif
