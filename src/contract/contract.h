/* contract.h — FKC kernel contracts (seed 004): the contract model a reader fills from
 * contracts/ (markdown), the expressions of its constraints and costs, call validation and the
 * planner. Uses only the core (no Lua); the reader uses libyaml. */
#ifndef XPU_CONTRACT_H
#define XPU_CONTRACT_H

#include "core/xpu.h"

#define XPU_FKC_MAX_RANK 8
#define XPU_FKC_MAX_INPUTS 6
#define XPU_FKC_MAX_OUTPUTS 4
#define XPU_FKC_MAX_FIELDS 12
#define XPU_FKC_MAX_FAST 4
#define XPU_FKC_MAX_CLAUSES 4    /* `a; b` constraint clauses */
#define XPU_FKC_MAX_LIST 8       /* elements of a list parameter */
#define XPU_FKC_NAME 32
#define XPU_FKC_FILE_LIMIT (1 << 20) /* bytes of one contract file */

/* ---- dtypes and layout flags ------------------------------------------------------------ */

enum xpu_dtype {
	XPU_DT_F32, XPU_DT_F64, XPU_DT_F16, XPU_DT_BF16, XPU_DT_I8, XPU_DT_I16, XPU_DT_I32,
	XPU_DT_I64, XPU_DT_U8, XPU_DT_U16, XPU_DT_U32, XPU_DT_U64,
	XPU_DT_Q8_0, XPU_DT_Q4_0, XPU_DT_Q4_K, XPU_DT_Q6_K, /* GGUF blocks (src/quant/format_list.h): a row is whole blocks */
	XPU_DT_COUNT
};

const char *xpu_dtype_name(int dt);    /* FKC spelling: "F32", "Q4_K" */
const char *xpu_dtype_format(int dt);  /* the xpu.format name: "f32", "q4_K" */
int xpu_dtype_bytes(int dt);           /* of one element; of one block for a block dtype */
int xpu_dtype_block_elems(int dt);     /* elements a dtype_bytes holds: 1, or the block's */
int xpu_dtype_parse(const char *s);    /* "F32" or "f32"; -1 when unknown */
/* Bytes of n elements in dense rows of `row` elements: -1 when a row is not whole blocks. */
int64_t xpu_dtype_span(int dt, int64_t n, int64_t row);

enum xpu_layout_flag {
	XPU_LF_CONTIGUOUS, XPU_LF_STRIDED, XPU_LF_BROADCAST, XPU_LF_OFFSET, XPU_LF_REVERSE, XPU_LF_COUNT
};
enum xpu_layout_rule { XPU_LR_REJECTED, XPU_LR_ACCEPTED, XPU_LR_REQUIRED };
extern const char *const xpu_layout_flag_names[XPU_LF_COUNT]; /* "contiguous", ... */

/* ---- tensors and values the expressions see --------------------------------------------- */

/* An operand as a call describes it: dtype, shape, and (optionally) strides and offset in
 * elements. `flags` is derived (xpu_fkc_tensor_derive) from the strides. */
struct xpu_fkc_tensor {
	bool present;
	bool dims_known;    /* a query may carry the rank without the dims */
	bool flags_known;
	int dtype;          /* -1: unknown */
	int rank;           /* -1: unknown */
	int64_t dims[XPU_FKC_MAX_RANK];
	int64_t strides[XPU_FKC_MAX_RANK];
	bool has_strides;   /* else dense row-major */
	int64_t offset;     /* elements from the buffer base */
	int64_t n;          /* element count */
	uint8_t flags;      /* bit per enum xpu_layout_flag the layout shows */
};
/* Fills n and flags from dims, strides and offset; -1 when the element count overflows. */
int xpu_fkc_tensor_derive(struct xpu_fkc_tensor *t);

enum xpu_val_kind { XV_INT, XV_NUM, XV_LIST, XV_PAIRS, XV_PAIR, XV_TENSOR, XV_UNKNOWN };

