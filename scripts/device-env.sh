# device-env.sh — sourced by the scripts run on a GPU machine (device-run.sh, vk-sweep.sh):
# $OUT, the static binary as $X, busted from .dev/, the Autotune store under $OUT, NVIDIA's
# driver libraries, and the Vulkan loader unpacked from .gl/ with NVIDIA's ICD.
if [ "$(basename -- "$0")" = device-env.sh ]; then
	case "${1:-}" in -h|--help)
		echo 'usage: . scripts/device-env.sh   (sourced by device-run.sh and vk-sweep.sh; run alone it only sets up $OUT)'
		sed -n '1,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
	esac
fi
OUT=${OUT:-/tmp/xpulua-out}
mkdir -p "$OUT"
X=${XPULUA_BIN:-$PWD/build/static/xpulua}
export XPULUA=$X
export LUA_PATH="$PWD/.dev/share/?.lua;$PWD/.dev/share/?/init.lua;;"
export LUA_CPATH="$PWD/.dev/lib/?.so;;"
export XPULUA_CACHE=$OUT/cache
[ -d /usr/local/nvidia/lib64 ] && export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
if [ -d .gl ]; then
	for f in .gl/*.deb; do dpkg -x "$f" /; done
	ldconfig
	icd=$(ls /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json \
		/usr/share/vulkan/icd.d/nvidia_icd.json 2>/dev/null | head -1)
	[ -n "$icd" ] && export VK_DRIVER_FILES=$icd
	export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
	echo "vulkan ICD: ${icd:-none found}"
fi
