/*
 * The GPU kernels of pbf: every stage of the step (src/core.c) on device buffers, one work-item
 * per particle (per cell for the grid's cell passes). Compiled as OpenCL C 1.2 by the OpenCL
 * backend (backends/opencl/opencl.c; CMake embeds this file and the headers it includes into the
 * library) and as CUDA by a .cu file that #includes it. The portability macros are in
 * gpu_prelude.h; the SPH and wall formulas are those of src/sph/, the same functions the CPU
 * backend (the reference, backends/cpu/cpu.c) runs.
 *
 * Layout: structure of arrays, one buffer per row of the field registry (src/fields.h) except the
 * CPU's neighbour-list offsets. No neighbour lists: a neighbour loop visits the 9 contiguous
 * index ranges of the 27 cells around the particle's cell (PBF_NEIGHBOURS_BEGIN), as
 * pbf_grid_neighbour_ranges of src/internal.h, in the same order, and every sum over neighbours
 * runs in that fixed order: results are bit-identical from run to run on one device.
 *
 * The grid (stage "grid"): cell key and rank per particle with an atomic histogram, exclusive
 * prefix scan of the counts (work-group scans, a scan of the block sums, add), scatter to
 * start[key] + rank, then each cell's slice of the permutation sorted by old index (the atomics
 * hand out ranks in any order): the result is the CPU's stable counting sort, exactly. A gather
 * then moves every sorted field to its new order, and the host swaps the buffer handles.
 *
 * Non-finite values: a stage atomic_min's the index of a particle for which it produced one into
 * its launch's slot of `bad` (deterministic); pbf_capture_bad keeps the first one, with its id and
 * position, for the host's single read at the end of the step.
 */
#include "gpu_prelude.h"

/* ---- the grid ------------------------------------------------------------------------------- */

/* Cell coordinate along one axis, clamped to the grid: src/grid.c's axis_cell, in double where
 * the device has it (PBF_CELL_FP64), so the cell of a particle is the CPU's, never one off. In
 * float (devices without double) a particle within float rounding of a cell face may land in the
 * neighbouring cell: the sort then differs from the CPU's, but no neighbour is lost as long as
 * |coordinate - origin| * 1e-7 stays far below the 1e-4 h margin of the cell size. */
PBF_FN int pbf_gpu_axis_cell(float v, pbf_gpu_real origin, pbf_gpu_real inv, int dim) {
    pbf_gpu_real f = ((pbf_gpu_real)v - origin) * inv;
    if (!(f >= (pbf_gpu_real)0)) return 0;
    if (f >= (pbf_gpu_real)dim) return dim - 1;
    return (int)f;
}

/* Squared distance to a face of the particle's own cell from its signed distance; 0 when it is
 * negative or NaN (never a reason to skip). */
PBF_FN float pbf_gpu_face2(float d) { return d > 0.0f ? d * d : 0.0f; }

/* The neighbours of particle i in the step's neighbour sets (Algorithm 1, line 6): every j of
 * the 9 contiguous index ranges of the 27 cells around `cell`, z then y ascending and x ascending
 * inside a range (the order of pbf_grid_neighbour_ranges), with |x*_i0 - x*_j0| < h at the
 * positions the grid was built on (q0; (x0, y0, z0) is particle i's). The CPU backend's neighbour
 * lists hold exactly these pairs; the stages then take those with |x*_i - x*_j| < h at the
 * current positions, as the CPU's do.
 * A cell whose box is farther than P.reach from x*_i0 (its faces in float, the margin of reach
 * covering their rounding, see opencl.c) cannot hold such a j and is skipped: about a quarter of
 * the candidates, with the same neighbours in the same order. The distance to a face of the
 * particle's own cell counts as 0 when the particle lies outside it (border cells also hold the
 * particles beyond the grid) or is NaN. */
