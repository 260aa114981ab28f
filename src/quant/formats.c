/* formats.c — the registry of served formats (format_list.h's rows) and the resident row
 * geometry. Block sizes agree with ggml_types.c (quant_spec checks); the scale placement is
 * ARITHMETIC.md's table. */
#include "formats.h"
#include "ggml_types.h"

#include <string.h>

#define FORMAT_ROW(name, type, elems, bytes, sb, soff, pay, streams, cpu, cuda, vk)              \
	{ #name, GGML_##type, elems, bytes, sb, soff, pay, streams, { cpu, cuda, vk },          \
	  xpu_quant_##name, xpu_deq_##name },
static const struct xpu_format formats[] = { XPU_FORMAT_LIST(FORMAT_ROW) };
#undef FORMAT_ROW

/* A row's sizes must add up, and its kernel columns must say what the generators make of it
 * (they make the same kernels of every row); checked when the table is built. */
#define FORMAT_CHECK(name, type, elems, bytes, sb, soff, pay, streams, cpu, cuda, vk)            \
	_Static_assert(sb + pay == bytes && (soff == 0 || soff == pay),                        \
		       #name ": the scale is not at one end of the block");                    \
	_Static_assert((cpu) == XPU_FK_INT && (cuda) == XPU_FK_INT && (vk) == (XPU_FK_INT | XPU_FK_DOT4), \
		       #name ": the kernel tables, the CPU and CUDA entry points and vulkan.mk "  \
		       "make wave and id everywhere and dot4 on vulkan for every row");
XPU_FORMAT_LIST(FORMAT_CHECK)
#undef FORMAT_CHECK

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

const char *xpu_format_scale_layout(const struct xpu_format *f)
{
	return f->scale_bytes == 0 ? "none" : f->scale_offset == 0 ? "head" : "tail";
}

const char *xpu_format_backend_name(enum xpu_format_backend b)
{
	static const char *const names[XPU_FB_COUNT] = { "cpu", "cuda", "vulkan" };
	return b >= 0 && b < XPU_FB_COUNT ? names[b] : "?";
}
