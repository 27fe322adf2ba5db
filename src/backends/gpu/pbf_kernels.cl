/*
 * The GPU kernels of pbf: every stage of the step (src/core.c) on device buffers, one work-item
 * per particle (per cell for the grid's cell passes). Compiled as OpenCL C 1.2 by the OpenCL
 * backend (backends/opencl/opencl.c; CMake embeds this file and the headers it includes into the
 * library) and as CUDA by backends/cuda/cuda.cu, which #includes it. The portability macros are
 * in gpu_prelude.h; the SPH and wall formulas are those of src/sph/, the same functions the CPU
 * backend (the reference, backends/cpu/cpu.c) runs.
 *
 * Layout: structure of arrays, one buffer per row of the field registry (src/fields.h) except the
 * CPU's neighbour-list offsets. No neighbour lists: a neighbour loop (PBF_FOR_NEIGHBOURS) visits
 * the 9 contiguous index ranges of the 27 cells around the particle's cell, as
 * pbf_grid_neighbour_ranges of src/internal.h, keeps the pairs that were within h when the grid
 * was built (the CPU backend's lists) and sums over them in the CPU backend's SIMD lanes: the
 * results are the CPU backend's, bit for bit, on a device with IEEE single precision (no
 * contraction, correctly rounded division and square root), and bit-identical from run to run.
 *
 * The grid (stage "grid"): cell key and rank per particle with an atomic histogram, exclusive
 * prefix scan of the counts (work-group scans, a scan of the block sums, add), scatter to
 * start[key] + rank, then each cell's slice of the permutation sorted by old index (the atomics
 * hand out ranks in any order): the result is the CPU's stable counting sort, exactly. A gather
 * then moves every sorted field to its new order, and the host swaps the buffer handles.
 *
 * The solvers: PBF's stages (predict, lambda, delta_p, collide, velocity and curl,
 * vorticity_xsph) and the SPH solvers' pressure stages (gravity, wcsph_pressure, dfsph_factor,
 * dfsph_source for DFSPH's divergence and density solves, pcisph_init, pcisph_pressure,
 * iisph_diagonal, iisph_pressure, pressure_accel, advect) on the per-particle formulas of the
 * methods' <name>_formulas.h, term for term as the CPU stages. Their kernels live with their
 * methods and are included below (a list CMake generates from the folders): the stages several
 * methods share in src/solvers/common/common.cl, the SPH family's in src/solvers/sph/sph.cl, each
 * method's own in src/solvers/<method>/<method>.cl, each folder's kernel ids and its part of the
 * argument block in its <folder>_kernels.h; this file keeps the grid, the scan and sort, the
 * neighbour lists, the rows of a distributed run, the density of a refresh, the guard and the
 * statistics, whose ids gpu_steps.h lists. A solve's error (mean of max(e_i, 0), percent) is
 * reduced on the device (pbf_k_excess: fixed tree per chunk, chunks in order in pbf_gpu_real) into
 * one value the host reads.
 *
 * Non-finite values: a stage atomic_min's the index of a particle for which it produced one into
 * its launch's slot of `bad` (deterministic); pbf_capture_bad keeps the first one, with its id and
 * position, at the end of each substep, for the host's single read at the end of the step. The
 * speed limit's cuts are counted by an atomic add into bad[P.clamp_at] (a sum of ones: the same
 * count in any order, the CPU backend's), read with them. In a distributed run (src/mpi/) the
 * stages after the grid also compute on ghost particles, copies of other processes' particles:
 * `ghost` (one byte per particle, nonzero for a ghost; NULL alone) keeps their cuts out of the
 * count, which their owners make.
 */
#include "gpu_prelude.h"

#define PBF_IS_GHOST(ghost, i) ((ghost) != 0 && (ghost)[i] != 0)

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

/* Sums over neighbours: PBF_LANES partial sums, neighbour k of the sequence below going to lane
 * k % PBF_LANES, combined in one fixed tree. This is the order of the CPU backend's SIMD lanes
 * over its neighbour lists (src/simd.h vf_hsum; the host sets PBF_LANES to the CPU backend's),
 * so both backends add the same terms in the same order: a device with IEEE single precision,
 * correctly rounded division and square root and no contraction gives the CPU's bits. On a CPU
 * device the lane loops vectorise like the CPU backend's; on a GPU they are plain loops over
 * registers. */