#define PBF_NEIGHBOURS_BEGIN(P, start, cell, j, q0x, q0y, q0z, x0, y0, z0)                         \
    {                                                                                              \
        const int nx_ = (P).dim[0], ny_ = (P).dim[1], nz_ = (P).dim[2];                            \
        const int cx_ = (int)((cell) % (unsigned int)nx_);                                         \
        const int cy_ = (int)(((cell) / (unsigned int)nx_) % (unsigned int)ny_);                   \
        const int cz_ = (int)((cell) / ((unsigned int)nx_ * (unsigned int)ny_));                   \
        const int x0_ = cx_ > 0 ? cx_ - 1 : cx_, x1_ = cx_ < nx_ - 1 ? cx_ + 1 : cx_;              \
        const int y0_ = cy_ > 0 ? cy_ - 1 : cy_, y1_ = cy_ < ny_ - 1 ? cy_ + 1 : cy_;              \
        const int z0_ = cz_ > 0 ? cz_ - 1 : cz_, z1_ = cz_ < nz_ - 1 ? cz_ + 1 : cz_;              \
        const float lx_ = (P).origin[0] + (float)cx_ * (P).cell_size;                                   \
        const float ly_ = (P).origin[1] + (float)cy_ * (P).cell_size;                                   \
        const float lz_ = (P).origin[2] + (float)cz_ * (P).cell_size;                                   \
        const float dlx_ = pbf_gpu_face2((x0) - lx_), dhx_ = pbf_gpu_face2(lx_ + (P).cell_size - (x0)); \
        const float dly_ = pbf_gpu_face2((y0) - ly_), dhy_ = pbf_gpu_face2(ly_ + (P).cell_size - (y0)); \
        const float dlz_ = pbf_gpu_face2((z0) - lz_), dhz_ = pbf_gpu_face2(lz_ + (P).cell_size - (z0)); \
        for (int z_ = z0_; z_ <= z1_; ++z_) {                                                      \
            const float bz_ = z_ < cz_ ? dlz_ : (z_ > cz_ ? dhz_ : 0.0f);                          \
            for (int y_ = y0_; y_ <= y1_; ++y_) {                                                  \
                const float byz_ = bz_ + (y_ < cy_ ? dly_ : (y_ > cy_ ? dhy_ : 0.0f));             \
                if (!(byz_ < (P).reach2)) continue;                                                \
                const unsigned int row_ =                                                          \
                    ((unsigned int)z_ * (unsigned int)ny_ + (unsigned int)y_) * (unsigned int)nx_; \
                for (int xc_ = x0_; xc_ <= x1_; ++xc_) {                                           \
                    if (!(byz_ + (xc_ < cx_ ? dlx_ : (xc_ > cx_ ? dhx_ : 0.0f)) < (P).reach2))     \
                        continue;                                                                  \
                    const unsigned int end_ = (start)[row_ + (unsigned int)xc_ + 1u];              \
                    for (unsigned int j = (start)[row_ + (unsigned int)xc_]; j < end_; ++j) {      \
                        const float ex_ = (x0) - (q0x)[j], ey_ = (y0) - (q0y)[j],                  \
                                    ez_ = (z0) - (q0z)[j];                                         \
                        if (!(ex_ * ex_ + ey_ * ey_ + ez_ * ez_ < (P).k.h2)) continue;
#define PBF_NEIGHBOURS_END                                                                         \
    }                                                                                              \
    }                                                                                              \
    }                                                                                              \
    }                                                                                              \
    }

/* Cell of x* and its rank among the particles of the cell (in atomic order); counts[] (ncells + 1
 * entries) is zero on entry and holds the particles per cell on exit. */
PBF_KERNEL pbf_k_cells(const pbf_gpu_params P, pbf_gpu_real ox, pbf_gpu_real oy, pbf_gpu_real oz,
                     pbf_gpu_real inv_cell, const PBF_GLOBAL float *qx,
                     const PBF_GLOBAL float *qy, const PBF_GLOBAL float *qz,
                     PBF_GLOBAL unsigned int *cell, PBF_GLOBAL unsigned int *rank,
                     PBF_GLOBAL unsigned int *counts) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    const int cx = pbf_gpu_axis_cell(qx[i], ox, inv_cell, P.dim[0]);
    const int cy = pbf_gpu_axis_cell(qy[i], oy, inv_cell, P.dim[1]);
    const int cz = pbf_gpu_axis_cell(qz[i], oz, inv_cell, P.dim[2]);
    const unsigned int key =
        ((unsigned int)cz * (unsigned int)P.dim[1] + (unsigned int)cy) * (unsigned int)P.dim[0] +
        (unsigned int)cx;
    cell[i] = key;
    rank[i] = PBF_ATOMIC_ADD_U32(&counts[key], 1u);
}

/* Exclusive scan of data[0 .. count) in blocks of 2 * PBF_SCAN_WG (Blelloch's work-efficient
 * scan in shared memory); block b's total goes to sums[b]. */
