/* workgroup.cu — CUDA bodies of workgroup_reduce and workgroup_scan (src/ops/workgroup/table.c),
 * the test kernels of the workgroup primitives (workgroup.cuh): each trip of a group reduces
 * or scans block consecutive items, the identity standing for an item at or past n. */
#include "workgroup.cuh"

/* Lane 0's result and the number of lanes whose result differs from it in any bit. */
template <int OP, class T>
static __device__ void reduce_trips(T *out, uint32_t *agree, const T *x, uint32_t n, uint32_t groups,
				    uint32_t trips)
{
	__shared__ uint64_t first;
	const uint64_t g = xpu_group();
	const uint32_t t = xpu_thread(), block = blockDim.x;
	if (g >= groups) /* the whole group leaves: no barrier is skipped by part of it */
		return;
	for (uint32_t k = 0; k < trips; k++) {
		const uint64_t at = g * trips + k, i = at * block + t;
		T r = xpu_workgroup_reduce<OP>(i < n ? x[i] : xpu_wg_identity<OP>(T()));
		if (t == 0)
			first = xpu_wg_bits(r);
		__syncthreads();
		int32_t differ = xpu_wg_bits(r) != first;
		differ = xpu_workgroup_reduce<XPU_WG_ADD>(differ); /* its barriers end the reads of first */
		if (t == 0) {
			out[at] = r;
			agree[at] = (uint32_t)differ;
		}
	}
}

template <int OP, class T>
static __device__ void scan_trips(T *out, const T *x, uint32_t n, uint32_t trips)
{
	const uint64_t g = xpu_group();
	const uint32_t t = xpu_thread(), block = blockDim.x;
	for (uint32_t k = 0; k < trips; k++) {
		const uint64_t i = (g * trips + k) * block + t;
		T s = xpu_workgroup_scan<OP>(i < n ? x[i] : xpu_wg_identity<OP>(T()));
		if (i < n)
			out[i] = s;
	}
}

template <class T>
static __device__ void reduce_op(uint32_t op, uint8_t *out, uint32_t *agree, const uint8_t *x, uint32_t n,
				 uint32_t groups, uint32_t trips)
{
	T *o = (T *)out;
	const T *v = (const T *)x;
	if (op == XPU_WG_ADD)
		reduce_trips<XPU_WG_ADD>(o, agree, v, n, groups, trips);
	else if (op == XPU_WG_MAX)
		reduce_trips<XPU_WG_MAX>(o, agree, v, n, groups, trips);
	else
		reduce_trips<XPU_WG_MIN>(o, agree, v, n, groups, trips);
}

template <class T>
static __device__ void scan_op(uint32_t op, uint8_t *out, const uint8_t *x, uint32_t n, uint32_t trips)
{
	T *o = (T *)out;
	const T *v = (const T *)x;
	if (op == XPU_WG_ADD)
		scan_trips<XPU_WG_ADD>(o, v, n, trips);
	else if (op == XPU_WG_MAX)
		scan_trips<XPU_WG_MAX>(o, v, n, trips);
	else
		scan_trips<XPU_WG_MIN>(o, v, n, trips);
}

extern "C" __global__ void __launch_bounds__(1024)
workgroup_reduce(uint8_t *out, uint32_t *agree, const uint8_t *x, unsigned n, unsigned groups, unsigned trips,
		 unsigned op, unsigned dtype)
{
	if (dtype == XPU_WG_F32)
		reduce_op<float>(op, out, agree, x, n, groups, trips);
	else if (dtype == XPU_WG_I32)
		reduce_op<int32_t>(op, out, agree, x, n, groups, trips);
	else
		reduce_op<int64_t>(op, out, agree, x, n, groups, trips);
}

extern "C" __global__ void __launch_bounds__(1024)
workgroup_scan(uint8_t *out, const uint8_t *x, unsigned n, unsigned trips, unsigned op, unsigned dtype)
{
	if (dtype == XPU_WG_I32)
		scan_op<int32_t>(op, out, x, n, trips);
	else
		scan_op<int64_t>(op, out, x, n, trips);
}
