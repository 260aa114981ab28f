#!/bin/sh
# vk-sweep.sh — the Vulkan decode mat-vecs on vulkan:0 under the tuning settings worth
# comparing (XPULUA_VULKAN_MATVEC_SPEC, src/backend/vulkan/vulkan_pipe.c; what each constant does:
# kernels/vulkan/matvec.glsl), one bench-matvec-kernel process per setting, each kernel bit-
# gated against the CPU before it is timed (a failed gate shows as FAIL). Prints per shape a
# table of median us per launch (deferred batches, weights rotated past L2): kernels down,
# settings across, CUDA's kernel of the same format in the last column; then the registers
# the driver reports. Raw lines: $OUT/sweep.tsv. About 1-2 minutes.
# The environment is scripts/device-run.sh's; needs build/static/xpulua (make static), .dev/
# and .gl/ carried. N=15 timed batches per shape by default; SHAPES overrides the two shapes.
case "${1:-}" in -h|--help)
	echo 'usage: [N=15] [SHAPES="RxC ..."] sh scripts/vk-sweep.sh'
	sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
esac
set -u
. "$(dirname "$0")/device-env.sh"

N=${N:-15}
SHAPES=${SHAPES:-"14336x4096 4096x14336"}
TSV=$OUT/sweep.tsv
: > "$TSV"
shape_args=""
for s in $SHAPES; do shape_args="$shape_args --shape $s"; done

ks() { # ks SUFFIX FMT...: --kernel <fmt>_q8k_wave<suffix> for each
	suffix=$1; shift
	for f in "$@"; do printf ' --kernel %s_q8k_wave%s' "$f" "$suffix"; done
}
# every served format, as the binary lists them (xpu.formats())
ALL=$("$X" -e 'for _, f in ipairs(require"xpu".formats()) do print(f.name) end') || exit 1
DOT4=$(ks _dot4 $ALL)
PLAIN=$(ks "" $ALL)

# run LABEL MODULE SPEC KERNEL-ARGS: one process; its TSV lines prefixed with LABEL
run() {
	label=$1 module=$2 spec=$3; shift 3
	t0=$(date +%s)
	XPULUA_VULKAN_MATVEC=$module XPULUA_VULKAN_MATVEC_SPEC=$spec timeout 90 \
		"$X" scripts/bench-matvec-kernel.lua --device vulkan:0 --n "$N" --distinct 64 --tsv $shape_args "$@" \
		2> "$OUT/sweep-$label.err" | sed "s/^/$label	/" >> "$TSV"
	printf '%-8s %4ss  %s%s\n' "$label" "$(( $(date +%s) - t0 ))" "${spec:-defaults}" "${module:+ ($module module)}"
	grep -v '^$' "$OUT/sweep-$label.err" | head -3
}

echo "=== devices"
nvidia-smi -L 2>/dev/null
"$X" -e 'print(require"xpu".devices())'
echo "=== runs (label, seconds, settings)"
run base   ""     ""                   $DOT4 $PLAIN
run guard1 ""     "GUARD=1"            $DOT4 $PLAIN
run vec0   ""     "VEC=0"              $(ks _dot4 q4_0 q8_0 iq4_nl)
run U1     ""     "U=1"                $DOT4
run U2     ""     "U=2"                $DOT4
run U3     ""     "U=3"                $DOT4
run U6     ""     "U=6"                $DOT4
run U8     ""     "U=8"                $(ks _dot4 q4_0 q8_0 iq4_nl)
run q8G1   ""     "q8_0:G=1"           $(ks _dot4 q8_0) $(ks "" q8_0)
run q8G1U2 ""     "q8_0:G=1 q8_0:U=2"  $(ks _dot4 q8_0)
run shared shared ""                   $DOT4
# CUDA's one kernel per format, shown against both Vulkan twins
if "$X" -e "assert(require'xpu'.device'cuda:0')" 2>/dev/null; then
	t0=$(date +%s)
	timeout 60 "$X" scripts/bench-matvec-kernel.lua --device cuda:0 --n "$N" --distinct 64 --tsv $shape_args \
		2> "$OUT/sweep-cuda.err" | awk -F'\t' 'BEGIN { OFS = "\t" } { print "cuda", $0; $1 = $1 "_dot4"; print "cuda", $0 }' >> "$TSV"
	printf '%-8s %4ss  %s\n' cuda "$(( $(date +%s) - t0 ))" "cuda:0"
fi

# pivot FIELD SHAPE: kernels down, labels across (in run order), field 4 = median us, 7 = registers
pivot() {
	awk -F'\t' -v f="$1" -v shape="$2" '
		$3 != shape && $3 != "-" { next }
		!($1 in li) { li[$1] = ++nl; ln[nl] = $1 }
		!($2 in ki) { ki[$2] = ++nk; kn[nk] = $2 }
		{ v[$2, $1] = $4 == "GATE FAILED" ? "FAIL" : $f }
		END {
			printf "%-22s", shape
			for (i = 1; i <= nl; i++) printf " %7s", ln[i]
			print ""
			for (k = 1; k <= nk; k++) {
				printf "%-22s", kn[k]
				for (i = 1; i <= nl; i++) { c = v[kn[k], ln[i]]; printf " %7s", c == "" ? "." : c }
				print ""
			}
		}' "$TSV"
}
for s in $SHAPES; do
	echo
	echo "=== median us per launch, $s"
	pivot 4 "$s"
done
echo
echo "=== registers (driver), $(echo $SHAPES | cut -d' ' -f1)"
pivot 7 "$(echo $SHAPES | cut -d' ' -f1)"
