/* iq4nl-lookup-probe.cu — how iq4_nl's codebook lookup costs on a CUDA GPU, without xpulua:
 * the decode mat-vec's walk (a warp per row, a lane per 32-element block, the lane's blocks
 * added in order, then a butterfly of the 32 lanes) with the lookup done seven ways:
 *   prmt    byte permutes from four registers (kernels/cuda/matvec.cuh's kv_lookup)
 *   nibble  a shared-memory word per nibble, four pre-shifted tables of 16 (Vulkan's KV 0)
 *   pair32  a shared-memory word per payload byte (both nibbles' codebook bytes), 32 copies,
 *           word 32 p + lane, so no two lanes meet in a bank (Vulkan's KV 5, 32 KiB)
 *   half32  the same as halfwords, two entries a word (Vulkan's KV 6, 16 KiB)
 *   none    q4_0's nibble dot and no codebook: the memory floor (its result is not iq4_nl's)
 *   nibdp   nibble's table, each index taken out of its word by a packed dot (IDP, not a shift
 *           and a mask on the integer pipe)
 *   pairdp  pair32's table, word 32 p + lane as one packed dot with the lane as its addend
 *           (Vulkan's KV 7)
 * Every lookup's output is compared bit for bit with prmt's. Weights are rotated over copies
 * past L2; each line: the median of 5 batches of 40 launches (each waits for the one before),
 * us a launch, GB/s of weight bytes, the kernel's registers; on the grid of a block per eight
 * rows, then on the blocks the GPU keeps resident. H200 (docs/PERF.md, "iq4_nl's lookups on
 * the same GPU under CUDA"), 14336x4096 at U 1: prmt 15.6 us, nibble 19.1, pair32 25.4, half32
 * 27.2, none 12.4: the nibble table trails the permutes by what Vulkan's kernel trails CUDA's;
 * on resident blocks pairdp 18.2 against prmt 16.8, and at 4096x14336 17.5 against 19.0.
 *   nvcc -O3 -fmad=false -arch=sm_90 -o iq4nl-lookup-probe lab/iq4nl-lookup-probe.cu
 *   ./iq4nl-lookup-probe                 # both shapes, every lookup, U 1 and 2
 *   ncu --kernel-name-base demangled -k "regex:mv<.int.1, .int.1>" --launch-skip 1 --launch-count 1 \
 *       ./iq4nl-lookup-probe 14336 4096   # nibble at U 1; .int.0 prmt, 2 pair32, 3 half32, 4 none,
 *                                         # 5 nibdp, 6 pairdp */
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

enum { PRMT, NIBBLE, PAIR32, HALF32, NONE, NIBDP, PAIRDP, KINDS };
static const char *const kind_name[KINDS] = { "prmt", "nibble", "pair32", "half32", "none", "nibdp", "pairdp" };

__constant__ int8_t CB[16] = { -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113 };
#define KV_W0 0xBFAD9881u
#define KV_W1 0xF6EADDCFu
#define KV_W2 0x26190D01u
#define KV_W3 0x71594535u

template <int L> struct table_words { static constexpr int n = L == PAIR32 || L == PAIRDP ? 8192 : L == HALF32 ? 4096 : 64; };

/* The signed packed dot: four int8 products added to c; udot the unsigned one. */
__device__ __forceinline__ int sdot(uint32_t a, uint32_t b, int c) { return __dp4a((int)a, (int)b, c); }
__device__ __forceinline__ uint32_t udot(uint32_t a, uint32_t b, uint32_t c) { return __dp4a(a, b, c); }

__device__ __forceinline__ uint32_t cb_byte(uint32_t v) { return (uint8_t)CB[v & 15u]; }

template <int L> __device__ void table_fill(uint32_t *t)
{
	for (int i = threadIdx.x; i < table_words<L>::n; i += blockDim.x) {
		if (L == NIBBLE || L == NIBDP)
			t[i] = cb_byte(i % 16) << (8 * (i / 16));
		else if (L == PAIR32 || L == PAIRDP) /* entry p (word 32 p + c): low nibble's byte at 0, high's at 2 */
			t[i] = cb_byte((i / 32) & 15) | cb_byte((i / 32) >> 4) << 16;
		else if (L == HALF32) { /* word 32 h + c: bytes 2h and 2h + 1 as halfwords */
			uint32_t h = i / 32, p0 = 2 * h, p1 = p0 + 1;
			t[i] = (cb_byte(p0 & 15) | cb_byte(p0 >> 4) << 8) | (cb_byte(p1 & 15) | cb_byte(p1 >> 4) << 8) << 16;
		}
	}
}

