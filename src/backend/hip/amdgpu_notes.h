/* amdgpu_notes.h — AMDGPU code objects read on any machine, no GPU and no ROCm needed: the
 * entries of a clang offload bundle, and per kernel what the compiler measured, from the ELF's
 * NT_AMDGPU_METADATA note (msgpack); and which of them this binary embeds. Uses core/xpu.h and
 * the embedded code table (scripts/embed-gen.c). */
#ifndef XPU_AMDGPU_NOTES_H
#define XPU_AMDGPU_NOTES_H

#include "core/xpu.h"

#define XPU_AMDGPU_NAME_MAX 256  /* longest kernel name kept, terminator included */
#define XPU_AMDGPU_ARCH_MAX 64   /* "gfx90a:sramecc+:xnack-" */
#define XPU_AMDGPU_TRIPLE_MAX 128
#define XPU_AMDGPU_MAX_KERNELS 4096

/* One kernel of a code object; -1 where the note does not say (never a guessed number). */
struct xpu_amdgpu_kernel {
	char name[XPU_AMDGPU_NAME_MAX];       /* .name */
	int64_t vgpr_count;                   /* .vgpr_count */
	int64_t sgpr_count;                   /* .sgpr_count */
	int64_t agpr_count;                   /* .agpr_count (gfx90a, gfx94x) */
	int64_t vgpr_spill_count;             /* .vgpr_spill_count */
	int64_t sgpr_spill_count;             /* .sgpr_spill_count */
	int64_t private_segment_fixed_size;   /* scratch bytes per work-item */
	int64_t group_segment_fixed_size;     /* static LDS bytes per workgroup */
	int64_t max_flat_workgroup_size;
	int64_t wavefront_size;
};

/* What one ELF code object says about itself. */
struct xpu_amdgpu_code {
	char target[XPU_AMDGPU_TRIPLE_MAX];   /* amdhsa.target, "amdgcn-amd-amdhsa--gfx90a" */
	char arch[XPU_AMDGPU_ARCH_MAX];       /* the target ID: "gfx90a", "gfx90a:xnack-" */
	int nkernels;
	struct xpu_amdgpu_kernel *kernels;    /* xpu_malloc'd; xpu_amdgpu_code_free */
};

/* Parses the ELF code object `elf` of `n` bytes. `what` names it in every message. On a
 * refusal returns -1 with xpu_error() naming the part that was wrong; `out` is then empty. */
int xpu_amdgpu_notes(const void *elf, size_t n, const char *what, struct xpu_amdgpu_code *out);
void xpu_amdgpu_code_free(struct xpu_amdgpu_code *c);

/* ---- clang offload bundles ("__CLANG_OFFLOAD_BUNDLE__", what hipcc --genco writes) -------- */

struct xpu_bundle_entry {
	const unsigned char *data;            /* inside the bundle's bytes */
	size_t size;
	char triple[XPU_AMDGPU_TRIPLE_MAX];   /* "hipv4-amdgcn-amd-amdhsa--gfx90a" */
	char arch[XPU_AMDGPU_ARCH_MAX];       /* "gfx90a"; empty for the host entry */
};

bool xpu_is_offload_bundle(const void *data, size_t n);
/* Fills up to `max` entries, *count = how many the bundle has; -1 on a malformed bundle. */
int xpu_offload_bundle(const void *data, size_t n, const char *what, struct xpu_bundle_entry *out,
		       int max, int *count);

/* The target ID after "amdhsa-" in a triple or amdhsa.target ("" when there is none). */
void xpu_amdgpu_arch_of(const char *triple, char *arch, size_t n);
/* Whether code built for target ID `code` runs on a device whose target ID is `dev`: the same
 * processor, and no feature (xnack, sramecc) set one way in the code and the other on the
 * device. A feature the code leaves unset ("any") runs either way. */
bool xpu_amdgpu_arch_runs_on(const char *code, const char *dev);

/* ---- the HIP code objects this binary carries (kernels/hip/hip.mk) -------------------------- */

#define XPU_HIP_MAX_OBJECTS 64

/* One ELF code object for one architecture, inside an embedded file. */
struct xpu_hip_code_object {
	const char *file;              /* the embedded file's name, "xpu-gfx90a.hipfb" */
	const char *path;              /* where the build took it from, "build/hip/xpu-gfx90a.hipfb" */
	struct xpu_bundle_entry entry; /* data, size, triple (empty for a bare ELF), arch */
};

/* Every AMDGPU code object embedded (offload bundles' AMDGPU entries and bare AMDGPU ELFs),
 * in embedding order: fills up to `max` and returns how many there are, or -1 when an
 * embedded file is malformed. Reads no GPU and no runtime. */
int xpu_hip_embedded(struct xpu_hip_code_object *out, int max);

#endif