struct xpu_val {
	uint8_t kind;
	int n;                /* lists: elements; pairs: pairs */
	int64_t i;
	double f;
	const int64_t *p;     /* lists, pairs (2n values), a pair (2 values) */
	const struct xpu_fkc_tensor *t;
};

/* ---- expressions ------------------------------------------------------------------------ */

struct xpu_contract;
struct xpu_fkc_call;

#define XPU_EXPR_MAX_NODES 96
#define XPU_EXPR_MAX_TEXT 512
#define XPU_EXPR_MAX_DEPTH 24

struct xpu_expr_node {
	uint8_t op;
	uint8_t nargs;
	int16_t a[3];       /* children */
	int32_t ref;        /* identifiers: resolved reference; members and calls: their code */
	int64_t i;
	double f;
	char name[24];
};

/* A parsed expression, allocated to its size. */
struct xpu_expr {
	int n, root;
	bool uses_i;        /* mentions the free index `i` */
	char *text;
	struct xpu_expr_node node[];
};

/* References an identifier resolves to. */
enum {
	XPU_REF_INPUT = 0x100,  /* + input index */
	XPU_REF_FIELD = 0x200,  /* + op_params field index */
	XPU_REF_DTYPE_BYTES = 0x300, XPU_REF_DIM, XPU_REF_RANK, XPU_REF_DTYPE, XPU_REF_I,
	XPU_REF_EPS, XPU_REF_EPS_OUT,
};

/* Where an expression appears decides which built-in names it may use. */
enum xpu_expr_ctx { XPU_CTX_COST, XPU_CTX_SHAPE, XPU_CTX_FIELD, XPU_CTX_PRECISION };

/* Parses text (at most XPU_EXPR_MAX_TEXT bytes, XPU_EXPR_MAX_NODES nodes, nesting at most
 * XPU_EXPR_MAX_DEPTH) and resolves its names for the place it appears in. NULL with the
 * reason in err. */
struct xpu_expr *xpu_expr_new(const char *text, const struct xpu_contract *c, enum xpu_expr_ctx ctx,
			      char *err, size_t errn);
void xpu_expr_free(struct xpu_expr *e);

/* Evaluation environment: the contract's call, the operand a shape constraint is about,
 * and the free index. A value not present (a partial call, from a query) is XV_UNKNOWN. */
struct xpu_expr_env {
	const struct xpu_contract *c;
	const struct xpu_fkc_call *call;
	const struct xpu_fkc_tensor *self;
	int64_t i;
	double eps, eps_out;
};

/* 0 with *out; -1 with the reason in err (overflow, division by zero, an index outside a
 * list, a type mismatch). Allocates nothing. */
int xpu_expr_eval(const struct xpu_expr *e, const struct xpu_expr_env *env, struct xpu_val *out,
		  char *err, size_t errn);

/* ---- the contract ------------------------------------------------------------------------ */

struct xpu_fkc_clauses {
	int n;
	struct xpu_expr *e[XPU_FKC_MAX_CLAUSES];
};

struct xpu_fkc_input {
	char name[XPU_FKC_NAME];
	int line;
	uint32_t dtypes;                 /* bit per enum xpu_dtype */
	uint8_t layout[XPU_LF_COUNT];    /* enum xpu_layout_rule */
	bool rank_any;
	int rank_min, rank_max;
	char rank_text[16];
	struct xpu_fkc_clauses shape;    /* shape_constraint */
	int shape_line;
};

enum xpu_field_kind { XPU_FK_USIZE, XPU_FK_I64, XPU_FK_U8, XPU_FK_U32, XPU_FK_LIST, XPU_FK_PAIRS,
		      XPU_FK_BYTES, XPU_FK_DYN, XPU_FK_F32 };