/* The dot of payload word q (elements e..e+3 in the low nibbles, e+16..e+19 in the high) with
 * activation words al (e..e+3) and ah (e+16..e+19). */
template <int L> __device__ __forceinline__ int word_dot(uint32_t q, uint32_t al, uint32_t ah, const uint32_t *t, int lane)
{
	if (L == PRMT) {
		const uint32_t half = 0x32103210u | ((q & 0x88888888u) >> 1);
		uint32_t tt[2];
#pragma unroll
		for (int i = 0; i < 2; i++) {
			const uint32_t sel = (q >> (16 * i)) & 0x7777u;
			const uint32_t a = __byte_perm(KV_W0, KV_W1, sel), b = __byte_perm(KV_W2, KV_W3, sel);
			tt[i] = __byte_perm(a, b, (half >> (16 * i)) & 0xFFFFu);
		}
		return sdot(__byte_perm(tt[0], tt[1], 0x6420), al, sdot(__byte_perm(tt[0], tt[1], 0x7531), ah, 0));
	} else if (L == NIBBLE) {
		const uint32_t n = q & 0x0F0F0F0Fu, m = (q >> 4) & 0x0F0F0F0Fu;
		const uint32_t lo = t[n & 255] | t[16 + ((n >> 8) & 255)] | t[32 + ((n >> 16) & 255)] | t[48 + (n >> 24)];
		const uint32_t hi = t[m & 255] | t[16 + ((m >> 8) & 255)] | t[32 + ((m >> 16) & 255)] | t[48 + (m >> 24)];
		return sdot(lo, al, sdot(hi, ah, 0));
	} else if (L == PAIR32) {
		const uint32_t *o = t + lane;
		const uint32_t w01 = o[32 * (q & 255)] | o[32 * ((q >> 8) & 255)] << 8;
		const uint32_t w23 = o[32 * ((q >> 16) & 255)] | o[32 * (q >> 24)] << 8;
		return sdot(w01, (al & 0xFFFFu) | (ah << 16), sdot(w23, (al >> 16) | (ah & 0xFFFF0000u), 0));
	} else if (L == HALF32) {
		const uint32_t *o = t + lane;
#define OWN(p) ((o[32 * ((p) >> 1)] >> (((p) & 1u) * 16)) & 0xFFFFu)
		const uint32_t w01 = OWN(q & 255) | OWN((q >> 8) & 255) << 16;
		const uint32_t w23 = OWN((q >> 16) & 255) | OWN(q >> 24) << 16;
#undef OWN
		return sdot(w01, __byte_perm(al, ah, 0x5140), sdot(w23, __byte_perm(al, ah, 0x7362), 0));
	} else if (L == NIBDP) { /* nibble's table, each index taken out of its word by a packed dot */
		const uint32_t n = q & 0x0F0F0F0Fu, m = (q >> 4) & 0x0F0F0F0Fu;
		const uint32_t lo = t[udot(n, 1u, 0)] | t[udot(n, 1u << 8, 16)] | t[udot(n, 1u << 16, 32)] | t[udot(n, 1u << 24, 48)];
		const uint32_t hi = t[udot(m, 1u, 0)] | t[udot(m, 1u << 8, 16)] | t[udot(m, 1u << 16, 32)] | t[udot(m, 1u << 24, 48)];
		return sdot(lo, al, sdot(hi, ah, 0));
	} else if (L == PAIRDP) { /* pair32's table, word 32 p + lane by a packed dot */
		const uint32_t w01 = t[udot(q, 32u, lane)] | t[udot(q, 32u << 8, lane)] << 8;
		const uint32_t w23 = t[udot(q, 32u << 16, lane)] | t[udot(q, 32u << 24, lane)] << 8;
		return sdot(w01, (al & 0xFFFFu) | (ah << 16), sdot(w23, (al >> 16) | (ah & 0xFFFF0000u), 0));
	} else {
		return sdot(q & 0x0F0F0F0Fu, al, sdot((q >> 4) & 0x0F0F0F0Fu, ah, 0));
	}
}

template <int L, int U>
__device__ __forceinline__ void one_row(float *__restrict__ y, const uint4 *__restrict__ pay, const uint16_t *__restrict__ sc,
					const uint4 *__restrict__ x4, float xs, int bpr, const uint32_t *tab, int row, int lane);

/* y[r] = row r . x: pay[r][b] the 16 payload bytes of block b, sc[r][b] its f16 scale, x4 the
 * activation's int8 as 16-byte words (block b: words 2b and 2b + 1), xs its scale. U blocks'
 * loads in flight a lane. A block's warps stride over the rows, so a grid smaller than a warp
 * a row fills each block's table once for many rows. */