#ifndef PBF_LANES
#define PBF_LANES 8
#endif
/* How the loops run, without changing a result (a masked lane adds an exact 0):
 *   PBF_TEST_BLOCK  candidates tested per block, without branches: 8 on a CPU device (one vector
 *                   compare; the arrays are padded for the reads past a range), 1 on a GPU
 *   PBF_LANES_ALL   1: every lane of a chunk, masked: a loop of constant trip count, unrolled, so
 *                   the lanes' sums and the chunk's indices stay in registers (on a GPU a lane
 *                   array indexed at run time lives in local memory: 192 bytes of stack per
 *                   thread in the lambda kernel, measured slower on an NVIDIA H200) and vector
 *                   code on a CPU device; 0: only the lanes holding a neighbour */
#ifndef PBF_TEST_BLOCK
#define PBF_TEST_BLOCK 1u
#endif
#ifndef PBF_LANES_ALL
#define PBF_LANES_ALL 1
#endif
/* a found neighbour's index into lane cnt_ of the chunk: with every lane run, by a select in each
 * lane (constant indices: registers), else by a store at the run-time index */
#if PBF_LANES_ALL
#define PBF_IDX_PUSH(v)                                                                            \
    {                                                                                              \
        const unsigned int v_ = (v);                                                               \
        for (int q_ = 0; q_ < PBF_LANES; ++q_) idx_[q_] = q_ == cnt_ ? v_ : idx_[q_];              \
        ++cnt_;                                                                                    \
    }
#else
#define PBF_IDX_PUSH(v) idx_[cnt_++] = (v)
#endif
#define PBF_LANE_ZERO(a)                                                                           \
    for (int l_ = 0; l_ < PBF_LANES; ++l_) (a)[l_] = 0.0f
PBF_FN float pbf_gpu_hsum(const float *a) {
#if PBF_LANES == 8
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
#elif PBF_LANES == 4
    return (a[0] + a[1]) + (a[2] + a[3]);
#elif PBF_LANES == 1
    return a[0];
#else
#error "PBF_LANES must be 1, 4 or 8"
#endif
}

/* The neighbours of particle i in the step's neighbour sets (Algorithm 1, line 6): every j of
 * the 9 contiguous index ranges of the 27 cells around `cell` (z then y ascending, x ascending
 * inside a range: the order of pbf_grid_neighbour_ranges) with |x*_i0 - x*_j0| < h at the
 * positions the grid was built on (q0; (x0, y0, z0) is particle i's): exactly the CPU backend's
 * neighbour list of i, in its order. They are collected PBF_LANES at a time into idx_ and the
 * body runs once per chunk for every lane l, with j = idx_[l] and `valid` (l holds a neighbour;
 * the stages also test |x*_i - x*_j| < h at the current positions, as the CPU's do).
 * A cell whose box is farther than P.reach from x*_i0 (its faces in float, the margin of reach
 * covering their rounding, see opencl.c) cannot hold such a j and is skipped (about a quarter of
 * the candidates; the same neighbours in the same order). The distance to a face of the
 * particle's own cell counts as 0 when the particle lies outside it (border cells also hold the
 * particles beyond the grid) or is NaN.
 * The body is the name of a macro without parameters that the caller defines just before and
 * undefines after (`#define PBF_NBR_BODY() ...`): OpenCL C has no variadic macros (NVIDIA's
 * compiler refuses them; tests/run_opencl_c_strict.sh checks), and a name not followed by `(`
 * passes through the macros below unexpanded, its commas included, until BODY() expands it. */
#define PBF_LANES_RUN_(BODY)                                                                       \
    for (int l = 0; l < (PBF_LANES_ALL ? PBF_LANES : cnt_); ++l) {                                 \
        const unsigned int j = idx_[l];                                                            \
        const int valid = l < cnt_;                                                                \
        BODY()                                                                                     \
    }
