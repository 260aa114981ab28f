/* model.c — the contract model's vocabulary (dtypes, layout flags, words), operand layouts
 * derived from strides, and the lifetime of a contract file (counted references). */
#include "contract.h"
#include "quant/format_list.h"

#include <string.h>

/* Every row of the format list, so a block dtype's geometry is its row there, never a second
 * copy of the numbers. */
#define ROW_OF(name, TYPE, elems, bytes, ...) { #name, elems, bytes },
static const struct {
	const char *name;
	int elems, bytes;
} format_rows[] = { XPU_FORMAT_LIST(ROW_OF) };
#undef ROW_OF

/* bytes 0: a block dtype, found in format_rows by its format name */
static const struct {
	const char *fkc, *format;
	int bytes;
} dtypes[XPU_DT_COUNT] = {
	[XPU_DT_F32] = { "F32", "f32", 4 },  [XPU_DT_F64] = { "F64", "f64", 8 },
	[XPU_DT_F16] = { "F16", "f16", 2 },  [XPU_DT_BF16] = { "BF16", "bf16", 2 },
	[XPU_DT_I8] = { "I8", "i8", 1 },     [XPU_DT_I16] = { "I16", "i16", 2 },
	[XPU_DT_I32] = { "I32", "i32", 4 },  [XPU_DT_I64] = { "I64", "i64", 8 },
	[XPU_DT_U8] = { "U8", "u8", 1 },     [XPU_DT_U16] = { "U16", "u16", 2 },
	[XPU_DT_U32] = { "U32", "u32", 4 },  [XPU_DT_U64] = { "U64", "u64", 8 },
	[XPU_DT_Q8_0] = { "Q8_0", "q8_0", 0 }, [XPU_DT_Q4_0] = { "Q4_0", "q4_0", 0 },
	[XPU_DT_Q4_K] = { "Q4_K", "q4_K", 0 }, [XPU_DT_Q6_K] = { "Q6_K", "q6_K", 0 },
};

const char *xpu_dtype_name(int dt)
{
	return dt >= 0 && dt < XPU_DT_COUNT ? dtypes[dt].fkc : "?";
}

const char *xpu_dtype_format(int dt)
{
	return dt >= 0 && dt < XPU_DT_COUNT ? dtypes[dt].format : "?";
}

/* Elements and bytes of one unit of dt (an element, or a block); 0 for no dtype. */
static int unit_of(int dt, int *bytes)
{
	*bytes = 0;
	if (dt < 0 || dt >= XPU_DT_COUNT)
		return 0;
	if (dtypes[dt].bytes)
		return *bytes = dtypes[dt].bytes, 1;
	for (size_t i = 0; i < sizeof format_rows / sizeof *format_rows; i++)
		if (strcmp(format_rows[i].name, dtypes[dt].format) == 0)
			return *bytes = format_rows[i].bytes, format_rows[i].elems;
	return 0;
}

int xpu_dtype_bytes(int dt)
{
	int bytes;
	unit_of(dt, &bytes);
	return bytes;
}

int xpu_dtype_block_elems(int dt)
{
	int bytes;
	return unit_of(dt, &bytes);
}

int64_t xpu_dtype_span(int dt, int64_t n, int64_t row)
{
	int bytes, elems = unit_of(dt, &bytes);
	int64_t out;
	if (elems == 0 || n < 0 || (elems > 1 && (row <= 0 ? n != 0 : row % elems != 0)))
		return -1;
	if (__builtin_mul_overflow(n / elems, (int64_t)bytes, &out))
		return -1;
	return out;
}

int xpu_dtype_parse(const char *s)
{
	for (int i = 0; i < XPU_DT_COUNT; i++)
		if (strcmp(s, dtypes[i].fkc) == 0 || strcmp(s, dtypes[i].format) == 0)
			return i;
	return -1;
}

const char *const xpu_layout_flag_names[XPU_LF_COUNT] = {
	"contiguous", "strided", "broadcast_stride0", "start_offset", "reverse_strides",
};

const char *xpu_determinism_word(enum xpu_determinism d)
{
	static const char *const w[] = { "bitwise", "same_hardware_bitwise", "nondeterministic" };
	return w[d];
}

