/*
 * What the SPH family's CPU stages share (WCSPH, PCISPH, IISPH, DFSPH): the packed copies and the
 * wall cache, DFSPH's and IISPH's per-pair cache with the neighbour sums that read or fill it, and
 * the pressure acceleration (sph_cpu.c).
 *
 * ---- the SPH solvers' stages (formulas: the methods' <name>_formulas.h) ---------------------
 * Arrays during their pressure stages: density rho_i, sx the DFSPH factor, lambda the k_i of the
 * pressure acceleration, sy the per-particle error of the last measuring stage.
 *
 * ---- the SPH passes' packed copies and wall cache ------------------------------------------
 * The SPH passes read x_j, v_j and k_j of scattered neighbours: packed as (x, y, z, k) in the
 * pack array and (v_x, v_y, v_z, 0) in sph_v, a neighbour is two 16-byte loads and two cache
 * lines instead of up to seven of each (see load_packed). Each pass packs what it reads at its
 * start, from the arrays as they are then (a distributed run's halo updates included), so the
 * values, and every result, are the arrays' own.
 * The wall's density and gradient at a point depend on the point alone: the first pass at a
 * point (the step's first SPH pass at x, PCISPH's prediction at x + dt v) keeps them in
 * sph_wall, and the passes that follow at the same point read them back instead of recomputing
 * the same floats. pbf_cpu_stage drops the cache before any other stage (see sph_wall_keeps in
 * src/backends/cpu/cpu.c).
 *
 * ---- PCISPH and IISPH: the pressure k accumulates over the iterations (PCISPH: in density,
 * IISPH: in sy), lambda holds the increment that pressure_accel applies (the acceleration is
 * linear in k); IISPH keeps a_ii in sx and the error in sz.
 *
 * ---- DFSPH's per-pair cache ------------------------------------------------------------------
 * The positions stay where the grid was built from the factor stage to the end of the density
 * solve (the SPH solvers move the particles only in advect), so every pair's gradient factor s =
 * |grad W(r)| / |r| of the SPH kernel (v_kgrad) is the same in all of the step's DFSPH passes: 2
 * per iteration of each solve. The factor pass stores it, per chunk of PBF_LANES list entries (4
 * bytes per entry, +0 outside the neighbours), and the divergence, density and pressure
 * acceleration passes read it back instead of recomputing the kernel (a square root and a
 * division per pair) and its range test: a pair is inside the kernel where s != 0 (a pair at
 * r = h within rounding, s = 0, adds a zero either way). The products are the uncached passes'
 * own, the same operands in the same order, so results do not change (DFSPH's frames are
 * byte-identical with and without the cache, and equal to the GPU kernels'). Without room, or
 * beyond PAIR_MAX_BYTES (sph_cpu.c), the passes compute as before. Measured (59,319 particles, 1 thread,
 * shared machine): about 10 % less CPU time per step for 160 bytes per particle; caching the
 * offsets x_i - x_j too (16 bytes per pair, no gather of x_j) was slower: the 38 MB it streams
 * per pass do not stay in the last-level cache. */
#ifndef PBF_SOLVERS_SPH_CPU_H
#define PBF_SOLVERS_SPH_CPU_H

#include "solvers/common/common_cpu.h"
#include "solvers/sph/sph_formulas.h"

/* The packed copies of an SPH pass: *P = (x, y, z, K) (K NULL: x, y, z only; P NULL: none) and,
 * with_v, *PV = (v_x, v_y, v_z, 0); NULL where there is no room (the pass gathers from the
 * arrays). */
void pbf_cpu_sph_pack(pbf_world *w, const float *K, int with_v, const float **P, const float **PV);
/* DFSPH's solves move no particle, so the x* of pack stay; sph_v holds the velocities where the
 * pressure acceleration wrote its new ones there too (xv_packed: set by the stages that packed
 * or wrote both, kept by the measures, which change neither, dropped by every other stage and in a
 * distributed run, whose hooks change ghosts between stages): the measures then pack nothing
 * and the pressure acceleration packs only k. */