struct xpu_fkc_field {
	char name[XPU_FKC_NAME];
	int line;
	enum xpu_field_kind kind;
	struct xpu_fkc_clauses constraint;
	struct xpu_expr *dflt;           /* NULL: the call must give it */
	bool has_fdflt;                  /* f32: a default, a number literal (never an expression) */
	bool argument;                   /* an integer that travels as an operand of the call, not a fact */
	double fdflt;
	char *note;
};

enum xpu_dtype_rule { XPU_DR_PASSTHROUGH, XPU_DR_FIXED };
enum xpu_shape_rule { XPU_SR_SAME_AS, XPU_SR_FROM_PARAMS, XPU_SR_DIMS };

struct xpu_fkc_output {
	char name[XPU_FKC_NAME];
	int line;
	enum xpu_dtype_rule dtype_rule;
	int dtype_src;         /* input index, or the dtype for XPU_DR_FIXED */
	enum xpu_shape_rule shape_rule;
	int shape_src;         /* input index, or field index */
	int ndims;             /* XPU_SR_DIMS: `dims(a, b, ...)`, one expression a dim */
	struct xpu_expr *dims[XPU_FKC_MAX_RANK];
	int layout_same_as;    /* -1: contiguous; else the input whose layout is kept */
	int in_place;          /* -1: aliasing none; else the input it overwrites */
};

enum xpu_awkward { XPU_AW_REQUIRES_CONTIGUOUS, XPU_AW_NATIVE, XPU_AW_REFUSE };
enum xpu_determinism { XPU_DET_BITWISE, XPU_DET_SAME_HARDWARE, XPU_DET_NONE };

struct xpu_fkc_fast {
	struct xpu_expr *when; /* NULL: prose only */
	char cls[24];
	char *note;
};

struct xpu_contract {
	struct xpu_fkc_file *file;
	int line;                        /* of the ```fkc fence */
	char kernel[64], op_kind[32], backend[16], kernel_source[48], entry_point[64];
	char revision_hash[48];
	char *blurb;
	int ninputs;
	struct xpu_fkc_input input[XPU_FKC_MAX_INPUTS];
	char variant[32];
	int nfields;
	struct xpu_fkc_field field[XPU_FKC_MAX_FIELDS];
	int noutputs;
	struct xpu_fkc_output output[XPU_FKC_MAX_OUTPUTS];
	struct {
		enum xpu_awkward awkward;
		int nfast;
		struct xpu_fkc_fast fast[XPU_FKC_MAX_FAST];
		bool in_place;
		struct xpu_expr *alignment_bytes;  /* of every buffer's base: a number or dtype_bytes */
		struct xpu_expr *granularity_bits;
	} caps;
	struct {
		char provenance[32], cls[32];
		struct xpu_expr *flops, *bytes_moved;
		bool overhead_known;
		double overhead_ns;
		int64_t device_bytes, host_bytes, disk_bytes;
	} cost;
	struct {
		bool bit_stable, audited;
		struct xpu_expr *max_ulp, *max_relative, *max_absolute; /* NULL: `~` */
		char *notes;
	} precision;
	enum xpu_determinism determinism;
};

struct xpu_fkc_file {
	int refs;
	char *path;
	int version;
	char provider[64], provider_backend[16], revision_base[64];
	int ncontracts;
	struct xpu_contract *contracts;
};

/* Reads a contract file (front matter and every ```fkc block). NULL with a message naming
 * file, line, kernel and key. The file starts with one reference. */
struct xpu_fkc_file *xpu_fkc_load(const char *path);
/* The same from text in memory; `path` names it in messages. */
struct xpu_fkc_file *xpu_fkc_parse(const char *path, const char *text, size_t len);
void xpu_fkc_retain(struct xpu_fkc_file *f);
void xpu_fkc_release(struct xpu_fkc_file *f);