const char *xpu_awkward_word(enum xpu_awkward a)
{
	static const char *const w[] = { "requires_contiguous", "native", "refuse" };
	return w[a];
}

const char *xpu_field_kind_word(enum xpu_field_kind k)
{
	static const char *const w[] = { "usize", "i64", "u8", "u32", "Vec<usize>", "Vec<(usize,usize)>",
					 "Vec<u8>", "DynScalar", "f32" };
	return w[k];
}

int xpu_fkc_field_index(const struct xpu_contract *c, const char *name)
{
	for (int i = 0; i < c->nfields; i++)
		if (strcmp(c->field[i].name, name) == 0)
			return i;
	return -1;
}

int xpu_fkc_input_index(const struct xpu_contract *c, const char *name)
{
	for (int i = 0; i < c->ninputs; i++)
		if (strcmp(c->input[i].name, name) == 0)
			return i;
	return -1;
}

/* Layout flags of a view: contiguous when the strides are the dense row-major ones (size-1
 * dims do not count); strided for any other positive stride pattern; broadcast for a stride
 * 0 on a dim longer than 1; reverse for a negative stride; start_offset for a non-zero base. */
int xpu_fkc_tensor_derive(struct xpu_fkc_tensor *t)
{
	int64_t n = 1, dense = 1;
	uint8_t f = 0;
	for (int i = 0; i < t->rank; i++)
		if (__builtin_mul_overflow(n, t->dims[i], &n))
			return xpu_fail("operand of %d dims: the element count overflows", t->rank);
	t->n = n;
	for (int i = t->rank - 1; t->has_strides && n > 0 && i >= 0; i--) {
		int64_t d = t->dims[i], s = t->strides[i];
		if (d > 1 && s == 0)
			f |= 1u << XPU_LF_BROADCAST;
		else if (d > 1 && s < 0)
			f |= 1u << XPU_LF_REVERSE;
		else if (d > 1 && s != dense)
			f |= 1u << XPU_LF_STRIDED;
		if (__builtin_mul_overflow(dense, d, &dense))
			dense = INT64_MAX;
	}
	if (t->offset != 0)
		f |= 1u << XPU_LF_OFFSET;
	if (!(f & (1u << XPU_LF_BROADCAST | 1u << XPU_LF_REVERSE | 1u << XPU_LF_STRIDED)))
		f |= 1u << XPU_LF_CONTIGUOUS;
	t->flags = f;
	t->flags_known = true;
	return 0;
}

static void free_clauses(struct xpu_fkc_clauses *cl)
{
	for (int i = 0; i < cl->n; i++)
		xpu_expr_free(cl->e[i]);
	cl->n = 0;
}

static void free_contract(struct xpu_contract *c)
{
	xpu_free(c->blurb);
	for (int i = 0; i < c->ninputs; i++)
		free_clauses(&c->input[i].shape);
	for (int i = 0; i < c->nfields; i++) {
		free_clauses(&c->field[i].constraint);
		xpu_expr_free(c->field[i].dflt);
		xpu_free(c->field[i].note);
	}
	for (int i = 0; i < c->noutputs; i++)
		for (int j = 0; j < c->output[i].ndims; j++)
			xpu_expr_free(c->output[i].dims[j]);
	for (int i = 0; i < c->caps.nfast; i++) {
		xpu_expr_free(c->caps.fast[i].when);
		xpu_free(c->caps.fast[i].note);
	}
	xpu_expr_free(c->caps.alignment_bytes);
	xpu_expr_free(c->caps.granularity_bits);
	xpu_expr_free(c->cost.flops);
	xpu_expr_free(c->cost.bytes_moved);
	xpu_expr_free(c->precision.max_ulp);
	xpu_expr_free(c->precision.max_relative);
	xpu_expr_free(c->precision.max_absolute);
	xpu_free(c->precision.notes);
}

void xpu_fkc_retain(struct xpu_fkc_file *f)
{
	__atomic_add_fetch(&f->refs, 1, __ATOMIC_RELAXED);
}

void xpu_fkc_release(struct xpu_fkc_file *f)
{
	if (!f || __atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	for (int i = 0; i < f->ncontracts; i++)
		free_contract(&f->contracts[i]);
	xpu_free(f->contracts);
	xpu_free(f->path);
	xpu_free(f);
}