void pbf_cpu_sph_pack_k(pbf_world *w, const float *K);
/* The wall cache a pass at `at` writes (NULL: none; the pass then computes only). */
float *pbf_cpu_sph_wall_begin(pbf_world *w);
/* The cache's offsets for the current lists and room for it: 0 where there is none. */
int pbf_cpu_pair_reserve(pbf_world *w);
/* The symmetric pressure acceleration of every SPH solver over dt, from k = dt^2 rho_0 p / rho^2:
 * v_i -= (sum_j V (k_i + k_j) grad W_ij + k_i grad wall_i) / dt, then the collisions and
 * friction on the motion dt v (as PBF's collide stage does inside its iterations), so that the
 * next measure of the solve sees the motion the walls allow. With `predicted` (PCISPH) the
 * gradients are taken at the predicted positions x + dt v (the velocities before this pass) and
 * the new velocities go to sx, sy, sz, which then swap roles with vx, vy, vz.
 * Each method's accel stage calls it with its flags: predicted (PCISPH), viscous (WCSPH: adds
 * the artificial viscosity its pressure stage left in sx, sy, sz). */
int pbf_cpu_pressure_accel(pbf_world *w, const pbf_step_ctx *ctx, int predicted, int viscous);
/* The pressure stage of the state-equation methods (WCSPH, SESPH): the density (walls
 * included), k_i = pbf_state_k(rho_i / rho_0, B, gamma, tension) into lambda, and the velocity
 * change of the artificial viscosity over dt into sx, sy, sz (visc = alpha h c_s,
 * pbf_state_viscosity; added by pbf_cpu_pressure_accel with `viscous`); measures the density
 * error. */
int pbf_cpu_sph_state_pressure(pbf_world *w, const pbf_step_ctx *ctx, float B, float gamma,
                               float tension, float visc);

static inline void sph_wall_put(float *WC, int i, float wall, const float gw[3]) {
    if (!WC) return;
    WC[4 * (size_t)i + 0] = gw[0];
    WC[4 * (size_t)i + 1] = gw[1];
    WC[4 * (size_t)i + 2] = gw[2];
    WC[4 * (size_t)i + 3] = wall;
}
/* The wall at particle i's point p (taken `at`): from the cache when it holds that point. */
static inline float sph_wall_get(const pbf_world *w, int i, int at, const float p[3],
                                 float gw[3]) {
    const cpu_lists *L = LISTS(w);
    if (L->wall_at != at) return pbf_world_wall_density(w, p, gw);
    const float *c = L->sph_wall + 4 * (size_t)i;
    gw[0] = c[0];
    gw[1] = c[1];
    gw[2] = c[2];
    return c[3];
}

/* density_grad_sums that also stores the pairs of particle i into pc (the lists are built). */
static inline PBF_SIMD_INLINE void density_grad_sums_pairs(pbf_world *w, int i, float *rho_sum,
                                                           float g[3], float *s2_sum,
                                                           const float *restrict P,
                                                           nb_ranges *cache, float *pc) {
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const pbf_sph_consts *k = &w->k;
    const pbf_vf h2v = vf_set1(k->h2);
    const pbf_vf vol = vf_set1(k->volume);
    const pbf_vf xi = vf_set1(QX[i]), yi = vf_set1(QY[i]), zi = vf_set1(QZ[i]);
    const int cubic = k->cubic != 0.0f; /* the SPH solvers' kernel (v_kw) */
    pbf_vf rho = vf_set1(0.0f), gx = rho, gy = rho, gz = rho, s2 = rho;
    FOR_NEIGHBOURS_R(w, i, cache,
        pbf_vf xj, yj, zj;
        load_neighbours(P, jv, QX, QY, QZ, NULL, &xj, &yj, &zj, NULL);
        pbf_vf dx = xi - xj, dy = yi - yj, dz = zi - zj;
        pbf_vf r2 = dx * dx + dy * dy + dz * dz;
        pbf_vi in = valid & (r2 < h2v);
        rho += v_kw(k, r2, in, cubic);
        pbf_vf sp = v_kgrad(k, r2, in, cubic);
        pbf_vf f = vol * sp;
        pbf_vf ax = vf_and(f * dx, in), ay = vf_and(f * dy, in), az = vf_and(f * dz, in);
        gx += ax;
        gy += ay;
        gz += az;
        s2 += ax * ax + ay * ay + az * az;
        vf_store(pc, sp);
        pc += PBF_LANES;
    );
    *rho_sum = vf_hsum(rho);
    g[0] = vf_hsum(gx);
    g[1] = vf_hsum(gy);
    g[2] = vf_hsum(gz);
    *s2_sum = vf_hsum(s2);
}

