/* matvec_walk.glsl — one lane's walk of a mat-vec row for matvec.glsl: U steps of weight loads
 * in flight (MV_FIRST, MV_STEP, MV_TAIL), each block's value added to the accumulator its
 * lane keeps (deliver), then put in its canonical lane (to_canonical). */
#ifndef XPU_MATVEC_WALK_GLSL
#define XPU_MATVEC_WALK_GLSL

/* ---- the walk ------------------------------------------------------------------------------ */

/* At step t, group g = lane / G holds block B t + g, and lane (g, s = lane % G) adds it when
 * t % G == s: its accumulator is that of blocks B s + g modulo 32, added in increasing b. A
 * select, not a branch. */
float deliver(float acc, float v, uint t, uint sub, uint b, uint n)
{
	precise float a = acc + v;
	return mix(acc, a, t % G == sub && b < n);
}

/* The accumulator of lane l (blocks l modulo 32), from lane G (l % B) + l / B that kept it. */
float to_canonical(float acc, uint lane)
{
	if (G > 1u)
		acc = from_lane(acc, G * (lane % B) + lane / B);
	return acc;
}

/* Whether a lane loads at all: in the subgroup module only waves with a row walk; in the
 * shared-memory module every wave walks (the barriers) and one with no row loads nothing
 * (a uniform test per wave, the same at every step). */
#ifdef MV_SUBGROUP
#define MV_LD true
#else
#define MV_LD (r.n != 0u)
#endif

/* The loads of step u before the walk; a lane past the row (or a step past it) reads block 0. */
#define MV_FIRST(wt, u)                                                 \
	if (U > (u) && MV_LD) {                                         \
		uint bl = (u) * B + grp;                                \
		wt = wt_load(r, bl < r.bpr ? bl : 0u, sub, vec);        \
	}

/* Step t0 + u of a whole U: the value of the block wt holds, wt refilled with step t + U's
 * block (past the row: the block just used, which the caches still hold), the add. */
#define MV_STEP(wt, u)                                                          \
	if (U > (u)) {                                                          \
		uint t = t0 + (u), b = t * B + grp, bc = b < r.bpr ? b : 0u;    \
		float v = wt_value(wt, r, bc, sub, vec);                        \
		uint nb = b + U * B;                                            \
		if (MV_LD && (GUARD == 0u || t + U < steps))                    \
			wt = wt_load(r, nb < r.bpr ? nb : bc, sub, vec);        \
		acc = deliver(acc, v, t, sub, b, r.n);                          \
	}

/* Step t0 + u of the tail (fewer than U steps left, their loads made). */
#define MV_TAIL(wt, u)                                                          \
	if (U > (u) + 1u && t0 + (u) < steps) {                                 \
		uint t = t0 + (u), b = t * B + grp;                             \
		float v = wt_value(wt, r, b < r.bpr ? b : 0u, sub, vec);        \
		acc = deliver(acc, v, t, sub, b, r.n);                          \
	}

/* This lane's accumulator over the row (in to_canonical's order). Blocks past the row (or
 * of a wave with no row) are not added, but their lanes still take part in every exchange. */
float walk(Row r, uint lane, bool vec)
{
	uint grp = lane / G, sub = lane % G, steps = (r.bpr + B - 1u) / B;
	Wt w0 = wt_none(), w1 = w0, w2 = w0, w3 = w0, w4 = w0, w5 = w0, w6 = w0, w7 = w0;
	MV_FIRST(w0, 0u)
	MV_FIRST(w1, 1u)
	MV_FIRST(w2, 2u)
	MV_FIRST(w3, 3u)
	MV_FIRST(w4, 4u)
	MV_FIRST(w5, 5u)
	MV_FIRST(w6, 6u)
	MV_FIRST(w7, 7u)
	precise float acc = 0.0;
	uint t0 = 0u;
	for (; steps - t0 >= U; t0 += U) {
		MV_STEP(w0, 0u)
		MV_STEP(w1, 1u)
		MV_STEP(w2, 2u)
		MV_STEP(w3, 3u)
		MV_STEP(w4, 4u)
		MV_STEP(w5, 5u)
		MV_STEP(w6, 6u)
		MV_STEP(w7, 7u)
	}
	MV_TAIL(w0, 0u)
	MV_TAIL(w1, 1u)
	MV_TAIL(w2, 2u)
	MV_TAIL(w3, 3u)
	MV_TAIL(w4, 4u)
	MV_TAIL(w5, 5u)
	MV_TAIL(w6, 6u)
	return acc;
}

#endif
