/* split.glsl — the scale of one chunk block into its row's prefix (the row's last block
 * also writes the prefix padding, so every prefix byte has one writer), on bytes.glsl. */
#ifndef XPU_SPLIT_GLSL
#define XPU_SPLIT_GLSL

void place_scale(uint t, uint base, uint bb, uint sb, uint soff, uint bpr, uint row_bytes,
		 uint off_out, uint off_src)
{
	uint gb = base + t, row = gb / bpr, j = gb % bpr, o = off_out + row * row_bytes;
	copy_span(o + j * sb, off_src + t * bb + soff, sb);
	if (j == bpr - 1u)
		zero_span(o + bpr * sb, (bpr * sb + 3u) / 4u * 4u - bpr * sb);
}

#endif
