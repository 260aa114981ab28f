# kernels/vulkan/vulkan.mk — every kernels/vulkan/<kernel>.comp compiled by glslc into SPIR-V,
# build/vulkan/vk_<kernel>.spv (one compute shader per kernel, named by its file), embedded as
# "vk_<kernel>.spv". The .glsl files are their shared includes. Without glslc nothing is built
# and the Vulkan backend reports "built without Vulkan kernels".
# Included by the Makefile before its first rule, so the default goal is named here.
.DEFAULT_GOAL := all

GLSLC ?= $(shell command -v glslc 2>/dev/null)
VK_COMP := $(sort $(wildcard kernels/vulkan/*.comp))
# The decode mat-vecs, eight per served format (src/quant/format_list.h's rows, read here by
# name, TYPE and block sizes): <fmt>_q8k_{wave,id,tail,tail_norm}[_dot4] (tail: the MoE down
# bank and moe_combine in one launch; tail_norm: and the next norm's pack), and the prefill
# GEMMs, four more:
# <fmt>_q8k_gemm[_id]_t{64,128} (GEMM, GEMM_TILE, GEMM_ID: matvec_gemm.glsl), each
# matvec.glsl under FMT_<TYPE>, the row's sizes and the kind's defines, written to
# build/vulkan/gen/ rather than kept as fifty near-copies.
VK_FORMAT_LIST := src/quant/format_list.h
# (braces: the sed script's parentheses would end a $(shell ...))
VK_FORMATS := ${shell sed -n 's/^X(\([A-Za-z0-9_]*\), *\([A-Z0-9_]*\),.*/\1:\2/p' $(VK_FORMAT_LIST)}
VK_MV_KINDS := wave id tail tail_norm wave_dot4 id_dot4 tail_dot4 tail_norm_dot4 gemm_t64 gemm_t128 gemm_id_t64 gemm_id_t128
VK_GEN_COMP := $(foreach f,$(VK_FORMATS),$(foreach k,$(VK_MV_KINDS),$(B)/vulkan/gen/$(firstword $(subst :, ,$(f)))_q8k_$(k).comp))
VK_GLSL := $(wildcard kernels/vulkan/*.glsl kernels/*.h)
# vulkan1.2: SPIR-V 1.5. The kernels mark their float results `precise` (NoContraction):
# docs/ARITHMETIC.md allows no fused multiply-add where the source has two operations.
GLSLC_FLAGS ?= -O
VK_FLAGS := --target-env=vulkan1.2 -fshader-stage=compute -Ikernels/vulkan $(GLSLC_FLAGS)

# The mat-vecs (*_q8k_*) and the float shape ops (VK_NC_SHAPE) are checked where spirv-dis is
# found (package spirv-tools, which `make setup` installs): every
# OpFMul / OpFAdd / OpFSub / OpFNegate decorated NoContraction, and no GLSL.std.450 Fma.
# glslc -O's loop unroller drops the decoration from the copies of an [[unroll]] body and
# then folds the bare multiply-add into an Fma, which the source never shows: keep float
# arithmetic out of [[unroll]] loops.
VK_NC_SHAPE := cumsum cumsum_vec4 pad_backward pad_backward_rows
VK_NC_SHAPE += rms_norm add_rms_norm rms_norm_q8k add_rms_norm_q8k add_rms_norm_q8k_f32 layer_norm softmax norm_steps
VK_NC_SHAPE += attention_decode attention_decode_hd64 attention_decode_hd128 attention_combine
VK_NC_SHAPE += attention_decode_pos attention_decode_pos_hd64 attention_decode_pos_hd128 attention_combine_pos
VK_NC_SHAPE += attention_prefill attention_prefill_hd64 attention_prefill_hd128
VK_NC_SHAPE += matvec_f32 moe_combine
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
VK_MV := $(VK_GEN_COMP)

# `make GLSLC=` builds without these kernels on purpose; otherwise glslc on PATH must have built them.
ifneq ($(origin GLSLC),command line)
EMBED_CHECKS += glslc:vk_
endif

ifneq ($(strip $(GLSLC)),)
ifneq ($(VK_COMP),)
VK_MV_STEMS := $(notdir $(VK_MV:.comp=))
VK_SPV := $(VK_COMP:kernels/vulkan/%.comp=$(B)/vulkan/vk_%.spv) \
	  $(VK_GEN_COMP:$(B)/vulkan/gen/%.comp=$(B)/vulkan/vk_%.spv) \
	  $(VK_MV_STEMS:%=$(B)/vulkan/vk_%.subgroup.spv)
EMBED_CODE += $(VK_SPV)

# <fmt>_q8k_<kind>.comp: from the format's row of format_list.h its FMT_<TYPE> and its block
# sizes (ELEMS = block_elems, SCALE = scale_bytes, PAYW = payload_bytes / 4; a payload that is
# not whole words is refused); ID for the grouped kinds; TAIL for the MoE tails (and TAIL_NORM); DOT4 (and the
# SPIR-V intrinsics it is written with) for the packed-dot kinds.
VK_ROW_SED = s/^X($$fmt, *\([A-Z0-9_]*\), *\([0-9]*\), *[0-9]*, *\([0-9]*\), *[0-9]*, *\([0-9]*\),.*/\1 \2 \3 \4/p
$(VK_GEN_COMP): $(B)/vulkan/gen/%.comp: $(VK_FORMAT_LIST) kernels/vulkan/vulkan.mk
	@mkdir -p $(dir $@)
	@fmt='$(firstword $(subst _q8k_, ,$*))'; kind='$(word 2,$(subst _q8k_, ,$*))'; \
	set -- $$(sed -n "$(VK_ROW_SED)" $(VK_FORMAT_LIST)); \
	[ $$# -eq 4 ] || { echo "$(VK_FORMAT_LIST): no row X($$fmt, TYPE, block_elems, ...) of one line" >&2; exit 1; }; \
	[ $$(($$4 % 4)) -eq 0 ] || { echo "$(VK_FORMAT_LIST): $$fmt: payload_bytes $$4 is not whole words;" \
	  "the Vulkan mat-vec reads payloads as words" >&2; exit 1; }; \
	{ printf '#version 450\n#extension GL_GOOGLE_include_directive : require\n'; \
	  case $$kind in *dot4) printf '#extension GL_EXT_spirv_intrinsics : require\n';; esac; \
	  printf '/* %s — generated by kernels/vulkan/vulkan.mk from src/quant/format_list.h */\n' '$*'; \
	  printf '#define FMT_%s\n' "$$1"; \
	  printf '#define ELEMS %uu\n#define SCALE %uu\n#define PAYW %uu\n' "$$2" "$$3" $$(($$4 / 4)); \
	  case $$kind in id*) printf '#define ID\n';; esac; \
	  case $$kind in tail*) printf '#define TAIL\n';; esac; \
	  case $$kind in tail_norm*) printf '#define TAIL_NORM\n';; esac; \
	  case $$kind in gemm*) printf '#define GEMM\n#define GEMM_TILE %uu\n' "$${kind##*_t}";; esac; \
	  case $$kind in gemm_id*) printf '#define GEMM_ID\n';; esac; \
	  case $$kind in *dot4) printf '#define DOT4\n';; esac; \
	  printf '#include "matvec.glsl"\n'; } > $@.tmp && mv $@.tmp $@

define VK_RULES
$(B)/vulkan/vk_%.spv: $(1)/%.comp $(VK_GLSL) kernels/vulkan/vulkan.mk
	@mkdir -p $$(dir $$@)
	$$(GLSLC) $$(VK_FLAGS) $$< -o $$@
	$$(if $$(and $$(strip $$(SPIRV_DIS)),$$(or $$(findstring _q8k_,$$*),$$(filter $$(VK_NC_SHAPE),$$*))),@$$(VK_NC_CHECK))

$(B)/vulkan/vk_%.subgroup.spv: $(1)/%.comp $(VK_GLSL) kernels/vulkan/vulkan.mk
	@mkdir -p $$(dir $$@)
	$$(GLSLC) $$(VK_FLAGS) -DMV_SUBGROUP $$< -o $$@
	$$(if $$(strip $$(SPIRV_DIS)),@$$(VK_NC_CHECK))
endef
$(eval $(call VK_RULES,kernels/vulkan))
$(eval $(call VK_RULES,$(B)/vulkan/gen))
endif
endif
