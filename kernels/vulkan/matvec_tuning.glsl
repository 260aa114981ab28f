/* matvec_tuning.glsl — matvec.glsl's tuning, specialization constants 3..8, the f16 denormal
 * mode F16 = 1 needs, and the constants derived from them (VEC, B). */
#ifndef XPU_MATVEC_TUNING_GLSL
#define XPU_MATVEC_TUNING_GLSL

/* ---- tuning: specialization constants 3..8 (6 unused: it was iq4_nl's codebook lookup) ---
 * Set per pipeline from XPULUA_VULKAN_MATVEC_SPEC (vulkan_pipe.c, which checks the ranges),
 * so a tuning run needs no new module; the defaults are the shipped choice. Each setting
 * gives the CPU's bits.
 *   U     (3) 1..8: steps of weight loads in flight per lane (MV_UMAX register sets exist)
 *   VEC   (4) 0: no 16-byte loads (every load a 32-bit word)
 *   G     (5) q8_0 only, 1 (default) or 2: lanes per block (1: each lane reads its block's 32
 *         bytes, two 16-byte loads in flight a step, and no shuffles for the block's sum). H200,
 *         dot4, us for 4096x14336 / 14336x4096, one output: G 1 20.2 / 20.6, G 2 26.2 / 20.1
 *         (CUDA 19.2 / 20.8); each: 15.1 / 14.1 against 15.0 / 14.9 (docs/PERF.md)
 *   GUARD (7) 1: a step's reload sits in a branch, skipped once the row has no more steps;
 *         0: it is made anyway, on a block of the row (matvec.glsl says why)
 *   F16   (8) 1: f16 scales by the hardware's conversion, exact where f16 denormals are
 *         preserved, which the module asks for (DenormPreserve 16, below); 0: by integer work
 *         (xpu_f16), exact anywhere. The backend sets it: 1 where the device offers the mode
 *         (shaderDenormPreserveFloat16), else 0 with the mode taken out of the module
 *         (vulkan_pipe.c). H200, dot4, independent launches, us for 14336x4096 / 4096x14336,
 *         the integer decode then the hardware's, two alternated rounds: q4_K 13.4 / 12.3,
 *         11.6 / 9.8 (U 3); q4_0 9.4 / 8.6, 8.4 / 8.1; q6_K 16.4 / 14.6, 14.7 / 14.8 (min
 *         13.3); iq4_nl 16.7 / 15.7, 15.1 / 14.1; q8_0 level (docs/PERF.md) */
#define MV_UMAX 8u
layout(constant_id = 3) const uint U = U_FMT;
layout(constant_id = 4) const uint VEC_ON = 1u;
#ifdef FMT_Q8_0
layout(constant_id = 5) const uint G = 1u;
#else
const uint G = G_FMT;
#endif
layout(constant_id = 7) const uint GUARD = 0u;
layout(constant_id = 8) const uint F16 = 0u;

/* SPV_KHR_float_controls (core in SPIR-V 1.4): f16 denormals preserved, also those unpacked
 * from an integer (unpackHalf2x16), as F16 = 1 needs. */
#extension GL_EXT_spirv_intrinsics : require
spirv_execution_mode(capabilities = [4464], 4459, 16); /* DenormPreserve, 16-bit */

const bool VEC = VEC_FMT && VEC_ON != 0u;
const uint B = 32u / G; /* blocks per wave step */

#endif