PBF_KERNEL pbf_k_scan_blocks(PBF_GLOBAL unsigned int *data, unsigned int count,
                           PBF_GLOBAL unsigned int *sums) {
    PBF_LOCAL_ARRAY(unsigned int, t, 2 * PBF_SCAN_WG);
    const int lid = PBF_LID;
    const unsigned int base = (unsigned int)PBF_GROUP * (2u * PBF_SCAN_WG);
    const unsigned int a = base + (unsigned int)lid, b = a + PBF_SCAN_WG;
    t[lid] = a < count ? data[a] : 0u;
    t[lid + PBF_SCAN_WG] = b < count ? data[b] : 0u;
    int offset = 1;
    for (int d = PBF_SCAN_WG; d > 0; d >>= 1) { /* up-sweep: partial sums in a tree */
        PBF_BARRIER;
        if (lid < d) {
            const int ai = offset * (2 * lid + 1) - 1, bi = offset * (2 * lid + 2) - 1;
            t[bi] += t[ai];
        }
        offset <<= 1;
    }
    PBF_BARRIER;
    if (lid == 0) {
        sums[PBF_GROUP] = t[2 * PBF_SCAN_WG - 1];
        t[2 * PBF_SCAN_WG - 1] = 0u;
    }
    for (int d = 1; d <= PBF_SCAN_WG; d <<= 1) { /* down-sweep */
        offset >>= 1;
        PBF_BARRIER;
        if (lid < d) {
            const int ai = offset * (2 * lid + 1) - 1, bi = offset * (2 * lid + 2) - 1;
            const unsigned int x = t[ai];
            t[ai] = t[bi];
            t[bi] += x;
        }
    }
    PBF_BARRIER;
    if (a < count) data[a] = t[lid];
    if (b < count) data[b] = t[lid + PBF_SCAN_WG];
}

/* Adds the scanned block sums to the blocks' exclusive scans. */
PBF_KERNEL pbf_k_scan_add(PBF_GLOBAL unsigned int *data, unsigned int count,
                        const PBF_GLOBAL unsigned int *sums) {
    const int i = PBF_GID;
    if ((unsigned int)i >= count) return;
    data[i] += sums[(unsigned int)i / (2u * PBF_SCAN_WG)];
}

/* perm[start[cell] + rank] = i: the particles of a cell form its slice, in atomic order. */
PBF_KERNEL pbf_k_scatter(const pbf_gpu_params P, const PBF_GLOBAL unsigned int *cell,
                       const PBF_GLOBAL unsigned int *rank, const PBF_GLOBAL unsigned int *start,
                       PBF_GLOBAL unsigned int *perm) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    perm[start[cell[i]] + rank[i]] = (unsigned int)i;
}

/* Sorts each cell's slice of the permutation by old index (insertion sort, one work-item per
 * cell): the stable counting sort of the CPU, independent of the order of the atomics. */
PBF_KERNEL pbf_k_sort_cells(unsigned int ncells, const PBF_GLOBAL unsigned int *start,
                          PBF_GLOBAL unsigned int *perm) {
    const int c = PBF_GID;
    if ((unsigned int)c >= ncells) return;
    const unsigned int b = start[c], e = start[c + 1];
    for (unsigned int i = b + 1u; i < e; ++i) {
        const unsigned int v = perm[i];
        unsigned int j = i;
        while (j > b && perm[j - 1u] > v) {
            perm[j] = perm[j - 1u];
            --j;
        }
        perm[j] = v;
    }
}

/* dst_f[k] = src_f[perm[k]] for nf (1 to 4) fields, moved as 32-bit patterns. map >= 0: also
 * follows the predict stage's non-finite particle (slot 0, an old index) into slot `map`. */
PBF_KERNEL pbf_k_gather(int n, const PBF_GLOBAL unsigned int *perm, int nf,
                      const PBF_GLOBAL unsigned int *s0, PBF_GLOBAL unsigned int *d0,
                      const PBF_GLOBAL unsigned int *s1, PBF_GLOBAL unsigned int *d1,
                      const PBF_GLOBAL unsigned int *s2, PBF_GLOBAL unsigned int *d2,
                      const PBF_GLOBAL unsigned int *s3, PBF_GLOBAL unsigned int *d3,
                      PBF_GLOBAL int *bad, int map) {
    const int k = PBF_GID;
    if (k >= n) return;
    const unsigned int j = perm[k];
    d0[k] = s0[j];
    if (nf > 1) d1[k] = s1[j];
    if (nf > 2) d2[k] = s2[j];
    if (nf > 3) d3[k] = s3[j];
    if (map >= 0 && (int)j == bad[0]) bad[map] = k;
}

/* ---- the stages ----------------------------------------------------------------------------- */

