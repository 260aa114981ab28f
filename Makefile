# xpulua — the front door. `make setup` installs the Debian packages the project needs; every
# other goal is built by build.mk in one sub-make that starts after setup has finished, so the
# tools setup installs (glslc, hipcc) are found by the same `make setup run`: make decides what
# exists when it reads a makefile, and build.mk is read only then. `make help` lists the goals.

PKGS := lua5.4 liblua5.4-dev libyaml-dev lua-busted libreadline-dev libvulkan-dev glslc \
        mesa-vulkan-drivers vulkan-validationlayers spirv-tools hipcc libamdhip64-dev rocm-device-libs

# Every goal but setup and help goes to build.mk; no goal at all means `all`.
BUILD_GOALS := $(filter-out setup help,$(MAKECMDGOALS))
ifeq ($(MAKECMDGOALS),)
BUILD_GOALS := all
endif

.DEFAULT_GOAL := build
.PHONY: build setup help $(BUILD_GOALS)

# Goals that need the build have it made first on every core (unless -j was given: then as
# asked), and only then run, one after another, so `make test run` never interleaves.
NEEDS_ALL := $(filter all test test-long run install,$(BUILD_GOALS))
build: $(filter setup,$(MAKECMDGOALS))
	@jobs=-j$$(nproc 2>/dev/null || echo 1); case " $(MAKEFLAGS) " in *" -j"*) jobs=;; esac; \
	$(if $(NEEDS_ALL),$(MAKE) --no-print-directory $$jobs -f build.mk all &&) \
	$(MAKE) --no-print-directory -f build.mk $(BUILD_GOALS)

$(BUILD_GOALS): build
	@:

setup:
	@scripts/setup.sh $(PKGS)

help:
	@echo "make setup       install the Debian packages the project needs (idempotent)"
	@echo "make             build build/xpulua and build/xpu.so"
	@echo "make test        the busted specs inside build/xpulua, soaks and sweeps aside"
	@echo "make test-long   the soaks, sweeps and repeated sizes (specs tagged #long)"
	@echo "make run         run the tour (scripts/tour.lua) on the CPU"
	@echo "make static      build/static/xpulua with Lua and libyaml linked in (to carry)"
	@echo "make check-asan  every spec inside build/asan/xpulua (AddressSanitizer, UBSan)"
	@echo "make check-tsan  every spec inside build/tsan/xpulua (ThreadSanitizer; CI, ~16 min)"
	@echo "make check-vulkan-validation  the Vulkan specs under the Khronos validation layer (CI, ~3 min)"
	@echo "make check-oom   every allocation of each scenario failed in turn (build/oom, ASan)"
	@echo "make check-oom-short  the same, a stride over the two long scenarios (CI, ~35 s)"
	@echo "make check-driver-faults  every driver call failed in turn, on each device present"
	@echo "make install     PREFIX=... installs the command, the module and the Lua library"
	@echo "make setup run   both in one command: the build starts after the packages are in"