/* The divergence solve's first D_i (density_rate_pairs, bit-identical: the same terms in the same
 * lanes and order) from the pairs the factor pass has just cached for particle i (pc, its first
 * chunk); the wall term is the caller's. */
static inline PBF_SIMD_INLINE float rate_from_pairs(pbf_world *w, int i, const float *P,
                                                    const float *PV, const nb_ranges *nb,
                                                    const float *pc) {
    const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const pbf_vf vol = vf_set1(w->k.volume), zero = vf_set1(0.0f);
    const pbf_vf vxi = vf_set1(VX[i]), vyi = vf_set1(VY[i]), vzi = vf_set1(VZ[i]);
    const pbf_vf xi = vf_set1(QX[i]), yi = vf_set1(QY[i]), zi = vf_set1(QZ[i]);
    const uint32_t f_ = LISTS(w)->start[i];
    const uint32_t s_ = LISTS(w)->block_start[(unsigned)i / LIST_BLOCK] + (f_ & ~1u);
    const uint32_t n_ = list_end(w, i) - s_ - (f_ & 1u);
    const uint8_t *c_ = LISTS(w)->nbr + CODE_BYTES(s_);
    uint32_t jv[PBF_LANES];
    pbf_vf dsum = zero;
    for (uint32_t k_ = 0; k_ < n_; k_ += PBF_LANES, pc += PBF_LANES) {
        decode_chunk(c_ + CODE_BYTES(k_), nb->begin, n_ - k_, jv);
        const pbf_vf ps = vf_load(pc);
        pbf_vf xj, yj, zj, vxj, vyj, vzj;
        load_neighbours(P, jv, QX, QY, QZ, NULL, &xj, &yj, &zj, NULL);
        const pbf_vf pdx = xi - xj, pdy = yi - yj, pdz = zi - zj;
        load_neighbours(PV, jv, VX, VY, VZ, NULL, &vxj, &vyj, &vzj, NULL);
        const pbf_vi in = ps != zero;
        pbf_vf f = vol * ps;
        pbf_vf ux = vf_and(vxi - vxj, in), uy = vf_and(vyi - vyj, in), uz = vf_and(vzi - vzj, in);
        dsum += vf_and(f * pdx, in) * ux + vf_and(f * pdy, in) * uy + vf_and(f * pdz, in) * uz;
    }
    return vf_hsum(dsum);
}

#if PBF_PAIRS
/* density_grad_sums_pairs of particles i and i + 1 at once (lanes 0-7: i, 8-15: i + 1; the lists
 * built, P the packed positions), bit-identical to it, each particle's gradient factors into its
 * own pair cache (pca, pcb: its first chunk); with PV (the packed velocities) also the neighbour
 * sums of rate_from_pairs from the factors just computed (d[0], d[1]; the wall terms are the
 * caller's), in the same lanes and order, so one gather of x_j serves both. out[p] = {rho, g_x,
 * g_y, g_z, s} of particle i + p. */