/* v += dt g, |v| <= vmax, x* = x + dt v  (cpu.c stage_predict) */
PBF_KERNEL pbf_k_predict(const pbf_gpu_params P, const PBF_GLOBAL float *px,
                       const PBF_GLOBAL float *py, const PBF_GLOBAL float *pz,
                       PBF_GLOBAL float *vx, PBF_GLOBAL float *vy, PBF_GLOBAL float *vz,
                       PBF_GLOBAL float *qx, PBF_GLOBAL float *qy, PBF_GLOBAL float *qz,
                       PBF_GLOBAL int *bad, int slot) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    float ux = vx[i] + P.gdt[0], uy = vy[i] + P.gdt[1], uz = vz[i] + P.gdt[2];
    pbf_limit_speed(&ux, &uy, &uz, P.vmax);
    vx[i] = ux;
    vy[i] = uy;
    vz[i] = uz;
    const float x = px[i] + P.dt * ux, y = py[i] + P.dt * uy, z = pz[i] + P.dt * uz;
    qx[i] = x;
    qy[i] = y;
    qz[i] = z;
    if (!isfinite(x + y + z)) PBF_ATOMIC_MIN_I32(&bad[slot], i);
}

/* Density (eq. 2) with the wall at x*, after adding particles or restoring (cpu.c density_at). */
PBF_KERNEL pbf_k_density(const pbf_gpu_params P, const PBF_GLOBAL float *qx,
                       const PBF_GLOBAL float *qy, const PBF_GLOBAL float *qz,
                       const PBF_GLOBAL unsigned int *cell, const PBF_GLOBAL unsigned int *start,
                       const PBF_GLOBAL float *q0x, const PBF_GLOBAL float *q0y,
                       const PBF_GLOBAL float *q0z,
                       const PBF_GLOBAL float *F, const PBF_GLOBAL float *G,
                       const PBF_GLOBAL pbf_wall_box *boxes, PBF_GLOBAL float *density) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    const pbf_sph_consts k = P.k;
    const pbf_walls_consts wc = P.wc;
    const float xi = qx[i], yi = qy[i], zi = qz[i];
    float p[3] = {xi, yi, zi}, gw[3];
    const float wall = pbf_wall_density(&wc, F, G, boxes, p, gw);
    const unsigned int c = cell[i];
    const float x0i = q0x[i], y0i = q0y[i], z0i = q0z[i];
    float rho = 0.0f;
    PBF_NEIGHBOURS_BEGIN(P, start, c, j, q0x, q0y, q0z, x0i, y0i, z0i)
        const float dx = xi - qx[j], dy = yi - qy[j], dz = zi - qz[j];
        const float r2 = dx * dx + dy * dy + dz * dz;
        if (r2 < k.h2) rho += pbf_poly6(&k, r2);
    PBF_NEIGHBOURS_END
    density[i] = k.mass * rho + k.rest_density * wall;
}

/* rho_i (eq. 2) with the wall, C_i (eq. 1, clamped at 0 when unilateral), lambda_i (eq. 11). */
PBF_KERNEL pbf_k_lambda(const pbf_gpu_params P, const PBF_GLOBAL float *qx,
                      const PBF_GLOBAL float *qy, const PBF_GLOBAL float *qz,
                      const PBF_GLOBAL unsigned int *cell, const PBF_GLOBAL unsigned int *start,
                       const PBF_GLOBAL float *q0x, const PBF_GLOBAL float *q0y,
                       const PBF_GLOBAL float *q0z,
                      const PBF_GLOBAL float *F, const PBF_GLOBAL float *G,
                      const PBF_GLOBAL pbf_wall_box *boxes, PBF_GLOBAL float *density,
                      PBF_GLOBAL float *lambda, PBF_GLOBAL int *bad, int slot) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    const pbf_sph_consts k = P.k;
    const pbf_walls_consts wc = P.wc;
    const float xi = qx[i], yi = qy[i], zi = qz[i];
    float p[3] = {xi, yi, zi}, gw[3];
    const float wall = pbf_wall_density(&wc, F, G, boxes, p, gw);
    const unsigned int c = cell[i];
    const float x0i = q0x[i], y0i = q0y[i], z0i = q0z[i];
    float rho = 0.0f, gx = 0.0f, gy = 0.0f, gz = 0.0f, s2 = 0.0f;
    PBF_NEIGHBOURS_BEGIN(P, start, c, j, q0x, q0y, q0z, x0i, y0i, z0i)
        const float dx = xi - qx[j], dy = yi - qy[j], dz = zi - qz[j];
        const float r2 = dx * dx + dy * dy + dz * dz;
        if (r2 < k.h2) {
            rho += pbf_poly6(&k, r2);
            /* grad_{p_j} C_i = -V grad W(p_i - p_j) (eq. 8, k = j); zero vector for j = i */
            const float f = k.volume * pbf_spiky(&k, r2);
            const float ax = f * dx, ay = f * dy, az = f * dz;
            gx += ax;
            gy += ay;
            gz += az;
            s2 += ax * ax + ay * ay + az * az;
        }
    PBF_NEIGHBOURS_END
    const float gix = gw[0] + gx, giy = gw[1] + gy, giz = gw[2] + gz;
    const float r = k.mass * rho + k.rest_density * wall;
    density[i] = r;
    float cc = r * P.inv_rho0 - 1.0f; /* eq. 1 */
    if (P.unilateral && cc < 0.0f) cc = 0.0f;
    const float sum2 = s2 + gix * gix + giy * giy + giz * giz;
    const float l = -cc / (sum2 + P.eps_abs); /* eq. 11 */
    lambda[i] = l;
    if (!isfinite(l)) PBF_ATOMIC_MIN_I32(&bad[slot], i);
}

