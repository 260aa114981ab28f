#!/bin/sh
# test-vulkan-validation.sh XPULUA [SPEC...] — the Vulkan specs (default: those that launch
# Vulkan kernels) inside XPULUA with the Khronos validation layer (Debian's
# vulkan-validationlayers) on every instance they make, their children's included. The backend
# appends each message of the layer to one file (XPULUA_VK_MESSAGES, src/backend/vulkan/
# vulkan_debug.c); a spec file fails on a failed spec or on any validation or performance
# warning or error, and on a run in which the layer never said it was active (not installed,
# or not loaded: no check is then a pass). The messages are kept in build/validation/.
# Prints a line per file with its count and exits non-zero if any failed (2: no layer).
case "${1:-}" in -h|--help|"")
	echo 'usage: sh scripts/test-vulkan-validation.sh XPULUA [SPEC...]'
	sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; [ -n "${1:-}" ]; exit $? ;;
esac
set -u
X=$1
shift
[ $# -gt 0 ] || set -- spec/vulkan_spec.lua spec/shape_ops_spec.lua spec/shape_rows_spec.lua \
	spec/workgroup_spec.lua spec/quant_spec.lua spec/layer_norm_spec.lua \
	spec/layer_elementwise_spec.lua spec/layer_select_spec.lua spec/layer_kv_write_spec.lua
LAYER=VK_LAYER_KHRONOS_validation
found=0
for d in ${VK_ADD_LAYER_PATH:-} /usr/share/vulkan/explicit_layer.d /etc/vulkan/explicit_layer.d; do
	[ -f "$d/VkLayer_khronos_validation.json" ] && found=1
done
if [ "$found" -eq 0 ]; then
	echo "test-vulkan-validation: no $LAYER manifest: install the Debian package vulkan-validationlayers (make setup)" >&2
	exit 2
fi
R=build/validation
rm -rf "$R"
mkdir -p "$R"
failed=0
total=0
for f in "$@"; do
	name=$(basename "$f" .lua)
	log=$(pwd)/$R/$name.messages
	: > "$log"
	XPULUA_VK_MESSAGES=$log VK_INSTANCE_LAYERS=$LAYER \
		"$X" /usr/bin/busted --output=spec/summary.lua "$f" > "$R/$name.out" 2>&1
	rc=$?
	# the loader's general warnings (that VK_INSTANCE_LAYERS added the layer) are not findings
	n=$(grep -Ec '^[0-9]+ (warning|error) (validation|performance) |^[0-9]+ error general ' "$log")
	active=$(grep -c 'khronos-validation-createinstance-status-message' "$log")
	total=$((total + n))
	printf '%-22s %s; %d validation message(s)%s\n' "$name" "$(tail -1 "$R/$name.out")" "$n" \
		"$([ "$active" -eq 0 ] && echo "; the layer never ran")"
	if [ "$rc" -ne 0 ] || [ "$n" -gt 0 ] || [ "$active" -eq 0 ]; then
		failed=1
	fi
done
if [ "$failed" -eq 0 ]; then
	echo "vulkan validation: $total messages, every spec file clean"
else
	echo "vulkan validation: failures above ($total messages; the messages are in $R/)"
fi
exit "$failed"
