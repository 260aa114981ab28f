/* ggml_types.h — every GGUF tensor type by number, name, block elements and block bytes,
 * including the ones no kernel serves, so a refusal can say "q5_K" rather than "type 13". */
#ifndef XPU_GGML_TYPES_H
#define XPU_GGML_TYPES_H

#include <stdint.h>
#include <stdbool.h>

enum {
	GGML_F32 = 0, GGML_F16 = 1, GGML_Q4_0 = 2, GGML_Q4_1 = 3, GGML_Q5_0 = 6, GGML_Q5_1 = 7,
	GGML_Q8_0 = 8, GGML_Q8_1 = 9, GGML_Q2_K = 10, GGML_Q3_K = 11, GGML_Q4_K = 12,
	GGML_Q5_K = 13, GGML_Q6_K = 14, GGML_Q8_K = 15, GGML_IQ2_XXS = 16, GGML_IQ2_XS = 17,
	GGML_IQ3_XXS = 18, GGML_IQ1_S = 19, GGML_IQ4_NL = 20, GGML_IQ3_S = 21, GGML_IQ2_S = 22,
	GGML_IQ4_XS = 23, GGML_I8 = 24, GGML_I16 = 25, GGML_I32 = 26, GGML_I64 = 27,
	GGML_F64 = 28, GGML_IQ1_M = 29, GGML_BF16 = 30, GGML_TQ1_0 = 34, GGML_TQ2_0 = 35,
	GGML_MXFP4 = 39,
	GGML_TYPE_LIMIT = 40 /* type numbers at or past this are unknown */
};

struct ggml_type_info {
	const char *name;       /* ggml's spelling: "q4_K", "iq4_nl" */
	uint32_t block_elems;   /* 0 for a number that was retired */
	uint32_t block_bytes;
};

/* The type's facts, or NULL for a number never used. Retired numbers (4, 5, 31-33, 36-38)
 * return an entry whose block_elems is 0 and whose name says "(removed)". */
const struct ggml_type_info *ggml_type_info(int32_t type);
/* Registers every type name as a format at its GGUF number (idempotent). */
int ggml_types_register(void);

#endif