/* delta p_i with s_corr (eq. 12-14), the wall term and over-relaxation, into s. */
PBF_KERNEL pbf_k_delta_p(const pbf_gpu_params P, const PBF_GLOBAL float *qx,
                       const PBF_GLOBAL float *qy, const PBF_GLOBAL float *qz,
                       const PBF_GLOBAL unsigned int *cell, const PBF_GLOBAL unsigned int *start,
                       const PBF_GLOBAL float *q0x, const PBF_GLOBAL float *q0y,
                       const PBF_GLOBAL float *q0z,
                       const PBF_GLOBAL float *F, const PBF_GLOBAL float *G,
                       const PBF_GLOBAL pbf_wall_box *boxes, const PBF_GLOBAL float *lambda,
                       PBF_GLOBAL float *sx, PBF_GLOBAL float *sy, PBF_GLOBAL float *sz,
                       PBF_GLOBAL int *bad, int slot) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    const pbf_sph_consts k = P.k;
    const pbf_walls_consts wc = P.wc;
    const float xi = qx[i], yi = qy[i], zi = qz[i], li = lambda[i];
    float p[3] = {xi, yi, zi}, gw[3];
    pbf_wall_density(&wc, F, G, boxes, p, gw);
    const unsigned int c = cell[i];
    const float x0i = q0x[i], y0i = q0y[i], z0i = q0z[i];
    float ax = 0.0f, ay = 0.0f, az = 0.0f;
    PBF_NEIGHBOURS_BEGIN(P, start, c, j, q0x, q0y, q0z, x0i, y0i, z0i)
        const float dx = xi - qx[j], dy = yi - qy[j], dz = zi - qz[j];
        const float r2 = dx * dx + dy * dy + dz * dz;
        if (r2 < k.h2) {
            const float scorr = P.ks * pbf_scorr_shape(pbf_poly6(&k, r2), P.inv_wdq, P.scorr_n);
            const float f = (li + lambda[j] + scorr) * k.volume * pbf_spiky(&k, r2); /* eq. 13 */
            ax += f * dx;
            ay += f * dy;
            az += f * dz;
        }
    PBF_NEIGHBOURS_END
    const float dpx = P.omega * (li * gw[0] + ax), dpy = P.omega * (li * gw[1] + ay),
                dpz = P.omega * (li * gw[2] + az);
    sx[i] = dpx; /* eq. 14 */
    sy[i] = dpy;
    sz[i] = dpz;
    if (!isfinite(dpx + dpy + dpz)) PBF_ATOMIC_MIN_I32(&bad[slot], i);
}

/* x* += delta p, collisions with the boxes and the container, friction. */
PBF_KERNEL pbf_k_collide(const pbf_gpu_params P, PBF_GLOBAL float *qx, PBF_GLOBAL float *qy,
                       PBF_GLOBAL float *qz, const PBF_GLOBAL float *sx,
                       const PBF_GLOBAL float *sy, const PBF_GLOBAL float *sz,
                       const PBF_GLOBAL float *px, const PBF_GLOBAL float *py,
                       const PBF_GLOBAL float *pz, const PBF_GLOBAL pbf_wall_box *boxes,
                       PBF_GLOBAL int *bad, int slot) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    const pbf_walls_consts wc = P.wc;
    const float x = qx[i] + sx[i], y = qy[i] + sy[i], z = qz[i] + sz[i];
    if (!isfinite(x + y + z)) PBF_ATOMIC_MIN_I32(&bad[slot], i); /* before the clamp hides it */
    float q[3] = {x, y, z}, o[3] = {px[i], py[i], pz[i]};
    pbf_collide(&wc, boxes, q, o);
    qx[i] = q[0];
    qy[i] = q[1];
    qz[i] = q[2];
}

