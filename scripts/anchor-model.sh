#!/bin/sh
# usage: sh scripts/anchor-model.sh build LLAMA_SRC_DIR BUILD_DIR [cuda|cpu] [CUDA_ARCH] | run LLAMA_BENCH MODEL.gguf [ARGS...]
# anchor-model.sh — the whole-model anchor: llama.cpp's llama-bench on a GGUF (one of
# scripts/make-model.lua's, or a download), prompt 512 and generation 128 tokens, 3 reps,
# flash attention on, one JSON line per test on stdout (llama-bench's own -o jsonl records).
#   scripts/anchor-model.sh build LLAMA_SRC_DIR BUILD_DIR [cuda|cpu] [CUDA_ARCH]
#       cmake + build of llama-bench only (cuda: -DGGML_CUDA=ON, arch default 90; ~5 min at -j16)
#   scripts/anchor-model.sh run LLAMA_BENCH MODEL.gguf [ARGS...]
#       llama-bench -m MODEL -p 512 -n 128 -r 3 -fa 1 -ngl 99 -o jsonl ARGS (e.g. -t 16)
# Logs go to stderr; stdout holds only llama-bench's JSON lines.
set -eu
usage() { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; }
case "${1:-}" in
-h|--help) usage; exit 0;;
build)
	[ $# -ge 3 ] || { usage >&2; exit 2; }
	src=$2 out=$3 kind=${4:-cuda} arch=${5:-90}
	[ -f "$src/tools/llama-bench/llama-bench.cpp" ] ||
		{ echo "anchor-model.sh: $src: not a llama.cpp source tree (no tools/llama-bench)" >&2; exit 2; }
	case "$kind" in
	cuda) backend="-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=$arch";;
	cpu) backend="-DGGML_CUDA=OFF";;
	*) echo "anchor-model.sh: backend '$kind': not cuda or cpu" >&2; exit 2;;
	esac
	echo "anchor-model.sh: configuring $out ($kind)" >&2
	# shellcheck disable=SC2086 # $backend is two words on purpose
	PATH=$PATH:/usr/local/cuda/bin cmake -S "$src" -B "$out" $backend -DCMAKE_BUILD_TYPE=Release \
		-DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
		-DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_BUILD_HTML=OFF >&2
	echo "anchor-model.sh: building llama-bench" >&2
	PATH=$PATH:/usr/local/cuda/bin cmake --build "$out" -j "$(nproc)" --target llama-bench >&2
	ls -la "$out/bin/llama-bench" >&2;;
run)
	[ $# -ge 3 ] || { usage >&2; exit 2; }
	bench=$2 model=$3
	shift 3
	[ -x "$bench" ] || { echo "anchor-model.sh: $bench: not an executable llama-bench" >&2; exit 2; }
	[ -f "$model" ] || { echo "anchor-model.sh: $model: no such model file" >&2; exit 2; }
	echo "anchor-model.sh: $bench -m $model -p 512 -n 128 -r 3 -fa 1 -ngl 99 -o jsonl $*" >&2
	"$bench" -m "$model" -p 512 -n 128 -r 3 -fa 1 -ngl 99 -o jsonl "$@";;
*) usage >&2; exit 2;;
esac
