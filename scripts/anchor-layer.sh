#!/bin/sh
# usage: sh scripts/anchor-layer.sh build GGML_SRC_DIR BUILD_DIR [CUDA_ARCH] | run TEST_BACKEND_OPS [BACKEND]
# anchor-layer.sh — the anchor for scripts/bench-layer.lua and scripts/bench-attention.lua: ggml's
# test-backend-ops in perf mode at their own shapes (the decode and prefill cases of xpu.layers.*), on the same
# GPU and in the same run as ours. test-backend-ops' perf list holds other shapes, so this
# script adds ours to a copy of its source (lines that call its own test-case constructors,
# enabled by XPU_LAYER_CASES=1, which then runs only them), builds it for CUDA and prints its
# lines for RMS_NORM, NORM, SOFT_MAX, ROPE, SWIGLU, GEGLU, ADD, MUL, GET_ROWS, ARGMAX and TOP_K.
#   scripts/anchor-layer.sh build GGML_SRC_DIR BUILD_DIR [CUDA_ARCH]   (cmake + nvcc; ~5 min at -j16)
#   scripts/anchor-layer.sh run TEST_BACKEND_OPS [BACKEND]             (default CUDA0)
#   OPS="FLASH_ATTN_EXT MUL_MAT MUL_MAT_ID" scripts/anchor-layer.sh run ...  (anchor-prefill.cases)
set -eu
usage() { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; }
case "${1:-}" in
-h|--help) usage; exit 0;;
build)
	[ $# -ge 3 ] || { usage >&2; exit 2; }
	src=$2 out=$3 arch=${4:-90}
	f=$src/tests/test-backend-ops.cpp
	[ -f "$f" ] || { echo "anchor-layer.sh: $f: not a ggml source tree" >&2; exit 2; }
	grep -q XPU_LAYER_CASES "$f" || awk '
		/^static std::vector<std::unique_ptr<test_case>> make_test_cases_perf\(\) \{/ { inperf = 1 }
		{ print }
		inperf && /std::vector<std::unique_ptr<test_case>> test_cases;/ {
			inperf = 0
			print "    if (getenv(\"XPU_LAYER_CASES\")) {"
			n = split(CASES, files, " ")
			for (f = 1; f <= n; f++) while ((getline line < files[f]) > 0) print "        " line
			print "        return test_cases;"
			print "    }"
		}' CASES="$(dirname "$0")/anchor-layer.cases $(dirname "$0")/anchor-prefill.cases" "$f" > "$f.new" && mv "$f.new" "$f"
	grep -q XPU_LAYER_CASES "$f" || { echo "anchor-layer.sh: could not add the cases to $f" >&2; exit 1; }
	PATH=$PATH:/usr/local/cuda/bin cmake -S "$src" -B "$out" -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" \
		-DBUILD_SHARED_LIBS=OFF -DGGML_BUILD_TESTS=ON -DGGML_BUILD_EXAMPLES=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null
	PATH=$PATH:/usr/local/cuda/bin cmake --build "$out" -j "$(nproc)" --target test-backend-ops >/dev/null
	ls -la "$out/bin/test-backend-ops";;
run)
	[ $# -ge 2 ] || { usage >&2; exit 2; }
	for op in ${OPS:-RMS_NORM NORM SOFT_MAX ROPE SWIGLU GEGLU ADD MUL GET_ROWS ARGMAX TOP_K}; do
		XPU_LAYER_CASES=1 "$2" perf -b "${3:-CUDA0}" -o "$op" 2>&1 | grep -E "us/run" || true
	done;;
*) usage >&2; exit 2;;
esac