/* v = (x* - x) / dt, |v| <= vmax (the first half of stage "velocity"). */
PBF_KERNEL pbf_k_velocity(const pbf_gpu_params P, const PBF_GLOBAL float *qx,
                        const PBF_GLOBAL float *qy, const PBF_GLOBAL float *qz,
                        const PBF_GLOBAL float *px, const PBF_GLOBAL float *py,
                        const PBF_GLOBAL float *pz, PBF_GLOBAL float *vx, PBF_GLOBAL float *vy,
                        PBF_GLOBAL float *vz, PBF_GLOBAL int *bad, int slot) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    float ux = (qx[i] - px[i]) * P.inv_dt, uy = (qy[i] - py[i]) * P.inv_dt,
          uz = (qz[i] - pz[i]) * P.inv_dt;
    pbf_limit_speed(&ux, &uy, &uz, P.vmax);
    vx[i] = ux;
    vy[i] = uy;
    vz[i] = uz;
    if (!isfinite(ux + uy + uz)) PBF_ATOMIC_MIN_I32(&bad[slot], i);
}

/* Vorticity omega_i (eq. 15) into s, |omega_i| into lambda, density at x* (second half of
 * "velocity"). */
PBF_KERNEL pbf_k_curl(const pbf_gpu_params P, const PBF_GLOBAL float *qx,
                    const PBF_GLOBAL float *qy, const PBF_GLOBAL float *qz,
                    const PBF_GLOBAL unsigned int *cell, const PBF_GLOBAL unsigned int *start,
                       const PBF_GLOBAL float *q0x, const PBF_GLOBAL float *q0y,
                       const PBF_GLOBAL float *q0z,
                    const PBF_GLOBAL float *F, const PBF_GLOBAL float *G,
                    const PBF_GLOBAL pbf_wall_box *boxes, const PBF_GLOBAL float *vx,
                    const PBF_GLOBAL float *vy, const PBF_GLOBAL float *vz,
                    PBF_GLOBAL float *density, PBF_GLOBAL float *sx, PBF_GLOBAL float *sy,
                    PBF_GLOBAL float *sz, PBF_GLOBAL float *omega, PBF_GLOBAL int *bad, int slot) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    const pbf_sph_consts k = P.k;
    const pbf_walls_consts wc = P.wc;
    const float xi = qx[i], yi = qy[i], zi = qz[i];
    const float vxi = vx[i], vyi = vy[i], vzi = vz[i];
    float p[3] = {xi, yi, zi}, gw[3];
    const float wall = pbf_wall_density(&wc, F, G, boxes, p, gw);
    const unsigned int c = cell[i];
    const float x0i = q0x[i], y0i = q0y[i], z0i = q0z[i];
    float rho = 0.0f, ox = 0.0f, oy = 0.0f, oz = 0.0f;
    PBF_NEIGHBOURS_BEGIN(P, start, c, j, q0x, q0y, q0z, x0i, y0i, z0i)
        const float dx = xi - qx[j], dy = yi - qy[j], dz = zi - qz[j];
        const float r2 = dx * dx + dy * dy + dz * dz;
        if (r2 < k.h2) {
            rho += pbf_poly6(&k, r2);
            /* omega_i = sum_j V grad_i W_ij x (v_j - v_i)  (eq. 15) */
            const float f = k.volume * pbf_spiky(&k, r2);
            const float gx = f * dx, gy = f * dy, gz = f * dz;
            const float ux = vx[j] - vxi, uy = vy[j] - vyi, uz = vz[j] - vzi;
            ox += gy * uz - gz * uy;
            oy += gz * ux - gx * uz;
            oz += gx * uy - gy * ux;
        }
    PBF_NEIGHBOURS_END
    density[i] = k.mass * rho + k.rest_density * wall;
    sx[i] = ox;
    sy[i] = oy;
    sz[i] = oz;
    const float w = PBF_SQRTF(ox * ox + oy * oy + oz * oz);
    omega[i] = w;
    if (!isfinite(w)) PBF_ATOMIC_MIN_I32(&bad[slot], i);
}

