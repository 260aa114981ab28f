/* kv_write.c — CPU body of kv_write (src/ops/layer/kv_write.c): each f32 of the K and V rows
 * rounded once to f16, to nearest even (src/quant/f16.h: overflow to infinity, a NaN quiet
 * with its payload's top bits kept), stored at its position's slot of both caches. Pure
 * integer work on the bits, so a device result == this one whatever its grid. Group g of G
 * does the contiguous elements [g n / G, (g + 1) n / G) of each of K and V. */
#include "cpu_kernel.h"
#include "quant/f16.h"

/* kc vc k v pos tokens n_kv_head hd slots: element (t, h, d) of k / v goes to half
 * (h slots + (pos[0] % slots + t) % slots) hd + d of kc / vc. */
static void kv_write(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	uint16_t *kc = karg_ptr(a, 0), *vc = karg_ptr(a, 1);
	const uint32_t *kr = karg_ptr(a, 2), *vr = karg_ptr(a, 3), *pos = karg_ptr(a, 4);
	const uint64_t tokens = a[5].u, n_kv = a[6].u, hd = a[7].u, slots = a[8].u;
	const uint64_t n = tokens * n_kv * hd, row = n_kv * hd, groups = (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
	const uint64_t s0 = pos[0] % slots;
	for (uint64_t g = g0; g < g1; g++) {
		for (uint64_t i = g * n / groups; i < (g + 1) * n / groups; i++) {
			uint64_t t = i / row, h = i % row / hd, d = i % hd, slot = (s0 + t) % slots;
			uint64_t at = (h * slots + slot) * hd + d;
			kc[at] = xpu_f32_to_f16(xpu_bits_f32(kr[i]));
			vc[at] = xpu_f32_to_f16(xpu_bits_f32(vr[i]));
		}
	}
}

const struct xpu_cpu_entry xpu_cpu_entries_kv[] = {
	{ "kv_write", kv_write },
	{ NULL, NULL },
};
