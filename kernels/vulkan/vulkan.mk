# kernels/vulkan/vulkan.mk — every kernels/vulkan/<kernel>.comp compiled by glslc into SPIR-V,
# build/vulkan/vk_<kernel>.spv (one compute shader per kernel, named by its file), embedded as
# "vk_<kernel>.spv". The .glsl files are their shared includes. Without glslc nothing is built
# and the Vulkan backend reports "built without Vulkan kernels".
# Included by the Makefile before its first rule, so the default goal is named here.
.DEFAULT_GOAL := all

GLSLC ?= $(shell command -v glslc 2>/dev/null)
VK_COMP := $(sort $(wildcard kernels/vulkan/*.comp))
VK_GLSL := $(wildcard kernels/vulkan/*.glsl)
# vulkan1.2: SPIR-V 1.5. The kernels mark their float results `precise` (NoContraction):
# docs/ARITHMETIC.md allows no fused multiply-add where the source has two operations.
GLSLC_FLAGS ?= -O
VK_FLAGS := --target-env=vulkan1.2 -fshader-stage=compute -Ikernels/vulkan $(GLSLC_FLAGS)

ifneq ($(strip $(GLSLC)),)
ifneq ($(VK_COMP),)
VK_SPV := $(VK_COMP:kernels/vulkan/%.comp=$(B)/vulkan/vk_%.spv)
EMBED_CODE += $(VK_SPV)

$(B)/vulkan/vk_%.spv: kernels/vulkan/%.comp $(VK_GLSL) kernels/vulkan/vulkan.mk
	@mkdir -p $(dir $@)
	$(GLSLC) $(VK_FLAGS) $< -o $@
endif
endif