/* Vorticity confinement (eq. 16) and XSPH (eq. 17); the new velocity goes into `out` (the
 * position buffer, free now: the host then rotates the roles x <- x*, v <- out). */
PBF_KERNEL pbf_k_vorticity_xsph(const pbf_gpu_params P, const PBF_GLOBAL float *qx,
                              const PBF_GLOBAL float *qy, const PBF_GLOBAL float *qz,
                              const PBF_GLOBAL unsigned int *cell,
                              const PBF_GLOBAL unsigned int *start, const PBF_GLOBAL float *q0x,
                              const PBF_GLOBAL float *q0y, const PBF_GLOBAL float *q0z,
                              const PBF_GLOBAL float *vx,
                              const PBF_GLOBAL float *vy, const PBF_GLOBAL float *vz,
                              const PBF_GLOBAL float *sx, const PBF_GLOBAL float *sy,
                              const PBF_GLOBAL float *sz, const PBF_GLOBAL float *omega,
                              const PBF_GLOBAL float *density, PBF_GLOBAL float *outx,
                              PBF_GLOBAL float *outy, PBF_GLOBAL float *outz, PBF_GLOBAL int *bad,
                              int slot) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    const pbf_sph_consts k = P.k;
    const float xi = qx[i], yi = qy[i], zi = qz[i];
    const float vxs = vx[i], vys = vy[i], vzs = vz[i];
    const float oxi = sx[i], oyi = sy[i], ozi = sz[i], wi = omega[i];
    const unsigned int c = cell[i];
    const float x0i = q0x[i], y0i = q0y[i], z0i = q0z[i];
    float ex = 0.0f, ey = 0.0f, ez = 0.0f, ax = 0.0f, ay = 0.0f, az = 0.0f;
    PBF_NEIGHBOURS_BEGIN(P, start, c, j, q0x, q0y, q0z, x0i, y0i, z0i)
        const float dx = xi - qx[j], dy = yi - qy[j], dz = zi - qz[j];
        const float r2 = dx * dx + dy * dy + dz * dz;
        if (r2 < k.h2) {
            const float vj = k.mass / density[j];
            /* XSPH: sum_j (m / rho_j) (v_j - v_i) W_ij  (eq. 17); the j = i term is 0 */
            const float wk = vj * pbf_poly6(&k, r2);
            ax += wk * (vx[j] - vxs);
            ay += wk * (vy[j] - vys);
            az += wk * (vz[j] - vzs);
            /* eta = grad |omega| = sum_j V_j (|omega_j| - |omega_i|) grad_i W_ij  (eq. 16) */
            const float f = vj * (omega[j] - wi) * pbf_spiky(&k, r2);
            ex += f * dx;
            ey += f * dy;
            ez += f * dz;
        }
    PBF_NEIGHBOURS_END
    float ux = vxs + P.xsph * ax, uy = vys + P.xsph * ay, uz = vzs + P.xsph * az;
    const float el = PBF_SQRTF(ex * ex + ey * ey + ez * ez);
    if (P.vorticity > 0.0f && el > 1e-20f) {
        const float nx = ex / el, ny = ey / el, nz = ez / el;
        /* f = eps (N x omega), applied as an acceleration over dt */
        ux += P.dt * P.vorticity * (ny * ozi - nz * oyi);
        uy += P.dt * P.vorticity * (nz * oxi - nx * ozi);
        uz += P.dt * P.vorticity * (nx * oyi - ny * oxi);
    }
    pbf_limit_speed(&ux, &uy, &uz, P.vmax);
    outx[i] = ux;
    outy[i] = uy;
    outz[i] = uz;
    if (!isfinite(ux + uy + uz)) PBF_ATOMIC_MIN_I32(&bad[slot], i);
}

/* One work-item: the first slot in [from, to) holding a particle, with that particle's id and
 * position now, into *out unless an earlier launch already filled it (out->slot >= 0). Slot 0
 * (predict) holds an old index; slot `map` holds it in the sorted order. */
PBF_KERNEL pbf_k_capture_bad(const PBF_GLOBAL int *bad, int from, int to, int map,
                           const PBF_GLOBAL float *px, const PBF_GLOBAL float *py,
                           const PBF_GLOBAL float *pz, const PBF_GLOBAL unsigned int *id,
                           PBF_GLOBAL pbf_gpu_bad *out) {
    if (PBF_GID != 0 || out->slot >= 0) return;
    for (int s = from; s < to; ++s) {
        const int i = s == 0 ? bad[map] : bad[s];
        if (i == PBF_INT_MAX) continue;
        out->slot = s;
        out->index = i;
        out->id = id[i];
        out->x = px[i];
        out->y = py[i];
        out->z = pz[i];
        return;
    }
}

