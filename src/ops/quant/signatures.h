/* src/ops/quant/signatures.h — the decode mat-vecs' signatures, one statement for the plain
 * kernels (table.c) and their packed-dot twins (table_dot4.c), which take the same arguments. */
#ifndef XPU_OPS_QUANT_SIGNATURES_H
#define XPU_OPS_QUANT_SIGNATURES_H

#define WAVE_SIG "y:buf@4! w:buf@4 x:buf@4 rows:u32 cols:u32 y_off:u32"
#define ID_SIG "y:buf@4! slab:buf@4 x:buf@4 sel:buf@4 experts:u32 used:u32 rows:u32 cols:u32 " \
	       "x_row_blocks:u32 y_off:u32"
#define TAIL_SIG "y:buf@4! slab:buf@4 x:buf@4 sel:buf@4 w:buf@4 experts:u32 used:u32 rows:u32 " \
		 "cols:u32 x_row_blocks:u32"
/* the tail's, then the next norm's: xq (the q8_K pack of the normed residual), weight, count
 * (a u32 that is 0 before a launch and is left 0 after it), eps */
#define TAIL_NORM_SIG TAIL_SIG " xq:buf@4! weight:buf@4 count:buf@4! eps:f32"

#endif
