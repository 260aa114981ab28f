/* cuda_fp16.h — stands in for CUDA's header when the CUDA kernel files are built with hipcc
 * (kernels/hip/hip.mk puts kernels/hip first on the include path): HIP's half type instead. */
#include "hip_compat.h"
