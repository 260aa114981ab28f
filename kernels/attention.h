/* attention.h — the constants of the attention kernels over the KV cache (attention_decode,
 * attention_combine, attention_prefill: src/ops/layer/attention.c), shared by
 * kernels/cpu/attention.c, kernels/cuda/attention.cu and kernels/vulkan/attention_*.glsl.
 * Included by C, CUDA and GLSL alike, so it holds nothing but defines.
 *
 * The cache is what write_slice / write_slice_rotating write: K and V each f16
 * [n_kv_head, slots, head_dim], head_dim fastest; position p lives in slot p % slots (a plain
 * cache holds every position below slots, so that is slot p). docs/ARITHMETIC.md, "Attention
 * over the KV cache", gives every float operation in order; the split of the context (decode)
 * and the key tile (prefill) are part of that arithmetic, so every backend takes the same. */
#ifndef XPU_ATTENTION_H
#define XPU_ATTENTION_H

#define XPU_ATT_BLOCK 256           /* threads of every attention workgroup: 8 waves of 32 */
#define XPU_ATT_MAX_HD 256          /* head_dim: even, 2 .. 256 */
#define XPU_ATT_MAX_GROUP 128       /* query heads per KV head (n_head / n_kv_head) */
#define XPU_ATT_MAX_SLOTS 262144    /* cache positions (2^18) */

/* Decode: the context is cut at multiples of `split` positions (32 .. 256, chosen by the
 * launcher from the query: src/ops/layer/attention.c); a group takes one KV head and one
 * split, all of its query heads, and writes each head's partial (max, sum, acc[head_dim]);
 * attention_combine folds the partials of a head in split order. */
#define XPU_ATT_SPLIT_MIN 32
#define XPU_ATT_SPLIT_MAX 256
#define XPU_ATT_SCORES 4096         /* group heads x split: the scores a group holds (16 KiB) */
#define XPU_ATT_GROUPS_AIM 512      /* the split grows until KV heads x splits is at most this */
#define XPU_ATT_MAX_SPLITS 2048     /* splits of one head */

/* Prefill: a group takes TILE_Q query tokens of one query head and walks the keys in tiles
 * of TILE_K positions, cut at multiples of TILE_K (online softmax, one update a tile). */
#define XPU_ATT_TILE_Q 16
#define XPU_ATT_TILE_K 32

/* kv_write: f32 K / V rows [tokens, n_kv_head, head_dim] rounded to f16 and stored at
 * positions pos[0] .. pos[0] + tokens - 1 of both caches (slot p % slots). One thread a
 * word (two halves) of a row, KV_BLOCK threads a group, at most KV_MAX_GROUPS groups (a
 * grid-stride loop takes the rest). */
#define XPU_KV_BLOCK 256
#define XPU_KV_MAX_GROUPS 4096

#endif