#define PBF_SEARCH_NEIGHBOURS(P, start, cell, self, q0x, q0y, q0z, x0, y0, z0, BODY)               \
    {                                                                                              \
        unsigned int idx_[PBF_LANES];                                                              \
        int cnt_ = 0;                                                                              \
        for (int l_ = 0; l_ < PBF_LANES; ++l_) idx_[l_] = (unsigned int)(self);                    \
        const unsigned int cell_ = (cell)[self];                                                   \
        const int nx_ = (P).dim[0], ny_ = (P).dim[1], nz_ = (P).dim[2];                            \
        const int cx_ = (int)(cell_ % (unsigned int)nx_);                                          \
        const int cy_ = (int)((cell_ / (unsigned int)nx_) % (unsigned int)ny_);                    \
        const int cz_ = (int)(cell_ / ((unsigned int)nx_ * (unsigned int)ny_));                    \
        const int xa_ = cx_ > 0 ? cx_ - 1 : cx_, xb_ = cx_ < nx_ - 1 ? cx_ + 1 : cx_;              \
        const int ya_ = cy_ > 0 ? cy_ - 1 : cy_, yb_ = cy_ < ny_ - 1 ? cy_ + 1 : cy_;              \
        const int za_ = cz_ > 0 ? cz_ - 1 : cz_, zb_ = cz_ < nz_ - 1 ? cz_ + 1 : cz_;              \
        const float lx_ = (P).origin[0] + (float)cx_ * (P).cell_size;                              \
        const float ly_ = (P).origin[1] + (float)cy_ * (P).cell_size;                              \
        const float lz_ = (P).origin[2] + (float)cz_ * (P).cell_size;                              \
        const float dlx_ = pbf_gpu_face2((x0) - lx_);                                              \
        const float dhx_ = pbf_gpu_face2(lx_ + (P).cell_size - (x0));                              \
        const float dly_ = pbf_gpu_face2((y0) - ly_);                                              \
        const float dhy_ = pbf_gpu_face2(ly_ + (P).cell_size - (y0));                              \
        const float dlz_ = pbf_gpu_face2((z0) - lz_);                                              \
        const float dhz_ = pbf_gpu_face2(lz_ + (P).cell_size - (z0));                              \
        for (int z_ = za_; z_ <= zb_; ++z_) {                                                      \
            const float bz_ = z_ < cz_ ? dlz_ : (z_ > cz_ ? dhz_ : 0.0f);                          \
            for (int y_ = ya_; y_ <= yb_; ++y_) {                                                  \
                const float byz_ = bz_ + (y_ < cy_ ? dly_ : (y_ > cy_ ? dhy_ : 0.0f));             \
                if (!(byz_ < (P).reach2)) continue;                                                \
                const unsigned int row_ =                                                          \
                    ((unsigned int)z_ * (unsigned int)ny_ + (unsigned int)y_) * (unsigned int)nx_; \
                for (int xc_ = xa_; xc_ <= xb_; ++xc_) {                                           \
                    if (!(byz_ + (xc_ < cx_ ? dlx_ : (xc_ > cx_ ? dhx_ : 0.0f)) < (P).reach2))     \
                        continue;                                                                  \
                    const unsigned int end_ = (start)[row_ + (unsigned int)xc_ + 1u];              \
                    for (unsigned int c_ = (start)[row_ + (unsigned int)xc_]; c_ < end_;           \
                         c_ += PBF_TEST_BLOCK) {                                                   \
                        unsigned int m_ = 0u;                                                      \
                        for (unsigned int b_ = 0u; b_ < PBF_TEST_BLOCK; ++b_) {                    \
                            const float ex_ = (x0) - (q0x)[c_ + b_], ey_ = (y0) - (q0y)[c_ + b_],  \
                                        ez_ = (z0) - (q0z)[c_ + b_];                               \
                            m_ |= (ex_ * ex_ + ey_ * ey_ + ez_ * ez_ < (P).k.h2 && c_ + b_ < end_) \
                                      ? 1u << b_                                                   \
                                      : 0u;                                                        \
                        }                                                                          \
                        for (; m_ != 0u; m_ &= m_ - 1u) { /* ascending */                          \
                            PBF_IDX_PUSH(c_ + PBF_LOWEST_BIT(m_));                                 \
                            if (cnt_ == PBF_LANES) {                                               \
                                PBF_LANES_RUN_(BODY)                                               \
                                cnt_ = 0;                                                          \
                            }                                                                      \
                        }                                                                          \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        if (cnt_ > 0) {                                                                            \
            PBF_LANES_RUN_(BODY)                                                                   \
        }                                                                                          \
    }

/* Neighbour lists (PBF_LISTS = 1, the host's choice on CPU devices): the sequence above, found
 * once per grid build by pbf_k_list_count / pbf_k_list_fill and stored as one index list per
 * particle (off[i] .. off[i + 1] in idx, compressed rows: no per-particle capacity), so that the
 * ten neighbour passes of a step read their neighbours instead of testing every candidate of 27
 * cells again. The same neighbours in the same order, in the same lanes: the same bits. A
 * neighbour kernel then gets off in place of the cell keys and idx in place of the cell starts
 * (the arguments `cell` and `start`; q0 is not read). On a GPU the search above costs less than
 * the lists' memory traffic and PBF_LISTS is 0. */
#ifndef PBF_LISTS
#define PBF_LISTS 0
#endif
#if PBF_LISTS
#define PBF_FOR_NEIGHBOURS(P, idx, off, self, q0x, q0y, q0z, x0, y0, z0, BODY)                     \
    {                                                                                              \
        unsigned int idx_[PBF_LANES];                                                              \
        const unsigned int b_ = (off)[self], e_ = (off)[(self) + 1];                               \
        for (unsigned int c_ = b_; c_ < e_; c_ += PBF_LANES) {                                     \
            const int cnt_ = e_ - c_ < (unsigned int)PBF_LANES ? (int)(e_ - c_) : PBF_LANES;       \
            for (int l_ = 0; l_ < PBF_LANES; ++l_)                                                 \
                idx_[l_] = l_ < cnt_ ? (idx)[c_ + (unsigned int)l_] : (unsigned int)(self);        \
            PBF_LANES_RUN_(BODY)                                                                   \
        }                                                                                          \
    }
#else
#define PBF_FOR_NEIGHBOURS PBF_SEARCH_NEIGHBOURS
#endif

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

/* A distributed run (src/mpi/domain.c) moves only some particles' entries between the device and
 * the host. pack: the rows r0..r(nf-1) of the particles idx[0..n) into out, word-interleaved
 * (out[k stride + off + j] = rj[idx[k]]: a record of `stride` words per particle, filled nf at a
 * time). unpack: the reverse (in[k stride + off + j]) into the particles idx[k], or with
 * `direct` into particles 0..n-1. merge: out[k nf + j] = rj[src[k]] where src[k] >= 0, else word off + j of
 * record -src[k] - 1 of `in` (a particle received); then an unpack with `direct` puts them in
 * place (the migration's merge by key, the ghosts' removal). nf <= 3 (an unused row may alias
 * r0). */
PBF_KERNEL pbf_k_pack_rows(int n, int nf, int stride, int off, const PBF_GLOBAL int *idx,
                           const PBF_GLOBAL unsigned int *r0, const PBF_GLOBAL unsigned int *r1,
                           const PBF_GLOBAL unsigned int *r2, PBF_GLOBAL unsigned int *out) {
    const int k = PBF_GID;
    if (k >= n) return;
    const int i = idx[k];
    PBF_GLOBAL unsigned int *o = out + (size_t)k * (size_t)stride + (size_t)off;
    o[0] = r0[i];
    if (nf > 1) o[1] = r1[i];
    if (nf > 2) o[2] = r2[i];
}

PBF_KERNEL pbf_k_unpack_rows(int n, int nf, int stride, int off, int direct,
                             const PBF_GLOBAL int *idx, const PBF_GLOBAL unsigned int *in,
                             PBF_GLOBAL unsigned int *r0, PBF_GLOBAL unsigned int *r1,
                             PBF_GLOBAL unsigned int *r2) {
    const int k = PBF_GID;
    if (k >= n) return;
    const int i = direct ? k : idx[k];
    const PBF_GLOBAL unsigned int *rec = in + (size_t)k * (size_t)stride + (size_t)off;
    r0[i] = rec[0];
    if (nf > 1) r1[i] = rec[1];
    if (nf > 2) r2[i] = rec[2];
}

PBF_KERNEL pbf_k_merge_rows(int n, int nf, int stride, int off, const PBF_GLOBAL int *src,
                            const PBF_GLOBAL unsigned int *in, const PBF_GLOBAL unsigned int *r0,
                            const PBF_GLOBAL unsigned int *r1, const PBF_GLOBAL unsigned int *r2,
                            PBF_GLOBAL unsigned int *out) {
    const int k = PBF_GID;
    if (k >= n) return;
    const int s = src[k];
    PBF_GLOBAL unsigned int *o = out + (size_t)k * (size_t)nf;
    if (s >= 0) {
        o[0] = r0[s];
        if (nf > 1) o[1] = r1[s];
        if (nf > 2) o[2] = r2[s];
    } else {
        const PBF_GLOBAL unsigned int *rec = in + (size_t)(-s - 1) * (size_t)stride + (size_t)off;
        o[0] = rec[0];
        if (nf > 1) o[1] = rec[1];
        if (nf > 2) o[2] = rec[2];
    }
}

/* a[from + i] = value for i < n (the hosts' fills: the histogram, the guard's slots). */
PBF_KERNEL pbf_k_fill(PBF_GLOBAL int *a, int from, int n, int value) {
    const int i = PBF_GID;
    if (i < n) a[from + i] = value;
}

/* Neighbour lists (PBF_LISTS): counts[i] = the number of neighbours of i within h at q (the
 * positions the grid was built on), then, after an exclusive scan of counts into off, their
 * indices in the neighbour loops' order. Compiled in every build; run only with PBF_LISTS. */
PBF_KERNEL pbf_k_list_count(const pbf_gpu_params P, const PBF_GLOBAL float *qx,
                            const PBF_GLOBAL float *qy, const PBF_GLOBAL float *qz,
                            const PBF_GLOBAL unsigned int *cell,
                            const PBF_GLOBAL unsigned int *start, PBF_GLOBAL unsigned int *counts) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    unsigned int c = 0u;
    #define PBF_NBR_BODY()                                                                         \
        (void)j;                                                                                   \
        c += valid ? 1u : 0u;
    PBF_SEARCH_NEIGHBOURS(P, start, cell, i, qx, qy, qz, qx[i], qy[i], qz[i], PBF_NBR_BODY)
    #undef PBF_NBR_BODY
    counts[i] = c;
}

PBF_KERNEL pbf_k_list_fill(const pbf_gpu_params P, const PBF_GLOBAL float *qx,
                           const PBF_GLOBAL float *qy, const PBF_GLOBAL float *qz,
                           const PBF_GLOBAL unsigned int *cell,
                           const PBF_GLOBAL unsigned int *start,
                           const PBF_GLOBAL unsigned int *off, PBF_GLOBAL unsigned int *idx) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    unsigned int o = off[i];
    #define PBF_NBR_BODY()                                                                         \
        if (valid) idx[o++] = j;
    PBF_SEARCH_NEIGHBOURS(P, start, cell, i, qx, qy, qz, qx[i], qy[i], qz[i], PBF_NBR_BODY)
    #undef PBF_NBR_BODY
}

/* ---- the stages ----------------------------------------------------------------------------- */

/* Density (eq. 2) with the wall at x*, after adding particles or restoring (cpu.c density_at;
 * q0 = x* here). */
PBF_KERNEL pbf_k_density(const pbf_gpu_params P, const PBF_GLOBAL float *qx,
                         const PBF_GLOBAL float *qy, const PBF_GLOBAL float *qz,
                         const PBF_GLOBAL unsigned int *cell, const PBF_GLOBAL unsigned int *start,
                         const PBF_GLOBAL float *q0x, const PBF_GLOBAL float *q0y,
                         const PBF_GLOBAL float *q0z, const PBF_GLOBAL float *F,
                         const PBF_GLOBAL float *G, const PBF_GLOBAL pbf_wall_box *boxes,
                         PBF_GLOBAL float *density) {
    const int i = PBF_GID;
    if (i >= P.n) return;
    const pbf_sph_consts k = P.k;
    const pbf_walls_consts wc = P.wc;
    const float xi = qx[i], yi = qy[i], zi = qz[i];
    float p[3] = {xi, yi, zi}, gw[3];
    const float wall = pbf_wall_density(&wc, F, G, boxes, p, gw);
    float rho[PBF_LANES];
    PBF_LANE_ZERO(rho);
    #define PBF_NBR_BODY()                                                                         \
        const float dx = xi - qx[j], dy = yi - qy[j], dz = zi - qz[j];                             \
        const float r2 = dx * dx + dy * dy + dz * dz;                                              \
        const int in = valid && r2 < k.h2;                                                         \
        rho[l] += in ? pbf_kernel_w(&k, r2) : 0.0f;
    PBF_FOR_NEIGHBOURS(P, start, cell, i, q0x, q0y, q0z, q0x[i], q0y[i], q0z[i], PBF_NBR_BODY)
    #undef PBF_NBR_BODY
    density[i] = k.mass * pbf_gpu_hsum(rho) + k.rest_density * wall;
}

/* The stages' kernels, each folder's .cl files in its folder of src/solvers/: the shared stages
 * (common/), the SPH family's (sph/), then each method's, alphabetically. The list is
 * generated at configure time from the folders (cmake/solvers.cmake, into the build's generated/
 * folder), so a new method's .cl needs no line here; its kernels' ids come from its
 * <folder>_kernels.h (gpu_steps.h: PBF_GPU_KERNELS). */
#include "pbf_solver_kernels.cl"

/* A solve's error (cpu.c mean_excess): the sum of max(a_i scale + offset, 0) over one chunk of
 * PBF_STATS_WG * PBF_STATS_PER_ITEM particles, reduced in a fixed tree order, into
 * partial[group]. */
PBF_KERNEL pbf_k_excess(int n, const PBF_GLOBAL float *a, float scale, float offset,
                        PBF_GLOBAL pbf_gpu_real *partial) {
    PBF_LOCAL_ARRAY(pbf_gpu_real, t_sum, PBF_STATS_WG);
    const int lid = PBF_LID;
    const int base = PBF_GROUP * (PBF_STATS_WG * PBF_STATS_PER_ITEM);
    pbf_gpu_real sum = 0;
    for (int m = 0; m < PBF_STATS_PER_ITEM; ++m) {
        const int i = base + m * PBF_STATS_WG + lid;
        if (i >= n) break;
        const float e = a[i] * scale + offset;
        if (e > 0.0f) sum += (pbf_gpu_real)e;
    }
    t_sum[lid] = sum;
    for (int s = PBF_STATS_WG / 2; s > 0; s >>= 1) {
        PBF_BARRIER;
        if (lid < s) t_sum[lid] += t_sum[lid + s];
    }
    if (lid == 0) partial[PBF_GROUP] = t_sum[0];
}

/* One work-item: the chunks' sums in chunk order as the mean in percent, 100 sum / n, into
 * out[slot] (the host reads it back: one value per iteration of a solve stopped at a tolerance,
 * else at the end of the step). */
PBF_KERNEL pbf_k_excess_total(int n, int chunks, const PBF_GLOBAL pbf_gpu_real *partial,
                              PBF_GLOBAL pbf_gpu_real *out, int slot) {
    if (PBF_GID != 0) return;
    pbf_gpu_real sum = 0;
    for (int c = 0; c < chunks; ++c) sum += partial[c];
    out[slot] = n > 0 ? (pbf_gpu_real)100 * sum / (pbf_gpu_real)n : (pbf_gpu_real)0;
}

/* One work-item: the first slot in [from, to) holding a particle, with that particle's id and
 * position now, into *out unless an earlier launch already filled it (out->slot >= 0). Slot 0
 * (predict, gravity) holds an old index; slot `map` holds it in the sorted order. The slots are
 * those of one substep; out->slot = base + slot numbers the launches of the whole step. */
PBF_KERNEL pbf_k_capture_bad(const PBF_GLOBAL int *bad, int from, int to, int map, int base,
                           const PBF_GLOBAL float *px, const PBF_GLOBAL float *py,
                           const PBF_GLOBAL float *pz, const PBF_GLOBAL unsigned int *id,
                           PBF_GLOBAL pbf_gpu_bad *out) {
    if (PBF_GID != 0 || out->slot >= 0) return;
    for (int s = from; s < to; ++s) {
        const int i = s == 0 ? bad[map] : bad[s];
        if (i == PBF_INT_MAX) continue;
        out->slot = base + s;
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