template <int L, int U>
__global__ void __launch_bounds__(256) mv(float *__restrict__ y, const uint4 *__restrict__ pay,
					  const uint16_t *__restrict__ sc, const uint4 *__restrict__ x4, float xs, int rows, int bpr)
{
	__shared__ uint32_t tab[table_words<L>::n];
	if (L != PRMT && L != NONE) {
		table_fill<L>(tab);
		__syncthreads();
	}
	const int lane = threadIdx.x & 31, per = blockDim.x >> 5;
	for (int row = blockIdx.x * per + (threadIdx.x >> 5); row < rows; row += gridDim.x * per)
		one_row<L, U>(y, pay, sc, x4, xs, bpr, tab, row, lane);
}

template <int L, int U>
__device__ __forceinline__ void one_row(float *__restrict__ y, const uint4 *__restrict__ pay, const uint16_t *__restrict__ sc,
					const uint4 *__restrict__ x4, float xs, int bpr, const uint32_t *tab, int row, int lane)
{
	const uint4 *pr = pay + (size_t)row * bpr;
	const uint16_t *sr = sc + (size_t)row * bpr;
	float acc = 0.0f;
	for (int b0 = lane; b0 < bpr; b0 += 32 * U) {
		uint4 q[U];
		uint16_t s[U];
#pragma unroll
		for (int u = 0; u < U; u++) {
			q[u] = __ldcs(pr + b0 + 32 * u);
			s[u] = sr[b0 + 32 * u];
		}
#pragma unroll
		for (int u = 0; u < U; u++) {
			const int b = b0 + 32 * u;
			const uint4 a0 = __ldg(x4 + 2 * b), a1 = __ldg(x4 + 2 * b + 1);
			int dot = word_dot<L>(q[u].x, a0.x, a1.x, tab, lane) + word_dot<L>(q[u].y, a0.y, a1.y, tab, lane) +
				  word_dot<L>(q[u].z, a0.z, a1.z, tab, lane) + word_dot<L>(q[u].w, a0.w, a1.w, tab, lane);
			acc = __fadd_rn(acc, __fmul_rn(__fmul_rn(__half2float(__ushort_as_half(s[u])), xs), (float)dot));
		}
	}
#pragma unroll
	for (int off = 16; off > 0; off >>= 1)
		acc = __fadd_rn(acc, __shfl_xor_sync(0xFFFFFFFFu, acc, off));
	if (lane == 0)
		y[row] = acc;
}

typedef void (*mv_fn)(float *, const uint4 *, const uint16_t *, const uint4 *, float, int, int);
static mv_fn kernel_of(int kind, int u)
{
	static const mv_fn k1[KINDS] = { mv<PRMT, 1>, mv<NIBBLE, 1>, mv<PAIR32, 1>, mv<HALF32, 1>, mv<NONE, 1>,
					 mv<NIBDP, 1>, mv<PAIRDP, 1> };
	static const mv_fn k2[KINDS] = { mv<PRMT, 2>, mv<NIBBLE, 2>, mv<PAIR32, 2>, mv<HALF32, 2>, mv<NONE, 2>,
					 mv<NIBDP, 2>, mv<PAIRDP, 2> };
	return u == 1 ? k1[kind] : k2[kind];
}

static uint32_t rng = 12345u;
static uint32_t next_u32() { rng ^= rng << 13; rng ^= rng >> 17; rng ^= rng << 5; return rng; }

/* One shape's device buffers: `copies` copies of the weights (past L2), the activation, y. */
struct Fixture {
	int rows, bpr, copies;
	size_t blocks;
	uint4 *pay, *x4;
	uint16_t *sc;
	float *y;
};

static Fixture make_fixture(int rows, int cols)
{
	Fixture f = { rows, cols / 32, 0, (size_t)rows * (cols / 32), nullptr, nullptr, nullptr, nullptr };
	int l2 = 0;
	CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
	f.copies = (int)std::max<size_t>(2, (size_t)8 * l2 / (f.blocks * 18) + 1);
	std::vector<uint32_t> hp(f.blocks * 4);
	std::vector<uint16_t> hs(f.blocks);
	std::vector<int8_t> hx(cols);
	for (auto &w : hp)
		w = next_u32();
	for (auto &s : hs) /* f16 in [2^-10, 2^-6): normal, no overflow in the products */
		s = (uint16_t)((5 + next_u32() % 4) << 10 | (next_u32() & 0x3FF));
	for (auto &v : hx)
		v = (int8_t)(next_u32() % 255 - 127);
	CK(cudaMalloc(&f.pay, f.blocks * 16 * f.copies));
	CK(cudaMalloc(&f.sc, f.blocks * 2 * f.copies));
	CK(cudaMalloc(&f.x4, cols));
	CK(cudaMalloc(&f.y, rows * sizeof(float)));
	for (int c = 0; c < f.copies; c++) {
		CK(cudaMemcpy(f.pay + c * f.blocks, hp.data(), f.blocks * 16, cudaMemcpyHostToDevice));
		CK(cudaMemcpy(f.sc + c * f.blocks, hs.data(), f.blocks * 2, cudaMemcpyHostToDevice));
	}
	CK(cudaMemcpy(f.x4, hx.data(), cols, cudaMemcpyHostToDevice));
	return f;
}