static inline PBF_SIMD_INLINE void factor_pair2(pbf_world *w, int i, const float *P,
                                                const float *PV, nb_ranges *ca, nb_ranges *cb,
                                                float *pca, float *pcb, float out[2][5],
                                                float d[2]) {
    const pbf_sph_consts *k = &w->k;
    const pbf_vf16 h2v = vf16_set1(k->h2), vol = vf16_set1(k->volume), zero = vf16_set1(0.0f);
    const int cubic = k->cubic != 0.0f;
    const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
    const pbf_vf16 vxi = vf16_join(vf_set1(VX[i]), vf_set1(VX[i + 1]));
    const pbf_vf16 vyi = vf16_join(vf_set1(VY[i]), vf_set1(VY[i + 1]));
    const pbf_vf16 vzi = vf16_join(vf_set1(VZ[i]), vf_set1(VZ[i + 1]));
    pbf_vf16 rho = zero, gx = zero, gy = zero, gz = zero, s2 = zero, dsum = zero;
    FOR_NEIGHBOURS_PAIR(w, i, ca, cb, w->qx, w->qy, w->qz,
        pbf_vf16 xj, yj, zj;
        load_packed16(P, jv, &xj, &yj, &zj, NULL);
        const pbf_vf16 dx = qxi - xj, dy = qyi - yj, dz = qzi - zj;
        const pbf_vf16 r2 = dx * dx + dy * dy + dz * dz;
        const pbf_vi16 in = valid & (r2 < h2v);
        rho += v16_kw(k, r2, in, cubic);
        const pbf_vf16 sp = v16_kgrad(k, r2, in, cubic);
        const pbf_vf16 f = vol * sp;
        const pbf_vf16 ax = vf16_and(f * dx, in), ay = vf16_and(f * dy, in),
                       az = vf16_and(f * dz, in);
        gx += ax;
        gy += ay;
        gz += az;
        s2 += ax * ax + ay * ay + az * az;
        if (la_) vf_store(pca + k_, vf16_lo(sp));
        if (lb_) vf_store(pcb + k_, vf16_hi(sp));
        if (PV) { /* rate_from_pairs' terms: its `in` is the cached factor's (sp is +0 in the
                   * lanes of a list that has ended, as FOR_PAIRS_PAIR's ps) */
            pbf_vf16 vxj, vyj, vzj;
            load_packed16(PV, jv, &vxj, &vyj, &vzj, NULL);
            const pbf_vi16 inp = sp != zero;
            const pbf_vf16 ux = vf16_and(vxi - vxj, inp), uy = vf16_and(vyi - vyj, inp),
                           uz = vf16_and(vzi - vzj, inp);
            dsum += vf16_and(f * dx, inp) * ux + vf16_and(f * dy, inp) * uy +
                    vf16_and(f * dz, inp) * uz;
        }
    );
    out[0][0] = vf_hsum(vf16_lo(rho)), out[1][0] = vf_hsum(vf16_hi(rho));
    out[0][1] = vf_hsum(vf16_lo(gx)), out[1][1] = vf_hsum(vf16_hi(gx));
    out[0][2] = vf_hsum(vf16_lo(gy)), out[1][2] = vf_hsum(vf16_hi(gy));
    out[0][3] = vf_hsum(vf16_lo(gz)), out[1][3] = vf_hsum(vf16_hi(gz));
    out[0][4] = vf_hsum(vf16_lo(s2)), out[1][4] = vf_hsum(vf16_hi(s2));
    d[0] = vf_hsum(vf16_lo(dsum)), d[1] = vf_hsum(vf16_hi(dsum));
}
#endif

/* The neighbour sums of DFSPH's factor and IISPH's diagonal at particle i (density_grad_sums:
 * rho, g, s), with the pair cache PC when there is one (its gradient factors stored), two
 * particles at a time where the lists allow (i even computes i and i + 1 into o2, d2; i odd takes
 * them); with PV also D_i of the current velocities into SZ[i] (the wall term from gw). The
 * caller's sweep starts its chunks at even indices. */
