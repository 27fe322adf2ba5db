/*
 * What the CPU stages of several methods share beyond the backend's neighbour lists (nblist.h):
 * the density and gradient sums of PBF's lambda and of DFSPH's factor / IISPH's diagonal, the
 * solve's error measure, and the swap of two rows.
 */
#ifndef PBF_SOLVERS_COMMON_CPU_H
#define PBF_SOLVERS_COMMON_CPU_H

#include "backends/cpu/nblist.h"
#include "internal.h"

static inline void swapf(float **a, float **b) {
    float *t = *a;
    *a = *b;
    *b = t;
}

/* The neighbour sums of particle i at x* that PBF's lambda (eq. 11) and DFSPH's factor share:
 * sum_j W_ij, sum_j V grad W_ij (= -grad_{p_j} C_i, eq. 8) and sum_j |V grad W_ij|^2, with the
 * cubic spline where `cubic` (see v_kw), poly6 / spiky otherwise. */
static inline PBF_SIMD_INLINE void density_grad_sums(pbf_world *w, int i, float *rho_sum,
                                                     float g[3], float *s2_sum,
                                                     const float *restrict P, nb_ranges *cache,
                                                     const int cubic) {
    const float *restrict QX = w->qx, *restrict QY = w->qy, *restrict QZ = w->qz;
    const pbf_sph_consts *k = &w->k;
    const pbf_vf h2v = vf_set1(k->h2);
    const pbf_vf vol = vf_set1(k->volume);
    const pbf_vf xi = vf_set1(QX[i]), yi = vf_set1(QY[i]), zi = vf_set1(QZ[i]);
    pbf_vf rho = vf_set1(0.0f), gx = rho, gy = rho, gz = rho, s2 = rho;
    FOR_NEIGHBOURS_R(w, i, cache,
        pbf_vf xj, yj, zj;
        load_neighbours(P, jv, QX, QY, QZ, NULL, &xj, &yj, &zj, NULL);
        pbf_vf dx = xi - xj, dy = yi - yj, dz = zi - zj;
        pbf_vf r2 = dx * dx + dy * dy + dz * dz;
        pbf_vi in = valid & (r2 < h2v);
        rho += v_kw(k, r2, in, cubic);
        pbf_vf f = vol * v_kgrad(k, r2, in, cubic);
        /* masked products: a padding lane's dx may be NaN, and 0 * NaN is NaN */
        pbf_vf ax = vf_and(f * dx, in), ay = vf_and(f * dy, in), az = vf_and(f * dz, in);
        gx += ax;
        gy += ay;
        gz += az;
        s2 += ax * ax + ay * ay + az * az;
    );
    *rho_sum = vf_hsum(rho);
    g[0] = vf_hsum(gx);
    g[1] = vf_hsum(gy);
    g[2] = vf_hsum(gz);
    *s2_sum = vf_hsum(s2);
}

/* Mean of max(a_i * scale + offset, 0) over the particles, summed in index order (the order is
 * the cell order, which depends only on the state): deterministic for any thread count. */
#define EXCESS_CHUNKS 1024

/* Mean of max(a_i scale + offset, 0): sums of fixed chunks of particles (at most EXCESS_CHUNKS,
 * at least 4096 particles each) in parallel, added in chunk order, so that the result does not
 * depend on the thread count. The sum and the count go to w->solve_sum and w->solve_count; the
 * ghosts of a distributed run are left out (their values are not their owners'), and its hooks
 * combine the processes' sums. */
double pbf_cpu_mean_excess(pbf_world *w, const float *a, float scale, float offset);

#endif /* PBF_SOLVERS_COMMON_CPU_H */