static void free_fixture(Fixture &f)
{
	CK(cudaFree(f.pay));
	CK(cudaFree(f.sc));
	CK(cudaFree(f.x4));
	CK(cudaFree(f.y));
}

static const float XS = 0.0123f;

/* y from one launch on weight copy 0, y poisoned (NaN) first. */
static std::vector<float> result_of(mv_fn k, int grid, const Fixture &f)
{
	std::vector<float> y(f.rows);
	CK(cudaMemset(f.y, 0xFF, f.rows * sizeof(float)));
	k<<<grid, 256>>>(f.y, f.pay, f.sc, f.x4, XS, f.rows, f.bpr);
	CK(cudaGetLastError());
	CK(cudaMemcpy(y.data(), f.y, f.rows * sizeof(float), cudaMemcpyDeviceToHost));
	return y;
}

/* us a launch: batches of 40 back to back over the weight copies, the first batch a warm-up;
 * median and min of the other five. */
static void time_launches(mv_fn k, int grid, const Fixture &f, double &med, double &min)
{
	cudaEvent_t e0, e1;
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	std::vector<float> us;
	for (int rep = 0; rep < 6; rep++) {
		CK(cudaEventRecord(e0));
		for (int i = 0; i < 40; i++) {
			const size_t c = (size_t)(rep * 40 + i) % f.copies;
			k<<<grid, 256>>>(f.y, f.pay + c * f.blocks, f.sc + c * f.blocks, f.x4, XS, f.rows, f.bpr);
		}
		CK(cudaEventRecord(e1));
		CK(cudaEventSynchronize(e1));
		float ms = 0;
		CK(cudaEventElapsedTime(&ms, e0, e1));
		if (rep > 0)
			us.push_back(ms * 1000 / 40);
	}
	CK(cudaEventDestroy(e0));
	CK(cudaEventDestroy(e1));
	std::sort(us.begin(), us.end());
	med = us[us.size() / 2];
	min = us[0];
}

static void run_shape(int rows, int cols)
{
	Fixture f = make_fixture(rows, cols);
	int sms = 0;
	CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	const std::vector<float> ref = result_of(kernel_of(PRMT, 1), (rows * 32 + 255) / 256, f);
	for (int resident = 0; resident < 2; resident++) {
		for (int u = 1; u <= 2; u++) {
			for (int kind = 0; kind < KINDS; kind++) {
				const mv_fn k = kernel_of(kind, u);
				int grid = (rows * 32 + 255) / 256, per_sm = 0;
				CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, (const void *)k, 256, 0));
				if (resident)
					grid = std::min(grid, per_sm * sms);
				const std::vector<float> got = result_of(k, grid, f);
				int diff = 0, nan = 0;
				for (int r = 0; r < rows; r++) {
					nan += got[r] != got[r];
					diff += memcmp(&got[r], &ref[r], 4) != 0;
				}
				char status[80];
				if (kind == NONE)
					snprintf(status, sizeof status, "(not iq4_nl)");
				else if (diff || nan)
					snprintf(status, sizeof status, "FAILED: %d rows differ from prmt U 1, %d NaN", diff, nan);
				else
					snprintf(status, sizeof status, "== prmt");
				cudaFuncAttributes fa;
				CK(cudaFuncGetAttributes(&fa, (const void *)k));
				double med, min;
				time_launches(k, grid, f, med, min);
				printf("%5dx%-5d  %-6s U %d  grid %5d (%d an SM)  %6.1f us  min %6.1f  %6.0f GB/s  %3d regs  %s\n",
				       rows, cols, kind_name[kind], u, grid, per_sm, med, min, f.blocks * 18 / med / 1e3,
				       fa.numRegs, status);
			}
		}
	}
	free_fixture(f);
}

int main(int argc, char **argv)
{
	if (argc == 3) {
		run_shape(atoi(argv[1]), atoi(argv[2]));
		return 0;
	}
	run_shape(14336, 4096);
	run_shape(4096, 14336);
	return 0;
}
