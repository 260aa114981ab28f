# kernels/vulkan/vulkan.mk — every kernels/vulkan/<kernel>.comp compiled by glslc into SPIR-V,
# build/vulkan/vk_<kernel>.spv (one compute shader per kernel, named by its file), embedded as
# "vk_<kernel>.spv". The .glsl files are their shared includes. Without glslc nothing is built
# and the Vulkan backend reports "built without Vulkan kernels".
# Included by the Makefile before its first rule, so the default goal is named here.
.DEFAULT_GOAL := all

GLSLC ?= $(shell command -v glslc 2>/dev/null)
VK_COMP := $(sort $(wildcard kernels/vulkan/*.comp))
VK_GLSL := $(wildcard kernels/vulkan/*.glsl) kernels/shape_grain.h
# vulkan1.2: SPIR-V 1.5. The kernels mark their float results `precise` (NoContraction):
# docs/ARITHMETIC.md allows no fused multiply-add where the source has two operations.
GLSLC_FLAGS ?= -O
VK_FLAGS := --target-env=vulkan1.2 -fshader-stage=compute -Ikernels/vulkan $(GLSLC_FLAGS)

# The mat-vecs (*_q8k_*) and the float shape ops (VK_NC_SHAPE) are checked where spirv-dis is
# found (package spirv-tools): every
# OpFMul / OpFAdd / OpFSub / OpFNegate decorated NoContraction, and no GLSL.std.450 Fma.
# glslc -O's loop unroller drops the decoration from the copies of an [[unroll]] body and
# then folds the bare multiply-add into an Fma, which the source never shows: keep float
# arithmetic out of [[unroll]] loops.
VK_NC_SHAPE := cumsum cumsum_vec4 pad_backward pad_backward_rows
SPIRV_DIS ?= $(shell command -v spirv-dis 2>/dev/null)
VK_NC_CHECK = $(SPIRV_DIS) --raw-id $@ | awk '/OpDecorate .* NoContraction/ { nc[$$2] = 1 } \
	/ = Op(FMul|FAdd|FSub|FNegate) / { op[$$1] = 1 } / = OpExtInst .* Fma / { fma++ } \
	END { for (i in op) if (!(i in nc)) bare++; \
	      if (bare || fma) { print "$@: " bare+0 " float ops without NoContraction, " fma+0 " Fma"; exit 1 } }' \
	|| { rm -f $@; exit 1; }

# Each mat-vec is built twice (matvec.glsl says why): vk_<kernel>.spv trades lanes' values
# through shared memory, for any subgroup size; vk_<kernel>.subgroup.spv (-DMV_SUBGROUP) by
# subgroup shuffles, where subgroups are 32 lanes or a multiple. vulkan_pipe.c picks one per
# pipeline.
VK_MV := $(foreach f,$(VK_COMP),$(if $(findstring _q8k_,$(f)),$(f)))

# `make GLSLC=` builds without these kernels on purpose; otherwise glslc on PATH must have built them.
ifneq ($(origin GLSLC),command line)
EMBED_CHECKS += glslc:vk_
endif

ifneq ($(strip $(GLSLC)),)
ifneq ($(VK_COMP),)
VK_SPV := $(VK_COMP:kernels/vulkan/%.comp=$(B)/vulkan/vk_%.spv) \
	  $(VK_MV:kernels/vulkan/%.comp=$(B)/vulkan/vk_%.subgroup.spv)
EMBED_CODE += $(VK_SPV)

$(B)/vulkan/vk_%.spv: kernels/vulkan/%.comp $(VK_GLSL) kernels/vulkan/vulkan.mk
	@mkdir -p $(dir $@)
	$(GLSLC) $(VK_FLAGS) $< -o $@
	$(if $(and $(strip $(SPIRV_DIS)),$(or $(findstring _q8k_,$*),$(filter $(VK_NC_SHAPE),$*))),@$(VK_NC_CHECK))

$(B)/vulkan/vk_%.subgroup.spv: kernels/vulkan/%.comp $(VK_GLSL) kernels/vulkan/vulkan.mk
	@mkdir -p $(dir $@)
	$(GLSLC) $(VK_FLAGS) -DMV_SUBGROUP $< -o $@
	$(if $(strip $(SPIRV_DIS)),@$(VK_NC_CHECK))
endif
endif
