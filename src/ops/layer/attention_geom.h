/* attention_geom.h — the geometry the attention kernels' extents (attention.c) and launchers
 * (attention_launch.c) share: which positions a query sees, how the context is split, and the
 * checks of a launch's shape, each refusal naming its argument. */
#ifndef XPU_OPS_ATTENTION_GEOM_H
#define XPU_OPS_ATTENTION_GEOM_H

#include <stdint.h>

struct xpu_att_shape {
	uint32_t n_head, n_kv_head, hd, slots, window;
};

/* The oldest position a query at position p sees: p - window + 1, or 0 (no window). */
static inline uint32_t xpu_att_lo(uint32_t p, uint32_t window)
{
	return window && p + 1 > window ? p + 1 - window : 0;
}

/* The decode split for a shape (a function of the query alone): the positions a head can see
 * at most (the window, or every slot) cut so that KV heads x splits is about
 * XPU_ATT_GROUPS_AIM, 32 .. 256 positions, halved while the group's scores do not fit. */
uint32_t xpu_att_split(const struct xpu_att_shape *s);
/* The splits of one head for a query at pos: those from lo(pos) / split to pos / split. */
uint32_t xpu_att_splits(uint32_t pos, uint32_t window, uint32_t split);
/* The most splits a head takes at any position of the shape (the decode_pos forms' layout):
 * the span (window, or every slot) cut at multiples of split, one more where it can straddle. */
uint32_t xpu_att_max_splits(const struct xpu_att_shape *s, uint32_t split);
/* Heads, head_dim (hd_only: the width a kernel is built for, 0: any), slots; then the
 * queries at newest - n_queries + 1 .. newest see only positions still in the cache (a
 * refusal of those names the argument pos_name). */
int xpu_att_check(const struct xpu_att_shape *s, uint32_t hd_only, uint32_t newest, uint32_t n_queries,
		  const char *pos_name);

#endif