int xpu_fkc_field_index(const struct xpu_contract *c, const char *name);
int xpu_fkc_input_index(const struct xpu_contract *c, const char *name);
const char *xpu_determinism_word(enum xpu_determinism d);
const char *xpu_awkward_word(enum xpu_awkward a);
const char *xpu_field_kind_word(enum xpu_field_kind k);

/* ---- calls ------------------------------------------------------------------------------- */

struct xpu_fkc_param {
	bool present;
	int n;                            /* lists: elements; pairs: pairs; bytes: bytes */
	int64_t i;
	double f;                         /* f32: the value (an argument such as eps, not a fact) */
	int64_t v[2 * XPU_FKC_MAX_LIST];
};

struct xpu_fkc_call {
	bool partial;                     /* from a query: what is absent is unknown, not wrong */
	struct xpu_fkc_tensor in[XPU_FKC_MAX_INPUTS];
	struct xpu_fkc_param p[XPU_FKC_MAX_FIELDS];
};

enum xpu_fkc_verdict { XPU_FKC_OK, XPU_FKC_LAYOUT, XPU_FKC_REFUSED };

/* One output of a checked call: its dtype and shape (rank -1: not known yet). */
struct xpu_fkc_shape {
	int dtype, rank;
	int64_t dims[XPU_FKC_MAX_RANK];
	int64_t n;
};

struct xpu_fkc_result {
	enum xpu_fkc_verdict verdict;
	char refusal[192];                /* "accept.inputs[0].rank: rank 1 outside 2..=8" */
	int refused_input;                /* the input a LAYOUT verdict is about */
	int dtype, rank;                  /* the first output (out[0] again) */
	int64_t dims[XPU_FKC_MAX_RANK];
	int64_t n;
	struct xpu_fkc_shape out[XPU_FKC_MAX_OUTPUTS]; /* every output, in return.outputs' order */
	bool bytes_known, flops_known;
	uint64_t bytes_moved, flops;
	int in_place;                     /* -1 or the input the first output aliases (each output's: output[j].in_place) */
	int fast_path;                    /* -1 or the index into caps.fast_paths that applies */
	int64_t alignment;                /* caps.alignment_bytes for this call (0: unknown) */
	int64_t granularity_bits;
};

/* Validates the call against accept, fills defaults into call->p, computes the output and
 * evaluates the costs. 0 when it ran (r->verdict says whether the call is admitted); -1 only
 * for misuse, with the message in xpu_error(). Allocates nothing. */
int xpu_fkc_check(const struct xpu_contract *c, struct xpu_fkc_call *call, struct xpu_fkc_result *r);

/* Precision bounds for an admitted call (NaN where the contract says `~`). */
void xpu_fkc_precision(const struct xpu_contract *c, const struct xpu_fkc_call *call,
		       double *max_ulp, double *max_relative, double *max_absolute);

/* ---- the planner ------------------------------------------------------------------------- */

#define XPU_PLAN_MAX_STEPS (XPU_FKC_MAX_INPUTS + 1)

struct xpu_plan_step {
	const struct xpu_contract *c;
	int input;                        /* contiguize steps: the input they make dense; -1 */
	uint64_t bytes_moved, flops;
};

struct xpu_plan {
	int nsteps;
	struct xpu_plan_step step[XPU_PLAN_MAX_STEPS];
	uint64_t bytes_moved, flops;
	struct xpu_fkc_call call;         /* the op's own call, operands made dense, defaults in */
	struct xpu_fkc_result result;     /* of the op's own step */
};

/* The cheapest way (bytes moved) to run a call: for each candidate i with a call calls[i]
 * (NULL: a helper only), the op directly, or after contiguize steps (priced from a
 * contiguize contract among the candidates, of the op's backend) where its strategy is
 * requires_contiguous. 0 with a plan, or -1 with every candidate's refusal in why. */
int xpu_fkc_plan(const struct xpu_contract *const *cands, const struct xpu_fkc_call *const *calls, int n,
		 struct xpu_plan *plan, char *why, size_t whyn);

#endif