static inline PBF_SIMD_INLINE void grad_sums_cached(pbf_world *w, int i, int n, const float *P,
                                                   const float *PV, float *PC, nb_ranges *cache,
                                                   nb_ranges *cache_b, float *rho, float g[3],
                                                   float *s2, float o2[2][5], float d2[2],
                                                   float *SZ, const float gw[3]) {
    const uint32_t *PO = LISTS(w)->pair_off;
#if PBF_PAIRS
    /* the sweep's chunks start even: i even takes i and i + 1 */
    if (PC && P && LISTS(w)->ok && ((i & 1) == 0 ? i + 1 < n : 1)) {
        if ((i & 1) == 0)
            factor_pair2(w, i, P, PV, cache, cache_b, PC + (size_t)PO[i] * PBF_LANES,
                         PC + (size_t)PO[i + 1] * PBF_LANES, o2, d2);
        const int h = i & 1;
        *rho = o2[h][0], g[0] = o2[h][1], g[1] = o2[h][2], g[2] = o2[h][3], *s2 = o2[h][4];
        if (PV) SZ[i] = d2[h] + w->vx[i] * gw[0] + w->vy[i] * gw[1] + w->vz[i] * gw[2];
        return;
    }
#else
    (void)n, (void)cache_b, (void)o2, (void)d2;
#endif
    if (PC) {
        density_grad_sums_pairs(w, i, rho, g, s2, P, cache, PC + (size_t)PO[i] * PBF_LANES);
        if (PV) /* as density_rate_pairs adds the wall term */
            SZ[i] = rate_from_pairs(w, i, P, PV, cache, PC + (size_t)PO[i] * PBF_LANES) +
                    w->vx[i] * gw[0] + w->vy[i] * gw[1] + w->vz[i] * gw[2];
    } else
        density_grad_sums(w, i, rho, g, s2, P, cache, w->k.cubic != 0.0f);
}


/* D_i = sum_j V (v_i - v_j) . grad W_ij + v_i . grad wall_i, the rate of change of rho_i / rho_0
 * from the current velocities (the wall is at rest), with gw the wall gradient at x_i. */
static inline PBF_SIMD_INLINE float density_rate(pbf_world *w, int i, const float gw[3],
                                                const float *P, const float *PV,
                                                nb_ranges *cache) {
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
    const pbf_sph_consts *k = &w->k;
    const pbf_vf h2v = vf_set1(k->h2);
    const pbf_vf vol = vf_set1(w->k.volume);
    const pbf_vf xi = vf_set1(QX[i]), yi = vf_set1(QY[i]), zi = vf_set1(QZ[i]);
    const pbf_vf vxi = vf_set1(VX[i]), vyi = vf_set1(VY[i]), vzi = vf_set1(VZ[i]);
    pbf_vf dsum = vf_set1(0.0f);
    FOR_NEIGHBOURS_R(w, i, cache,
        pbf_vf xj, yj, zj, vxj, vyj, vzj;
        load_neighbours(P, jv, QX, QY, QZ, NULL, &xj, &yj, &zj, NULL);
        load_neighbours(PV, jv, VX, VY, VZ, NULL, &vxj, &vyj, &vzj, NULL);
        pbf_vf dx = xi - xj, dy = yi - yj, dz = zi - zj;
        pbf_vf r2 = dx * dx + dy * dy + dz * dz;
        pbf_vi in = valid & (r2 < h2v);
        pbf_vf f = vol * v_kgrad(k, r2, in, k->cubic != 0.0f);
        pbf_vf ux = vf_and(vxi - vxj, in), uy = vf_and(vyi - vyj, in), uz = vf_and(vzi - vzj, in);
        dsum += vf_and(f * dx, in) * ux + vf_and(f * dy, in) * uy + vf_and(f * dz, in) * uz;
    );
    return vf_hsum(dsum) + VX[i] * gw[0] + VY[i] * gw[1] + VZ[i] * gw[2];
}

/* density_rate with the gradient factors from the pair cache. */
static inline PBF_SIMD_INLINE float density_rate_pairs(pbf_world *w, int i, const float gw[3],
                                                      const float *P, const float *PV,
                                                      nb_ranges *cache) {
    const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
    const pbf_vf vol = vf_set1(w->k.volume);
    const pbf_vf vxi = vf_set1(VX[i]), vyi = vf_set1(VY[i]), vzi = vf_set1(VZ[i]);
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const pbf_vf xi = vf_set1(QX[i]), yi = vf_set1(QY[i]), zi = vf_set1(QZ[i]);
    pbf_vf dsum = vf_set1(0.0f);
    FOR_PAIRS(w, i, cache,
        pbf_vf xj, yj, zj, vxj, vyj, vzj;
        load_neighbours(P, jv, QX, QY, QZ, NULL, &xj, &yj, &zj, NULL);
        const pbf_vf pdx = xi - xj, pdy = yi - yj, pdz = zi - zj;
        load_neighbours(PV, jv, VX, VY, VZ, NULL, &vxj, &vyj, &vzj, NULL);
        const pbf_vi in = ps != vf_set1(0.0f);
        pbf_vf f = vol * ps;
        pbf_vf ux = vf_and(vxi - vxj, in), uy = vf_and(vyi - vyj, in), uz = vf_and(vzi - vzj, in);
        dsum += vf_and(f * pdx, in) * ux + vf_and(f * pdy, in) * uy + vf_and(f * pdz, in) * uz;
    );
    return vf_hsum(dsum) + VX[i] * gw[0] + VY[i] * gw[1] + VZ[i] * gw[2];
}