/* Statistics partials of one chunk of PBF_STATS_WG * PBF_STATS_PER_ITEM particles: sum and max
 * of max(rho / rho_0 - 1, 0), max speed^2 of finite particles, non-finite and escaped counts
 * (cpu.c stage_stats), reduced in a fixed tree order. */
PBF_KERNEL pbf_k_stats(const pbf_gpu_params P, const PBF_GLOBAL float *px,
                     const PBF_GLOBAL float *py, const PBF_GLOBAL float *pz,
                     const PBF_GLOBAL float *vx, const PBF_GLOBAL float *vy,
                     const PBF_GLOBAL float *vz, const PBF_GLOBAL float *density,
                     PBF_GLOBAL pbf_gpu_real *partial) {
    PBF_LOCAL_ARRAY(pbf_gpu_real, t_sum, PBF_STATS_WG);
    PBF_LOCAL_ARRAY(pbf_gpu_real, t_emax, PBF_STATS_WG);
    PBF_LOCAL_ARRAY(pbf_gpu_real, t_v2, PBF_STATS_WG);
    PBF_LOCAL_ARRAY(unsigned int, t_bad, PBF_STATS_WG);
    PBF_LOCAL_ARRAY(unsigned int, t_out, PBF_STATS_WG);
    const int lid = PBF_LID;
    const int base = PBF_GROUP * (PBF_STATS_WG * PBF_STATS_PER_ITEM);
    const float *lo = P.wc.lo, *hi = P.wc.hi;
    pbf_gpu_real sum = 0, emax = 0, v2max = 0;
    unsigned int nbad = 0u, nout = 0u;
    for (int m = 0; m < PBF_STATS_PER_ITEM; ++m) {
        const int i = base + m * PBF_STATS_WG + lid;
        if (i >= P.n) break;
        const float e = density[i] * P.inv_rho0 - 1.0f;
        if (e > 0.0f) {
            sum += (pbf_gpu_real)e;
            if ((pbf_gpu_real)e > emax) emax = (pbf_gpu_real)e;
        }
        const float v2 = vx[i] * vx[i] + vy[i] * vy[i] + vz[i] * vz[i];
        const float x = px[i], y = py[i], z = pz[i];
        if (!(isfinite(x) && isfinite(y) && isfinite(z) && isfinite(v2)))
            nbad += 1u;
        else if ((pbf_gpu_real)v2 > v2max)
            v2max = (pbf_gpu_real)v2;
        if (!(x >= lo[0] && x <= hi[0] && y >= lo[1] && y <= hi[1] && z >= lo[2] && z <= hi[2]))
            nout += 1u;
    }
    t_sum[lid] = sum;
    t_emax[lid] = emax;
    t_v2[lid] = v2max;
    t_bad[lid] = nbad;
    t_out[lid] = nout;
    for (int s = PBF_STATS_WG / 2; s > 0; s >>= 1) {
        PBF_BARRIER;
        if (lid < s) {
            t_sum[lid] += t_sum[lid + s];
            if (t_emax[lid + s] > t_emax[lid]) t_emax[lid] = t_emax[lid + s];
            if (t_v2[lid + s] > t_v2[lid]) t_v2[lid] = t_v2[lid + s];
            t_bad[lid] += t_bad[lid + s];
            t_out[lid] += t_out[lid + s];
        }
    }
    if (lid == 0) {
        PBF_GLOBAL pbf_gpu_real *out = partial + PBF_GROUP * PBF_STATS_VALUES;
        out[0] = t_sum[0];
        out[1] = t_emax[0];
        out[2] = t_v2[0];
        out[3] = (pbf_gpu_real)t_bad[0];
        out[4] = (pbf_gpu_real)t_out[0];
    }
}

/* The sizes of the structs shared with the host, which checks them when it opens the device. */
PBF_KERNEL pbf_k_layout(PBF_GLOBAL unsigned int *out) {
    if (PBF_GID != 0) return;
    out[0] = (unsigned int)sizeof(pbf_gpu_params);
    out[1] = (unsigned int)sizeof(pbf_wall_box);
    out[2] = (unsigned int)sizeof(pbf_gpu_bad);
}
