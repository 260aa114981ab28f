/* ggml_types.c — the GGUF tensor type table (block sizes from ggml's block structs). */
#include "ggml_types.h"
#include "core/xpu.h"

static const struct ggml_type_info types[GGML_TYPE_LIMIT] = {
	[GGML_F32] = { "f32", 1, 4 },           [GGML_F16] = { "f16", 1, 2 },
	[GGML_Q4_0] = { "q4_0", 32, 18 },       [GGML_Q4_1] = { "q4_1", 32, 20 },
	[4] = { "q4_2 (removed)", 0, 0 },       [5] = { "q4_3 (removed)", 0, 0 },
	[GGML_Q5_0] = { "q5_0", 32, 22 },       [GGML_Q5_1] = { "q5_1", 32, 24 },
	[GGML_Q8_0] = { "q8_0", 32, 34 },       [GGML_Q8_1] = { "q8_1", 32, 36 },
	[GGML_Q2_K] = { "q2_K", 256, 84 },      [GGML_Q3_K] = { "q3_K", 256, 110 },
	[GGML_Q4_K] = { "q4_K", 256, 144 },     [GGML_Q5_K] = { "q5_K", 256, 176 },
	[GGML_Q6_K] = { "q6_K", 256, 210 },     [GGML_Q8_K] = { "q8_K", 256, 292 },
	[GGML_IQ2_XXS] = { "iq2_xxs", 256, 66 }, [GGML_IQ2_XS] = { "iq2_xs", 256, 74 },
	[GGML_IQ3_XXS] = { "iq3_xxs", 256, 98 }, [GGML_IQ1_S] = { "iq1_s", 256, 50 },
	[GGML_IQ4_NL] = { "iq4_nl", 32, 18 },   [GGML_IQ3_S] = { "iq3_s", 256, 110 },
	[GGML_IQ2_S] = { "iq2_s", 256, 82 },    [GGML_IQ4_XS] = { "iq4_xs", 256, 136 },
	[GGML_I8] = { "i8", 1, 1 },             [GGML_I16] = { "i16", 1, 2 },
	[GGML_I32] = { "i32", 1, 4 },           [GGML_I64] = { "i64", 1, 8 },
	[GGML_F64] = { "f64", 1, 8 },           [GGML_IQ1_M] = { "iq1_m", 256, 56 },
	[GGML_BF16] = { "bf16", 1, 2 },
	[31] = { "q4_0_4_4 (removed)", 0, 0 },  [32] = { "q4_0_4_8 (removed)", 0, 0 },
	[33] = { "q4_0_8_8 (removed)", 0, 0 },
	[GGML_TQ1_0] = { "tq1_0", 256, 54 },    [GGML_TQ2_0] = { "tq2_0", 256, 66 },
	[36] = { "iq4_nl_4_4 (removed)", 0, 0 }, [37] = { "iq4_nl_4_8 (removed)", 0, 0 },
	[38] = { "iq4_nl_8_8 (removed)", 0, 0 },
	[GGML_MXFP4] = { "mxfp4", 32, 17 },
};

const struct ggml_type_info *ggml_type_info(int32_t type)
{
	if (type < 0 || type >= GGML_TYPE_LIMIT || !types[type].name)
		return NULL;
	return &types[type];
}

int ggml_types_register(void)
{
	for (int32_t t = 0; t < GGML_TYPE_LIMIT; t++)
		if (types[t].name && types[t].block_elems)
			if (xpu_name_fixed(XPU_NAME_FORMAT, types[t].name, t))
				return -1;
	return 0;
}