#if PBF_PAIRS
/* The neighbour sums of density_rate_pairs of particles i and i + 1 (out[0], out[1]; without the
 * wall term, which each particle adds), bit-identical to it. */
static inline PBF_SIMD_INLINE void density_rate_pairs2(pbf_world *w, int i, const float *P,
                                                      const float *PV, nb_ranges *ca,
                                                      nb_ranges *cb, float out[2]) {
    const float *restrict VX = w->vx, *restrict VY = w->vy, *restrict VZ = w->vz;
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const pbf_vf16 vol = vf16_set1(w->k.volume), zero = vf16_set1(0.0f);
    const pbf_vf16 vxi = vf16_join(vf_set1(VX[i]), vf_set1(VX[i + 1]));
    const pbf_vf16 vyi = vf16_join(vf_set1(VY[i]), vf_set1(VY[i + 1]));
    const pbf_vf16 vzi = vf16_join(vf_set1(VZ[i]), vf_set1(VZ[i + 1]));
    const pbf_vf16 xi = vf16_join(vf_set1(QX[i]), vf_set1(QX[i + 1]));
    const pbf_vf16 yi = vf16_join(vf_set1(QY[i]), vf_set1(QY[i + 1]));
    const pbf_vf16 zi = vf16_join(vf_set1(QZ[i]), vf_set1(QZ[i + 1]));
    pbf_vf16 dsum = zero;
    FOR_PAIRS_PAIR(w, i, ca, cb,
        pbf_vf16 xj, yj, zj, vxj, vyj, vzj;
        load_packed16(P, jv, &xj, &yj, &zj, NULL);
        const pbf_vf16 pdx = xi - xj, pdy = yi - yj, pdz = zi - zj;
        load_packed16(PV, jv, &vxj, &vyj, &vzj, NULL);
        const pbf_vi16 in = ps != zero;
        pbf_vf16 f = vol * ps;
        pbf_vf16 ux = vf16_and(vxi - vxj, in), uy = vf16_and(vyi - vyj, in),
                 uz = vf16_and(vzi - vzj, in);
        dsum += vf16_and(f * pdx, in) * ux + vf16_and(f * pdy, in) * uy + vf16_and(f * pdz, in) * uz;
    );
    out[0] = vf_hsum(vf16_lo(dsum));
    out[1] = vf_hsum(vf16_hi(dsum));
}
#endif

/* D_i of the current velocities for the measures of DFSPH and IISPH (the wall term from gw):
 * from the pair cache when `pairs`, two particles at a time where P and PV are packed (i even
 * computes i and i + 1, i odd takes d2[1]; the caller's sweep starts its chunks at even
 * indices). */
static inline PBF_SIMD_INLINE float rate_cached(pbf_world *w, int i, int n, int pairs,
                                               const float *P, const float *PV, nb_ranges *cache,
                                               nb_ranges *cache_b, float d2[2],
                                               const float gw[3]) {
#if PBF_PAIRS
    if (pairs && P && PV && ((i & 1) == 0 ? i + 1 < n : 1)) {
        if ((i & 1) == 0) density_rate_pairs2(w, i, P, PV, cache, cache_b, d2);
        return d2[i & 1] + w->vx[i] * gw[0] + w->vy[i] * gw[1] + w->vz[i] * gw[2];
    }
#else
    (void)n, (void)cache_b, (void)d2;
#endif
    return pairs ? density_rate_pairs(w, i, gw, P, PV, cache) : density_rate(w, i, gw, P, PV, cache);
}

#endif /* PBF_SOLVERS_SPH_CPU_H */
