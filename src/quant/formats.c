/* formats.c — the registry of served formats and the resident row geometry.
 * Block sizes agree with ggml_types.c; the scale placement is ARITHMETIC.md's table. */
#include "formats.h"
#include "ggml_types.h"

#include <string.h>

static const struct xpu_format formats[] = {
	{ "q4_0", GGML_Q4_0, 32, 18, 2, 0, 16 },
	{ "q8_0", GGML_Q8_0, 32, 34, 2, 0, 32 },
	{ "q4_K", GGML_Q4_K, 256, 144, 0, 0, 144 }, /* no prefix: the 144-byte block is the payload */
	{ "q6_K", GGML_Q6_K, 256, 210, 2, 208, 208 },
	{ "iq4_nl", GGML_IQ4_NL, 32, 18, 2, 0, 16 },
};

#define NFORMATS ((int)(sizeof formats / sizeof formats[0]))

int xpu_format_count(void)
{
	return NFORMATS;
}

const struct xpu_format *xpu_format_at(int i)
{
	return i >= 0 && i < NFORMATS ? &formats[i] : NULL;
}

const struct xpu_format *xpu_format_get(int32_t type)
{
	for (int i = 0; i < NFORMATS; i++)
		if (formats[i].type == type)
			return &formats[i];
	return NULL;
}

const struct xpu_format *xpu_format_find(const char *name)
{
	for (int i = 0; name && i < NFORMATS; i++)
		if (strcmp(formats[i].name, name) == 0)
			return &formats[i];
	return NULL;
}

uint64_t xpu_row_prefix_bytes(const struct xpu_format *f, uint64_t bpr)
{
	return (bpr * f->scale_bytes + 3) / 4 * 4;
}

uint64_t xpu_row_resident_bytes(const struct xpu_format *f, uint64_t bpr)
{
	return xpu_row_prefix_bytes(f, bpr) + bpr * f->payload_bytes;
}

bool xpu_format_dword_clean(const struct xpu_format *f)
{
	return f->payload_bytes % 4 == 0;
}
