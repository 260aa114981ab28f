/* vulkan_pipe.c — the Vulkan kernels: embedded SPIR-V ("vk_<kernel>.spv", kernels/vulkan),
 * argument placement, pipelines per block made on first launch, the persisted pipeline cache,
 * the manifest. Uses vulkan_api.h. */
#include "vulkan_api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The table scripts/embed-gen.c writes (build/gen/embedded_code.c), NULL-name terminated. */
struct xpu_vk_embedded {
	const char *name;
	const char *path;
	const unsigned char *data;
	size_t size;
};
extern const struct xpu_vk_embedded xpu_embedded_code[];

#define SPIRV_MAGIC 0x07230203u

static uint32_t spv_word(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static bool is_kernel_spv(const struct xpu_vk_embedded *e)
{
	size_t n = strlen(e->name);
	return n > 7 && strncmp(e->name, "vk_", 3) == 0 && strcmp(e->name + n - 4, ".spv") == 0 &&
	       e->size >= 20 && e->size % 4 == 0 && spv_word(e->data) == SPIRV_MAGIC;
}

static const struct xpu_vk_embedded *spv_of(const char *kernel)
{
	char name[96];
	snprintf(name, sizeof name, "vk_%s.spv", kernel);
	for (const struct xpu_vk_embedded *e = xpu_embedded_code; e->name; e++)
		if (strcmp(e->name, name) == 0 && is_kernel_spv(e))
			return e;
	return NULL;
}

/* Kernels, not modules: a mat-vec's second module (".subgroup.spv") is not one more. */
int xpu_vk_kernels_count(void)
{
	int n = 0;
	for (const struct xpu_vk_embedded *e = xpu_embedded_code; e->name; e++)
		n += is_kernel_spv(e) && !strstr(e->name, ".subgroup.spv");
	return n;
}

/* Whether the module declares the integer dot product capabilities (OpCapability 6018 or
 * 6019): such a kernel exists only where the device has shaderIntegerDotProduct. */
static bool needs_dot(const struct xpu_vk_embedded *e)
{
	for (size_t i = 20; i + 4 <= e->size;) {
		uint32_t w = spv_word(e->data + i), len = w >> 16, op = w & 0xffff;
		if (len == 0)
			break;
		if (op == 17 && len == 2 && i + 8 <= e->size) { /* OpCapability */
			uint32_t cap = spv_word(e->data + i + 4);
			if (cap == 6018 || cap == 6019)
				return true;
		}
		i += 4 * (size_t)len;
	}
	return false;
}

/* Scalars in signature order at their natural alignment (u64 and i64: 8 bytes on 8), then
 * one u32 per buffer, in order: the byte offset of the view from its binding. A storage
 * buffer binding must start on minStorageBufferOffsetAlignment, and views start on any
 * byte their signature allows, so every binding starts at the view's offset rounded down
 * to that alignment and the kernel adds the rest, passed here; it is below the alignment
 * and keeps the view's own alignment (@4, @16), so word and vector kernels stay aligned. */
static void place_args(struct vk_kern *kn)
{
	const struct xpu_kernel *k = kn->k;
	uint32_t off = 0;
	for (int i = 0; i < k->nargs; i++) {
		enum xpu_arg_kind kind = k->args[i].kind;
		if (kind == XPU_ARG_BUF) {
			kn->nbuf++;
			continue;
		}
		uint32_t size = kind == XPU_ARG_U64 || kind == XPU_ARG_I64 ? 8 : 4;
		off = (off + size - 1) / size * size;
		kn->push_off[i] = off;
		off += size;
	}
	for (int i = 0; i < k->nargs; i++)
		if (k->args[i].kind == XPU_ARG_BUF) {
			kn->push_off[i] = off;
			off += 4;
		}
	kn->push_bytes = off;
}

/* ---- the pipeline cache file ------------------------------------------------------------- */

/* $XPULUA_CACHE, else $XDG_CACHE_HOME/xpulua, else ~/.cache/xpulua: Autotune's directory. */
static int cache_dir(char *out, size_t n)
{
	const char *v = getenv("XPULUA_CACHE"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	if (v && *v)
		snprintf(out, n, "%s", v);
	else if (xdg && *xdg)
		snprintf(out, n, "%s/xpulua", xdg);
	else if (home && *home)
		snprintf(out, n, "%s/.cache/xpulua", home);
	else
		return -1;
	for (char *p = out + 1; *p; p++) /* mkdir -p */
		if (*p == '/') {
			*p = 0;
			mkdir(out, 0755);
			*p = '/';
		}
	return mkdir(out, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

/* The driver checks the data's header (vendor, device, pipelineCacheUUID) and ignores data
 * of another driver; a cache it refuses outright is started empty. */
static int open_cache(struct vk_dev *vd)
{
	char dir[400], hex[2 * VK_UUID_SIZE + 1];
	size_t size = 0;
	void *data = NULL;
	for (unsigned i = 0; i < VK_UUID_SIZE; i++)
		snprintf(hex + 2 * i, 3, "%02x", vd->cache_uuid[i]);
	if (cache_dir(dir, sizeof dir) == 0) {
		snprintf(vd->cache_path, sizeof vd->cache_path, "%s/vulkan-pipelines-%s.bin", dir, hex);
		(void)xpu_read_file(vd->cache_path, 256u << 20, true, &data, &size); /* none or unreadable: empty */
	}
	VkPipelineCacheCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
					 .initialDataSize = size, .pInitialData = data };
	VkResult r = VKR(&vd->fn, vkCreatePipelineCache, vd->device, &ci, NULL, &vd->pcache);
	xpu_free(data);
	if (r == VK_SUCCESS) {
		xpu_fault_note("PipelineCache", 1);
		return 0;
	}
	ci.initialDataSize = 0;
	ci.pInitialData = NULL;
	return VK(&vd->fn, vkCreatePipelineCache, vd->device, &ci, NULL, &vd->pcache);
}

/* Written whole to a temporary file and renamed over the old one, so a reader (another
 * process) sees the old cache or the new one, never a torn one. Failures only lose time. */
static void save_cache(struct vk_dev *vd)
{
	size_t size = 0;
	void *data = NULL;
	if (!vd->cache_path[0] ||
	    vd->fn.vkGetPipelineCacheData(vd->device, vd->pcache, &size, NULL) != VK_SUCCESS || size == 0 ||
	    !(data = xpu_malloc(size)))
		return;
	char tmp[sizeof vd->cache_path + 32];
	snprintf(tmp, sizeof tmp, "%s.%ld.tmp", vd->cache_path, (long)getpid());
	FILE *f = NULL;
	if (vd->fn.vkGetPipelineCacheData(vd->device, vd->pcache, &size, data) == VK_SUCCESS &&
	    (f = fopen(tmp, "wb"))) {
		bool ok = fwrite(data, 1, size, f) == size;
		ok = fclose(f) == 0 && ok;
		if (!ok || rename(tmp, vd->cache_path) != 0)
			remove(tmp);
	}
	xpu_free(data);
}

/* ---- layouts and pipelines ----------------------------------------------------------------- */

/* The mat-vecs' modules ask for f16 denormals to be preserved (kernels/vulkan/matvec.glsl's
 * F16): OpCapability DenormPreserve and OpExecutionMode DenormPreserve 16. */
#define SPV_OP_EXECUTION_MODE 16u
#define SPV_OP_CAPABILITY 17u
#define SPV_DENORM_PRESERVE_MODE 4459u
#define SPV_DENORM_PRESERVE_CAP 4464u

/* Takes the DenormPreserve capability and execution mode out of the n words of a module, for
 * a device that cannot preserve f16 denormals (vd->f16_preserve): a module that asks for what
 * the device lacks is invalid there, and its mat-vecs then decode f16 by integer work
 * (F16 = 0). *n becomes the words kept. */
static int drop_denorm_preserve(uint32_t *code, size_t *n)
{
	size_t in = 5, out = 5; /* the header */
	while (in < *n) {
		uint32_t words = code[in] >> 16, op = code[in] & 0xffffu;
		if (words == 0 || words > *n - in)
			return xpu_fail("SPIR-V module: the instruction at word %zu runs past its end", in);
		bool drop = (op == SPV_OP_CAPABILITY && words == 2 && code[in + 1] == SPV_DENORM_PRESERVE_CAP) ||
			    (op == SPV_OP_EXECUTION_MODE && words >= 3 && code[in + 2] == SPV_DENORM_PRESERVE_MODE);
		if (!drop)
			memmove(code + out, code + in, 4 * (size_t)words), out += words;
		in += words;
	}
	*n = out;
	return 0;
}

/* A module from embedded SPIR-V, copied to words: the embedded bytes are only byte-aligned. */
static int make_module(struct vk_dev *vd, const unsigned char *spv, size_t size, VkShaderModule *mod)
{
	uint32_t *code = xpu_malloc(size);
	if (!code)
		return -1;
	memcpy(code, spv, size);
	size_t words = size / 4;
	int rc = !vd->f16_preserve && size >= 20 ? drop_denorm_preserve(code, &words) : 0;
	VkShaderModuleCreateInfo mi = { .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
					.codeSize = 4 * words, .pCode = code };
	if (rc == 0)
		rc = VK(&vd->fn, vkCreateShaderModule, vd->device, &mi, NULL, mod);
	xpu_free(code);
	return rc;
}

/* Module, descriptor set layout (one storage buffer per buffer argument) and pipeline
 * layout, made with the kernel's first pipeline; a subgroup module shares the layouts. After
 * a failure the next launch makes only what is still missing (nothing made is dropped). */
static int open_layouts(struct vk_dev *vd, struct vk_kern *kn)
{
	VkDescriptorSetLayoutBinding b[XPU_MAX_ARGS];
	int rc = kn->mod ? 0 : make_module(vd, kn->spv, kn->spv_size, &kn->mod);
	for (uint32_t i = 0; i < kn->nbuf; i++)
		b[i] = (VkDescriptorSetLayoutBinding){ .binding = i, .descriptorCount = 1,
						       .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
						       .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT };
	VkDescriptorSetLayoutCreateInfo di = { .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
					       .bindingCount = kn->nbuf, .pBindings = b };
	VkPushConstantRange push = { .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = kn->push_bytes };
	VkPipelineLayoutCreateInfo li = { .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
					  .setLayoutCount = 1, .pSetLayouts = &kn->dsl,
					  .pushConstantRangeCount = kn->push_bytes ? 1 : 0,
					  .pPushConstantRanges = &push };
	if (rc || (!kn->dsl && VK(&vd->fn, vkCreateDescriptorSetLayout, vd->device, &di, NULL, &kn->dsl)) ||
	    VK(&vd->fn, vkCreatePipelineLayout, vd->device, &li, NULL, &kn->layout))
		return -1;
	return 0;
}

/* Whether a mat-vec's pipeline for `block` is made from its subgroup module: the group must
 * be whole subgroups of the size vd->mv_subgroup (vulkan_probe.c, pick_matvec). */
static bool use_subgroup(const struct vk_dev *vd, const struct vk_kern *kn, const uint32_t block[3])
{
	return kn->spv_sg && vd->mv_subgroup && block[0] % vd->mv_subgroup == 0 && block[1] == 1 &&
	       block[2] == 1;
}

/* ---- the mat-vecs' tuning constants ---------------------------------------------------------
 * XPULUA_VULKAN_MATVEC_SPEC sets specialization constants 3..8 of the mat-vecs
 * (kernels/vulkan/matvec.glsl says what each does) when their pipelines are made, so a tuning
 * run compares settings without new modules: settings [PREFIX:]NAME=VALUE separated by spaces
 * or commas, a PREFIX limiting one to the kernels whose names begin with it, a later one
 * overriding an earlier; e.g. "U=2 q8_0:G=1 iq4_nl_q8k_wave_dot4:U=2". Unset, every
 * constant keeps the module's default (the shipped choice). A module without a constant (G
 * outside q8_0) ignores it, as Vulkan ignores map entries of ids a shader lacks. The driver's
 * pipeline cache keys on the values, so settings never mix. */
struct mv_knob {
	const char *name;
	uint32_t id, lo, hi;
};

enum { MV_U, MV_VEC, MV_G, MV_GUARD, MV_F16, MV_KNOBS };

static const struct mv_knob mv_knobs[MV_KNOBS] = {
	[MV_U] = { "U", 3, 1, 8 },         /* weight-load steps in flight per lane (matvec.glsl's MV_UMAX) */
	[MV_VEC] = { "VEC", 4, 0, 1 },     /* 16-byte loads where the layout allows */
	[MV_G] = { "G", 5, 1, 2 },         /* lanes per q8_0 block */
	[MV_GUARD] = { "GUARD", 7, 0, 1 }, /* reloads past the row skipped by a branch (1) or made (0) */
	/* f16 scales by the hardware's conversion (1) or integer work (0); unset, the device's
	 * choice (vd->f16_preserve) */
	[MV_F16] = { "F16", 8, 0, 1 },
};

/* The settings for `kernel`: set[i], val[i] per mv_knobs[i]; every setting is checked, also
 * those for other kernels, so a misspelt one fails the first mat-vec made. */
static int mv_tuning(const char *kernel, bool set[MV_KNOBS], uint32_t val[MV_KNOBS])
{
	const char *env = getenv("XPULUA_VULKAN_MATVEC_SPEC"), *p = env ? env : "";
	memset(set, 0, MV_KNOBS * sizeof *set);
	while (*(p += strspn(p, " ,"))) {
		char item[96], *name = item, *colon, *eq, *end;
		size_t len = strcspn(p, " ,");
		if (len >= sizeof item)
			return xpu_fail("XPULUA_VULKAN_MATVEC_SPEC: '%.*s' is too long", (int)len, p);
		memcpy(item, p, len);
		item[len] = 0;
		p += len;
		if ((colon = strchr(item, ':'))) {
			*colon = 0;
			name = colon + 1;
		}
		if (!(eq = strchr(name, '=')))
			return xpu_fail("XPULUA_VULKAN_MATVEC_SPEC: '%s' is not [PREFIX:]NAME=VALUE", name);
		*eq = 0;
		unsigned long v = strtoul(eq + 1, &end, 10);
		size_t i = 0;
		while (i < MV_KNOBS && strcmp(mv_knobs[i].name, name) != 0)
			i++;
		if (i == MV_KNOBS)
			return xpu_fail("XPULUA_VULKAN_MATVEC_SPEC: no setting '%s' (U, VEC, G, GUARD, F16)", name);
		if (end == eq + 1 || *end || v < mv_knobs[i].lo || v > mv_knobs[i].hi)
			return xpu_fail("XPULUA_VULKAN_MATVEC_SPEC: %s takes %u..%u, not '%s'", name, mv_knobs[i].lo,
					mv_knobs[i].hi, eq + 1);
		if (!colon || strncmp(kernel, item, strlen(item)) == 0) {
			set[i] = true;
			val[i] = (uint32_t)v;
		}
	}
	return 0;
}

/* The shared memory a mat-vec pipeline declares (matvec.glsl, as specialized): iq4_nl's
 * codebook (matvec_kv.glsl: a word per nibble, 64 with the packed dot) and the shared-memory
 * module's two exchange words an invocation. A driver need not refuse a pipeline past
 * maxComputeSharedMemorySize (lavapipe ran one of 34816 bytes against its 32768; the validation
 * layer reports VUID-RuntimeSpirv-Workgroup-06530), so such a block is refused here, by name. */
static uint32_t mv_shared_bytes(const struct vk_kern *kn, bool sg, const uint32_t block[3])
{
	const char *name = kn->k->def->name;
	uint32_t words = sg ? 0 : 2 * block[0] * block[1] * block[2];
	if (strncmp(name, "iq4_nl", 6) == 0)
		words += strstr(name, "_dot4") ? 64 : 16;
	return 4 * words;
}

/* The kernel's pipeline for `block` (specialization constants 0..2 are the workgroup size),
 * made and cached on first use. Called with vd->lock held. */
int xpu_vk_pipeline(struct vk_dev *vd, struct vk_kern *kn, const uint32_t block[3], VkPipeline *out)
{
	for (int i = 0; i < kn->npipes; i++)
		if (memcmp(kn->pipes[i].block, block, sizeof kn->pipes[i].block) == 0) {
			*out = kn->pipes[i].pipe;
			return 0;
		}
	if (kn->npipes == XPU_VK_PIPES)
		return xpu_fail("already %d block shapes made for this kernel; launch it with one of those",
				XPU_VK_PIPES);
	if (!kn->layout && open_layouts(vd, kn))
		return -1;
	bool sg = use_subgroup(vd, kn, block);
	if (sg && !kn->mod_sg && make_module(vd, kn->spv_sg, kn->spv_sg_size, &kn->mod_sg))
		return -1;
	VkPipelineShaderStageRequiredSubgroupSizeCreateInfo size = {
		.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO,
		.requiredSubgroupSize = vd->mv_subgroup };
	/* constants 0..2: the block; then the mat-vec tuning the environment sets */
	VkSpecializationMapEntry map[3 + MV_KNOBS];
	uint32_t data[3 + MV_KNOBS], n = 3, val[MV_KNOBS];
	bool set[MV_KNOBS] = { false };
	char tuning[sizeof kn->pipes[0].tuning] = "";
	if (kn->wave && mv_tuning(kn->k->def->name, set, val))
		return -1;
	uint32_t shared = kn->wave ? mv_shared_bytes(kn, sg, block) : 0;
	if (shared > vd->limits.maxComputeSharedMemorySize)
		return xpu_fail("%s at block %u needs %u bytes of shared memory a group; this device has "
				"%u (maxComputeSharedMemorySize)", kn->k->def->name, block[0], shared,
				vd->limits.maxComputeSharedMemorySize);
	if (kn->wave && set[MV_F16] && val[MV_F16] && !vd->f16_preserve)
		return xpu_fail("XPULUA_VULKAN_MATVEC_SPEC: F16=1 needs f16 denormals preserved "
				"(shaderDenormPreserveFloat16), which this device does not offer");
	for (uint32_t i = 0; i < 3; i++) {
		map[i] = (VkSpecializationMapEntry){ .constantID = i, .offset = 4 * i, .size = 4 };
		data[i] = block[i];
	}
	bool f16_hw = kn->wave && (set[MV_F16] ? val[MV_F16] != 0 : vd->f16_preserve);
	if (kn->wave && !set[MV_F16]) { /* the device's choice, not a tuning */
		map[n] = (VkSpecializationMapEntry){ .constantID = mv_knobs[MV_F16].id, .offset = 4 * n, .size = 4 };
		data[n++] = f16_hw;
	}
	for (size_t i = 0; i < MV_KNOBS; i++)
		if (set[i]) {
			size_t len = strlen(tuning);
			snprintf(tuning + len, sizeof tuning - len, "%s%s=%u", len ? " " : "", mv_knobs[i].name,
				 val[i]);
			map[n] = (VkSpecializationMapEntry){ .constantID = mv_knobs[i].id, .offset = 4 * n,
							     .size = 4 };
			data[n++] = val[i];
		}
	VkSpecializationInfo spec = { .mapEntryCount = n, .pMapEntries = map, .dataSize = 4 * n,
				      .pData = data };
	VkComputePipelineCreateInfo ci = {
		.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
		.flags = vd->exec_props ? VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR : 0,
		.stage = { .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
			   .pNext = sg && vd->mv_required ? &size : NULL,
			   .flags = sg && vd->mv_full ? VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT : 0,
			   .stage = VK_SHADER_STAGE_COMPUTE_BIT, .module = sg ? kn->mod_sg : kn->mod,
			   .pName = "main", .pSpecializationInfo = &spec },
		.layout = kn->layout,
	};
	struct vk_pipe *p = &kn->pipes[kn->npipes];
	xpu_vk_debug_note(sg ? "pipeline (subgroup module)" : "pipeline", kn->k->def->name, block);
	if (VK(&vd->fn, vkCreateComputePipelines, vd->device, vd->pcache, 1, &ci, NULL, &p->pipe))
		return -1;
	memcpy(p->block, block, sizeof p->block);
	p->subgroup = sg;
	p->f16_hw = f16_hw;
	memcpy(p->tuning, tuning, sizeof p->tuning);
	kn->npipes++;
	save_cache(vd);
	*out = p->pipe;
	return 0;
}

/* ---- the device's kernels ------------------------------------------------------------------ */

/* ---- modules from a directory -----------------------------------------------------------
 * XPULUA_VULKAN_SPV=DIR: a kernel's module is read from DIR/vk_<kernel>.spv (a mat-vec's second
 * one from DIR/vk_<kernel>.subgroup.spv) where that file exists, instead of the embedded one,
 * so a shader can be changed and timed without a new binary (glslc with the flags of
 * kernels/vulkan/vulkan.mk). Only kernels built in are replaced; xpu.kernel_hash says an
 * override is set, so the Autotune store keeps such results apart. */

int xpu_vk_override_dir_check(char *buf, size_t n)
{
	const char *dir = getenv("XPULUA_VULKAN_SPV");
	struct stat st;
	if (!dir || !*dir)
		return 0;
	int rc = stat(dir, &st);
	if (rc == 0 && S_ISDIR(st.st_mode))
		return 0;
	snprintf(buf, n, "XPULUA_VULKAN_SPV=%s: %s; it must name the directory of vk_<kernel>.spv modules "
		 "that replace the built ones (unset it to run those)", dir, rc == 0 ? "not a directory" : strerror(errno));
	return -1;
}

/* *data, *size from DIR/vk_<name>.spv; 0 with *data NULL where there is no such file. */
static int read_override(const char *name, unsigned char **data, size_t *size)
{
	const char *dir = getenv("XPULUA_VULKAN_SPV");
	char path[4096];
	void *buf;
	size_t n;
	*data = NULL;
	if (!dir || !*dir)
		return 0;
	if (snprintf(path, sizeof path, "%s/vk_%s.spv", dir, name) >= (int)sizeof path)
		return xpu_fail("XPULUA_VULKAN_SPV: the path of %s's module is too long", name);
	int rc = xpu_read_file(path, 64u << 20, true, &buf, &n);
	if (rc)
		return rc > 0 ? 0 : -1; /* no file: the built module */
	if (n < 20 || n % 4 || spv_word(buf) != SPIRV_MAGIC) {
		xpu_free(buf);
		return xpu_fail(n < 20 || n % 4 ? "%s: not a SPIR-V module (%zu bytes; a module is whole 4-byte words, 20 or more)"
					: "%s: not a SPIR-V module (%zu bytes, no SPIR-V magic)", path, n);
	}
	fprintf(stderr, "vulkan: %s's module from %s\n", name, path);
	*data = buf;
	*size = n;
	return 0;
}

/* *spv, *size from DIR/vk_<name>.spv where the file is (its bytes owned by *file). */
static int take_override(const char *name, unsigned char **file, const unsigned char **spv, size_t *size)
{
	size_t n;
	if (read_override(name, file, &n))
		return -1;
	if (*file) {
		*spv = *file;
		*size = n;
	}
	return 0;
}

/* The kernel's modules from XPULUA_VULKAN_SPV where there are files for them. */
static int take_overrides(struct vk_kern *kn)
{
	char sg_name[96];
	snprintf(sg_name, sizeof sg_name, "%s.subgroup", kn->k->def->name);
	if (take_override(kn->k->def->name, &kn->spv_file, &kn->spv, &kn->spv_size))
		return -1;
	return kn->spv_sg ? take_override(sg_name, &kn->spv_sg_file, &kn->spv_sg, &kn->spv_sg_size) : 0;
}

/* An entry for every kernel whose SPIR-V is embedded and runs here; the others stay NULL
 * ("not built for vulkan:N"): a packed-dot kernel on a device without the feature. A
 * mat-vec takes its subgroup module too where the device runs one. */
int xpu_vk_kernels_open(struct xpu_device *d, struct vk_dev *vd, bool dot4)
{
	int n = xpu_kernel_count();
	if (!(vd->kerns = xpu_calloc((size_t)n, sizeof *vd->kerns)))
		return -1;
	for (int i = 0; i < n && i < XPU_MAX_KERNELS; i++) {
		struct vk_kern *kn = &vd->kerns[i];
		const struct xpu_kernel *k = xpu_kernel_at(i);
		const struct xpu_vk_embedded *e = spv_of(k->def->name);
		if (!e || (needs_dot(e) && !dot4))
			continue;
		kn->k = k;
		kn->spv = e->data;
		kn->spv_size = e->size;
		kn->wave = k->def->format != NULL; /* the decode mat-vecs: 32-lane waves, 1-D blocks */
		char sg_name[96];
		snprintf(sg_name, sizeof sg_name, "%s.subgroup", k->def->name);
		const struct xpu_vk_embedded *sg = kn->wave && vd->mv_subgroup ? spv_of(sg_name) : NULL;
		if (sg) {
			kn->spv_sg = sg->data;
			kn->spv_sg_size = sg->size;
		}
		if (take_overrides(kn))
			return -1;
		place_args(kn);
		if (kn->push_bytes > XPU_VK_PUSH || kn->push_bytes > vd->limits.maxPushConstantsSize)
			return xpu_fail("kernel '%s' needs %u bytes of push constants", k->def->name,
					kn->push_bytes);
		d->entries[i] = kn;
	}
	return open_cache(vd);
}

void xpu_vk_kernels_close(struct vk_dev *vd)
{
	for (int i = 0; vd->kerns && i < xpu_kernel_count(); i++) {
		struct vk_kern *kn = &vd->kerns[i];
		for (int p = 0; p < kn->npipes; p++)
			VKD(&vd->fn, vkDestroyPipeline, vd->device, kn->pipes[p].pipe);
		if (kn->layout)
			VKD(&vd->fn, vkDestroyPipelineLayout, vd->device, kn->layout);
		if (kn->dsl)
			VKD(&vd->fn, vkDestroyDescriptorSetLayout, vd->device, kn->dsl);
		if (kn->mod)
			VKD(&vd->fn, vkDestroyShaderModule, vd->device, kn->mod);
		if (kn->mod_sg)
			VKD(&vd->fn, vkDestroyShaderModule, vd->device, kn->mod_sg);
		xpu_free(kn->spv_file);
		xpu_free(kn->spv_sg_file);
	}
	if (vd->pcache) {
		save_cache(vd);
		VKD(&vd->fn, vkDestroyPipelineCache, vd->device, vd->pcache);
	}
	xpu_free(vd->kerns);
	vd->kerns = NULL;
}

/* ---- the manifest ---------------------------------------------------------------------------- */

static int64_t stat_value(const VkPipelineExecutableStatisticKHR *s)
{
	switch (s->format) {
	case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: return s->value.b32;
	case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: return s->value.i64;
	case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: return (int64_t)s->value.u64;
	default: return (int64_t)s->value.f64;
	}
}

/* The manifest field a driver statistic answers, by the names drivers use (RADV "VGPRs",
 * "Scratch size", "LDS size"; NVIDIA "Register Count"; ANV "Scratch Memory Size"), or NULL. */
static int32_t *stat_field(struct xpu_manifest *m, const char *name)
{
	bool spill = strcasestr(name, "spill") || strcasestr(name, "scratch") ||
		     strcasestr(name, "local memory");
	bool size = strcasestr(name, "size") || strcasestr(name, "bytes");
	if (spill)
		return size ? &m->spill_bytes : NULL;
	if (strcasestr(name, "vgpr") || strcasestr(name, "register"))
		return &m->registers;
	bool lds = strcasestr(name, "lds") || strcasestr(name, "shared") ||
		   strcasestr(name, "workgroup memory");
	if (lds && size)
		return &m->lds_static_bytes;
	return NULL;
}

/* Statistics of the pipeline's first executable (a compute pipeline has one). */
static int read_stats(struct vk_dev *vd, VkPipeline pipe, struct xpu_manifest *m)
{
	VkPipelineExecutableStatisticKHR st[48];
	uint32_t n = 48, used = 0;
	VkPipelineExecutableInfoKHR ei = { .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR,
					   .pipeline = pipe, .executableIndex = 0 };
	for (uint32_t i = 0; i < n; i++)
		st[i] = (VkPipelineExecutableStatisticKHR){
			.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR };
	VkResult r = vd->fn.vkGetPipelineExecutableStatisticsKHR(vd->device, &ei, &n, st);
	if (r != VK_INCOMPLETE && xpu_vk_check(r, "vkGetPipelineExecutableStatisticsKHR", __FILE__, __LINE__))
		return -1;
	strcpy(m->note, "driver:");
	for (uint32_t i = 0; i < n; i++) {
		int32_t *f = stat_field(m, st[i].name);
		if (!f || *f >= 0) /* the first statistic that answers a field is its answer */
			continue;
		*f = (int32_t)stat_value(&st[i]);
		size_t len = strlen(m->note);
		snprintf(m->note + len, sizeof m->note - len, " %s=%d", st[i].name, *f);
		used++;
	}
	if (!used)
		snprintf(m->note, sizeof m->note, "driver: %u statistics, none of registers or spill", n);
	return 0;
}

/* A mat-vec's note begins with the module its pipeline was made from: "subgroup N" (lanes
 * trade values by shuffles in subgroups of N) or "shared memory"; then how it turns f16
 * scales into f32 ("f16 hw": the hardware's conversion, or "f16 int": integer work); then
 * the tuning constants the environment set, if any ("tuning U=2 G=1"). */
static void wave_note(const struct vk_dev *vd, const struct vk_pipe *p, struct xpu_manifest *m)
{
	char all[sizeof m->note + sizeof p->tuning + 64], mod[24];
	if (p->subgroup)
		snprintf(mod, sizeof mod, "subgroup %u", vd->mv_subgroup);
	else
		snprintf(mod, sizeof mod, "shared memory");
	snprintf(all, sizeof all, "%s; f16 %s; %s%s%s", mod, p->f16_hw ? "hw" : "int",
		 p->tuning[0] ? "tuning " : "", p->tuning, p->tuning[0] ? "; " : "");
	snprintf(all + strlen(all), sizeof all - strlen(all), "%s", m->note);
	memcpy(m->note, all, sizeof m->note - 1); /* the driver's part may lose its tail */
	m->note[sizeof m->note - 1] = 0;
}

/* What the driver reports of the kernel's pipeline (the last one made, or one made now for
 * the table's block, 256 where it says any); what it does not report stays unknown. */
int xpu_vk_manifest(struct xpu_device *d, struct xpu_kernel *k, struct xpu_manifest *m)
{
	struct vk_dev *vd = vk_dev_of(d);
	struct vk_kern *kn = d->entries[k->id];
	uint32_t block[3] = { k->def->block ? k->def->block : 256, 1, 1 };
	VkPipeline pipe;
	int rc = 0;
	pthread_mutex_lock(&vd->lock);
	if (!kn->npipes)
		rc = xpu_vk_pipeline(vd, kn, block, &pipe);
	if (kn->npipes)
		pipe = kn->pipes[kn->npipes - 1].pipe;
	m->max_threads = (int32_t)(kn->wave ? XPU_VK_WAVE_BLOCK_MAX
					     : vd->limits.maxComputeWorkGroupInvocations);
	if (rc == 0 && vd->exec_props && vd->fn.vkGetPipelineExecutableStatisticsKHR)
		rc = read_stats(vd, pipe, m);
	else if (rc == 0)
		snprintf(m->note, sizeof m->note, "driver has no VK_KHR_pipeline_executable_properties");
	if (rc == 0 && kn->wave)
		wave_note(vd, &kn->pipes[kn->npipes - 1], m);
	pthread_mutex_unlock(&vd->lock);
	return rc;
}
