/* World lifetime, particles and boxes, statistics: the public API of pbf/pbf.h. */
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define PI_F 3.14159265358979323846f
#define PI_D 3.14159265358979323846
#define WALL_TABLE_NODES 33

size_t pbf_bytes_per_particle(void) {
    /* every array of the field registry (the SPH solvers' scratch included), plus the CPU
     * backend's packed neighbour copy (16 B), the SPH passes' packed velocities and wall cache
     * (32 B), list start (2 B) and lists at a generous 40 neighbours of 1.5 bytes */
    return pbf_fields_bytes(0, 0) + 16 + 32 + 2 + 40 * 3 / 2;
}

/* The row that a restore sets from carried row `carried` though no snapshot holds it: IISPH's
 * pressure one substep older (WARM_V, pbf_iisph_warm_p) beside its last (WARM); -1: none. */
static int carried_companion(int carried) { return carried == PBF_F_WARM ? PBF_F_WARM_V : -1; }

/* Is field f kept in host memory by the world's backend? */
static int on_host(const pbf_world *w, int f) {
    if ((pbf_fields[f].flags & PBF_FIELD_SPH) && !pbf_world_solver(w)->sph) return 0;
    if (!pbf_field_in_solver(f, &w->def)) return 0;
    /* the carried row (pbf_carried_row): a host row on every backend (snapshots, restores, new
     * particles); its companion too, which a restore sets from it (pbf_set_lambda) */
    const int carried = pbf_carried_row(w);
    return w->backend->host_keep == 0 || w->host_rows ||
           (pbf_fields[f].flags & w->backend->host_keep) != 0 || f == carried ||
           f == carried_companion(carried);
}

/* Bytes per particle of the host arrays the world keeps. */
static size_t host_bytes_per_particle(const pbf_world *w) {
    size_t bytes = 0;
    for (int f = 0; f < PBF_FIELD_COUNT; ++f) bytes += on_host(w, f) ? 4 : 0;
    return bytes;
}

/* A new state: the warm-start rows (fields.h) of every particle start at 0 (a device's at the
 * backend's upload), but row `keep` (a restore sets the carried row from the snapshot, which may
 * point at it: pbf_world_snapshot). */
static void zero_warm_rows(pbf_world *w, int keep) {
    for (int f = 0; f < PBF_FIELD_COUNT; ++f)
        if ((pbf_fields[f].flags & (PBF_FIELD_WARM | PBF_FIELD_WARM_V)) && w->field[f] &&
            w->count && f != keep)
            memset(w->field[f], 0, (size_t)w->count * 4);
}

static void free_particles(pbf_world *w) {
    for (int f = 0; f < PBF_FIELD_COUNT; ++f) {
        pbf_big_free(w->field[f]);
        w->field[f] = NULL;
    }
}

/* Grows every particle array (host, and the device's through the backend) to `capacity`; on
 * failure the world is unchanged. */
static pbf_status reserve(pbf_world *w, int capacity, pbf_error *err) {
    if (capacity <= w->capacity) return PBF_OK;
    void *fresh[PBF_FIELD_COUNT] = {0};
    int ok = 1;
    size_t host_bytes = host_bytes_per_particle(w);
    for (int f = 0; f < PBF_FIELD_COUNT; ++f) {
        if (!on_host(w, f)) continue;
        /* padded: the neighbour loops read whole 8-lane chunks (src/simd.h) */
        const size_t bytes = ((size_t)capacity + PBF_ARRAY_PADDING) * 4;
        fresh[f] = pbf_big_calloc(bytes, bytes);
        if (!fresh[f]) ok = 0;
    }
    if (!ok) {
        for (int f = 0; f < PBF_FIELD_COUNT; ++f) pbf_big_free(fresh[f]);
        pbf_set_error(err, PBF_ERR_OUT_OF_MEMORY,
                      "cannot allocate %d particles (%zu bytes each, %.1f MiB)", capacity,
                      host_bytes, (double)capacity * (double)host_bytes / 1048576.0);
        return PBF_ERR_OUT_OF_MEMORY;
    }
    pbf_status s = w->backend->reserve(w, capacity, err);
    if (s != PBF_OK) {
        for (int f = 0; f < PBF_FIELD_COUNT; ++f) pbf_big_free(fresh[f]);
        return s;
    }
    for (int f = 0; f < PBF_FIELD_COUNT; ++f) {
        if (!fresh[f]) continue;
        if (w->count) memcpy(fresh[f], w->field[f], (size_t)w->count * 4);
        pbf_big_free(w->field[f]);
        w->field[f] = fresh[f];
    }
    w->capacity = capacity;
    return PBF_OK;
}

pbf_status pbf_world_reserve(pbf_world *w, int capacity, pbf_error *err) {
    return reserve(w, capacity, err);
}

pbf_status pbf_world_host_rows(pbf_world *w, pbf_error *err) {
    if (w->host_rows) return PBF_OK;
    void *fresh[PBF_FIELD_COUNT] = {0};
    int ok = 1;
    w->host_rows = 1;
    for (int f = 0; f < PBF_FIELD_COUNT; ++f)
        if (!w->field[f] && on_host(w, f) && w->capacity > 0) {
            const size_t bytes = ((size_t)w->capacity + PBF_ARRAY_PADDING) * 4;
            fresh[f] = pbf_big_calloc(bytes, bytes);
            ok = ok && fresh[f];
        }
    if (!ok) {
        for (int f = 0; f < PBF_FIELD_COUNT; ++f) pbf_big_free(fresh[f]);
        w->host_rows = 0;
        pbf_set_error(err, PBF_ERR_OUT_OF_MEMORY,
                      "cannot allocate host copies of %d particles' rows", w->capacity);
        return PBF_ERR_OUT_OF_MEMORY;
    }
    for (int f = 0; f < PBF_FIELD_COUNT; ++f)
        if (fresh[f]) w->field[f] = fresh[f];
    return PBF_OK;
}

int pbf_lambda_carried(const pbf_world *w) { return pbf_carried_row(w) == PBF_F_LAMBDA; }

int pbf_step_rows(const pbf_world *w, int *rows) {
    const int carried = pbf_carried_row(w);
    int n = 0;
    for (int f = 0; f < PBF_FIELD_COUNT; ++f) {
        const unsigned fl = pbf_fields[f].flags;
        const int warm = (fl & (PBF_FIELD_WARM | PBF_FIELD_WARM_V)) && pbf_field_in_solver(f, &w->def);
        if (f == carried || warm) rows[n++] = f;
    }
    return n;
}

int pbf_carried_row(const pbf_world *w) {
    const pbf_solver *m = pbf_world_solver(w);
    return m->carried_row ? m->carried_row(&w->def) : -1;
}

const float *pbf_world_lambda(const pbf_world *w) {
    const int row = pbf_carried_row(w);
    if (row < 0 || !w->field[row]) return NULL;
    if (w->backend->read_rows && w->count > 0) { /* a device's: its host row, brought up to date */
        if (w->backend->read_rows((pbf_world *)w, &row, 1, NULL) != PBF_OK) return NULL;
    }
    return w->field[row];
}

pbf_status pbf_set_lambda(pbf_world *w, int count, const float *src, pbf_error *err) {
    const int row = pbf_carried_row(w);
    if (row < 0 || count <= 0 || !w->field[row]) return PBF_OK;
    /* the companion row (IISPH's pressure one substep older) is not carried: it starts as the
     * carried one, so that the first warm start is the last substep's pressure */
    const int rows[2] = {row, carried_companion(row)};
    const int nrows = rows[1] >= 0 && w->field[rows[1]] ? 2 : 1;
    for (int r = 0; r < nrows; ++r) {
        float *dst = w->field[rows[r]];
        if (src) {
            if (src != dst) /* (a snapshot of this world points at the carried row) */
                memcpy(dst, src, (size_t)count * sizeof(float));
        } else
            memset(dst, 0, (size_t)count * sizeof(float));
    }
    if (!w->backend->write_rows) return PBF_OK;
    return w->backend->write_rows(w, rows, nrows, err);
}

static float poly6_value(float h, float r2) {
    float d = h * h - r2;
    return 315.0f / (64.0f * PI_F * powf(h, 9.0f)) * d * d * d;
}

double pbf_cubic_value_d(double h, double r) {
    if (!(r < h)) return 0.0;
    double q = r / h, a = 1.0 - q, b = q < 0.5 ? 1.0 - 2.0 * q : 0.0;
    return 8.0 / (PI_D * h * h * h) * (2.0 * a * a * a - b * b * b);
}

double pbf_cubic_slope_d(double h, double r) {
    if (!(r < h)) return 0.0;
    double q = r / h, a = 1.0 - q, b = q < 0.5 ? 1.0 - 2.0 * q : 0.0;
    return 48.0 / (PI_D * h * h * h * h) * (b * b - a * a);
}

/* Mass so that a cubic lattice at the rest spacing has exactly the rest density (with the
 * world's kernel: the SPH solvers' cubic spline, or poly6), and sum_k |grad_k C_i|^2 of such a
 * lattice particle (the scale of lambda, and PCISPH's delta) with the matching gradient. */
static void lattice_constants(pbf_world *w) {
    const float d = w->spacing, h = w->k.h;
    const int K = (int)ceilf(h / d);
    const int cubic = w->k.cubic != 0.0f;
    double wsum = 0.0, g2 = 0.0;
    for (int i = -K; i <= K; ++i)
        for (int j = -K; j <= K; ++j)
            for (int k = -K; k <= K; ++k) {
                float r2 = (float)(i * i + j * j + k * k) * d * d;
                if (r2 >= h * h) continue;
                wsum += cubic ? pbf_cubic_value_d(h, sqrt((double)r2)) : poly6_value(h, r2);
                if (r2 > 0.0f) {
                    float r = sqrtf(r2);
                    double gm = cubic ? pbf_cubic_slope_d(h, sqrt((double)r2))
                                      : w->spiky_grad * (h - r) * (h - r);
                    g2 += gm * gm;
                }
            }
    w->k.mass = (float)(w->def.rest_density / wsum);
    w->k.volume = w->k.mass / w->def.rest_density;
    w->lattice_grad2 = (float)(g2 * (double)w->k.volume * (double)w->k.volume);
}

/* The bed shear stress's coefficients per container face (pbf_bed_drag): C_f over the wall
 * layer's thickness, one spacing 2r (the layer's mass per wall area is rho 2r), on the faces
 * bed_friction_walls names; a face's inward normal is +e_a for the lower face of axis a. */
static void pbf_bed_drag_consts(pbf_walls_consts *c, const pbf_world_def *def) {
    const float layer = 2.0f * def->particle_radius, k = def->bed_friction / layer;
    const float g[3] = {def->gravity.x, def->gravity.y, def->gravity.z};
    const int all = def->bed_friction_walls == PBF_BED_WALLS_ALL;
    c->drag_layer = layer;
    c->drag_on = 0;
    for (int a = 0; a < 3; ++a) {
        /* gravity presses the liquid onto the lower face when g_a < 0 (n . g = g_a) */
        c->drag_lo[a] = k > 0.0f && (all || g[a] < 0.0f) ? k : 0.0f;
        c->drag_hi[a] = k > 0.0f && (all || g[a] > 0.0f) ? k : 0.0f;
        c->drag_on |= c->drag_lo[a] > 0.0f || c->drag_hi[a] > 0.0f;
    }
}

pbf_status pbf_world_create(const pbf_world_def *def, pbf_world **out_world, pbf_error *err) {
    if (!out_world) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "pbf_world_create: out_world is NULL");
        return PBF_ERR_INVALID_ARGUMENT;
    }
    *out_world = NULL;
    pbf_status s = pbf_world_def_validate(def, err);
    if (s != PBF_OK) return s;
    pbf_world *w = calloc(1, sizeof *w);
    if (!w) {
        pbf_set_error(err, PBF_ERR_OUT_OF_MEMORY, "pbf_world_create: out of memory");
        return PBF_ERR_OUT_OF_MEMORY;
    }
    w->def = *def;
    pbf_v3(def->domain_min, w->lo);
    pbf_v3(def->domain_max, w->hi);
    w->nthreads = def->threads > 0 ? def->threads : omp_get_max_threads();
    if (w->nthreads < 1) w->nthreads = 1;
    w->spacing = 2.0f * def->particle_radius;
    const float h = def->kernel_ratio * w->spacing;
    w->k.h = h;
    w->k.h2 = h * h;
    w->k.r_min = 1e-6f * h;
    w->k.poly6 = 315.0f / (64.0f * PI_F * powf(h, 9.0f));
    w->spiky_grad = 45.0f / (PI_F * powf(h, 6.0f));
    w->k.spiky = -w->spiky_grad;
    w->k.rest_density = def->rest_density;
    w->k.cubic = pbf_solver_of(def->solver)->sph && def->sph_kernel == PBF_SPH_KERNEL_CUBIC;
    w->k.inv_h = 1.0f / h;
    w->k.cubic_w = 8.0f / (PI_F * h * h * h);
    w->k.cubic_g = 48.0f / (PI_F * h * h * h * h);
    lattice_constants(w);
    if (!isfinite(w->k.poly6) || !isfinite(w->k.mass) || !isfinite(w->lattice_grad2) ||
        !(w->lattice_grad2 > 0.0f)) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "particle_radius = %g: the kernel constants overflow single "
                      "precision at this scale (h = %g m); use a radius between 1e-4 and 1 m",
                      def->particle_radius, h);
        free(w);
        return PBF_ERR_INVALID_ARGUMENT;
    }
    /* the method's derived constants (PBF's relaxation and s_corr, src/solvers/pbf/) */
    const pbf_solver *method = pbf_world_solver(w);
    if (method->create_state) {
        s = method->create_state(w, &w->method_state, err);
        if (s != PBF_OK) {
            free(w);
            return s;
        }
    }
    s = pbf_grid_init(&w->grid, def, h * 1.0001f, err);
    if (s == PBF_OK) s = pbf_wall_tables_init(&w->walls, h, WALL_TABLE_NODES, w->k.cubic != 0.0f, err);
    if (s == PBF_OK) {
        pbf_walls_consts *c = &w->wc;
        for (int a = 0; a < 3; ++a) {
            c->lo[a] = w->lo[a];
            c->hi[a] = w->hi[a];
        }
        c->h = h;
        c->h2 = w->k.h2;
        c->inv_step = w->walls.inv_step;
        c->n = w->walls.n;
        c->radius = def->particle_radius;
        c->mu_static = def->friction_static;
        c->mu_dynamic = def->friction_dynamic;
        pbf_bed_drag_consts(c, def);
        c->nboxes = 0;
        pbf_wall_calibration(w, &c->scale, &c->scale_edge, &c->scale_corner);
    }
    if (s == PBF_OK) s = pbf_backend_open(w, def->device, err);
    if (s == PBF_OK) w->stage_timing = w->backend == &pbf_backend_cpu; /* free there */
    if (s == PBF_OK && def->max_particles > 0) s = reserve(w, def->max_particles, err);
    if (s != PBF_OK) {
        pbf_world_destroy(w);
        return s;
    }
    pbf_update_stats(w);
    *out_world = w;
    return PBF_OK;
}

void pbf_world_destroy(pbf_world *w) {
    if (!w) return;
    if (w->backend) w->backend->release(w);
    free_particles(w);
    pbf_grid_free(&w->grid);
    pbf_wall_tables_free(&w->walls);
    free(w->method_state);
    free(w);
}

static int vec3_finite(pbf_vec3 v) { return isfinite(v.x) && isfinite(v.y) && isfinite(v.z); }

/* Lattice sites along one axis of [lo, hi] at spacing d, the first half a spacing inside. */
static int64_t axis_count(float lo, float hi, float d) {
    double n = floor(((double)hi - (double)lo) / (double)d + 1e-4);
    if (!(n > 0.0)) return 0;              /* also NaN */
    return n < 4.0e18 ? (int64_t)n : INT64_MAX / 4; /* no out-of-range conversion */
}

/* The block's lattice sites along x, y and z at spacing d. */
static void block_axes(const pbf_fluid_block *b, float d, int64_t n[3]) {
    n[0] = axis_count(b->min.x, b->max.x, d);
    n[1] = axis_count(b->min.y, b->max.y, d);
    n[2] = axis_count(b->min.z, b->max.z, d);
}

int64_t pbf_fluid_block_count(const pbf_world_def *def, const pbf_fluid_block *b) {
    if (!def || !b || !vec3_finite(b->min) || !vec3_finite(b->max)) return 0;
    if (!(def->particle_radius > 0.0f)) return 0;
    int64_t n[3];
    block_axes(b, 2.0f * def->particle_radius, n);
    double total = (double)n[0] * (double)n[1] * (double)n[2];
    return total > 9.0e18 ? INT64_MAX : n[0] * n[1] * n[2]; /* the product is exact below 9e18 */
}

static const char *const AXIS = "xyz";

pbf_status pbf_fluid_block_check(const pbf_world *w, const pbf_fluid_block *b, int64_t *count,
                                 pbf_error *err) {
    float mn[3], mx[3], v[3];
    pbf_v3(b->min, mn);
    pbf_v3(b->max, mx);
    pbf_v3(b->velocity, v);
    const float *lo = w->lo, *hi = w->hi;
    for (int a = 0; a < 3; ++a) {
        if (!isfinite(mn[a]) || !isfinite(mx[a]) || !isfinite(v[a])) {
            pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                          "fluid block: min.%c = %g, max.%c = %g, velocity.%c = %g: not finite",
                          AXIS[a], mn[a], AXIS[a], mx[a], AXIS[a], v[a]);
            return PBF_ERR_INVALID_ARGUMENT;
        }
        if (!(mn[a] < mx[a])) {
            pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                          "fluid block: min.%c = %g must be less than max.%c = %g", AXIS[a], mn[a],
                          AXIS[a], mx[a]);
            return PBF_ERR_INVALID_ARGUMENT;
        }
        if (mn[a] < lo[a] || mx[a] > hi[a]) {
            pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                          "fluid block: [%g, %g] along %c lies outside the container [%g, %g]",
                          mn[a], mx[a], AXIS[a], lo[a], hi[a]);
            return PBF_ERR_INVALID_ARGUMENT;
        }
    }
    int64_t n = pbf_fluid_block_count(&w->def, b);
    if (n <= 0) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "fluid block: %g x %g x %g m holds no particle at spacing %g m",
                      mx[0] - mn[0], mx[1] - mn[1], mx[2] - mn[2], w->spacing);
        return PBF_ERR_INVALID_ARGUMENT;
    }
    if (n > (int64_t)INT32_MAX - w->count) {
        pbf_set_error(err, PBF_ERR_LIMIT,
                      "fluid block: %lld particles would exceed the limit of %d particles",
                      (long long)n, INT32_MAX);
        return PBF_ERR_LIMIT;
    }
    *count = n;
    return PBF_OK;
}

void pbf_fluid_block_axes(const pbf_world *w, const pbf_fluid_block *b, int64_t n[3]) {
    block_axes(b, w->spacing, n); /* spacing = 2 r, as pbf_fluid_block_count */
}

void pbf_world_append_lattice(pbf_world *w, const pbf_fluid_block *b, int64_t first,
                              int64_t count, uint32_t first_id) {
    float mn[3], v[3];
    pbf_v3(b->min, mn);
    pbf_v3(b->velocity, v);
    const float d = w->spacing;
    int64_t ax[3];
    pbf_fluid_block_axes(w, b, ax);
    const int64_t nx = ax[0], ny = ax[1];
    int k = w->count;
    for (int64_t t = first; t < first + count; ++t, ++k) {
        const int64_t ix = t % nx, iy = (t / nx) % ny, iz = t / (nx * ny);
        w->px[k] = mn[0] + ((float)ix + 0.5f) * d;
        w->py[k] = mn[1] + ((float)iy + 0.5f) * d;
        w->pz[k] = mn[2] + ((float)iz + 0.5f) * d;
        w->vx[k] = v[0];
        w->vy[k] = v[1];
        w->vz[k] = v[2];
        w->density[k] = w->def.rest_density;
        if (w->lambda) w->lambda[k] = 0.0f; /* a new particle's warm start */
        w->id[k] = first_id + (uint32_t)(t - first);
    }
    w->count = k;
}

pbf_status pbf_world_add_fluid_block(pbf_world *w, const pbf_fluid_block *b, pbf_error *err) {
    if (!w || !b) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "pbf_world_add_fluid_block: NULL argument");
        return PBF_ERR_INVALID_ARGUMENT;
    }
    int64_t n = 0;
    pbf_status cs = pbf_fluid_block_check(w, b, &n, err);
    if (cs != PBF_OK) return cs;
    int total = w->count + (int)n;
    pbf_sync_host(w); /* the new particles join the current state */
    if (w->def.max_particles > 0 && total > w->def.max_particles) {
        pbf_set_error(err, PBF_ERR_LIMIT,
                      "fluid block: %d particles in all exceed max_particles = %d", total,
                      w->def.max_particles);
        return PBF_ERR_LIMIT;
    }
    if (total > w->capacity) {
        int64_t grow = (int64_t)w->capacity + w->capacity / 2;
        int cap = total > grow ? total : (int)(grow > INT32_MAX ? INT32_MAX : grow);
        pbf_status s = reserve(w, cap, err);
        if (s != PBF_OK) return s;
    }
    /* The rows a solver carries from step to step keep their values for the particles already
     * there (PBF's lambda with its warm start; the IISPH and DFSPH warm starts' pressures) and
     * start at 0 for the new ones; on a device they travel through their host rows */
    int rows[PBF_FIELD_COUNT], nrows = 0, carried[PBF_FIELD_COUNT];
    const int ncarried = pbf_step_rows(w, carried);
    for (int k = 0; k < ncarried; ++k)
        if (w->field[carried[k]]) rows[nrows++] = carried[k];
    const int dev_rows = w->backend->write_rows && nrows > 0;
    if (dev_rows && w->count > 0) {
        pbf_status hs = w->backend->read_rows(w, rows, nrows, err);
        if (hs != PBF_OK) return hs;
    }
    const int old = w->count;
    pbf_world_append_lattice(w, b, 0, n, (uint32_t)w->count); /* ids: the places in the world */
    for (int r = 0; r < nrows; ++r)
        memset((float *)w->field[rows[r]] + old, 0, (size_t)(w->count - old) * 4);
    pbf_status up = w->backend->upload(w, err);
    if (up != PBF_OK) return up;
    if (dev_rows) {
        up = w->backend->write_rows(w, rows, nrows, err);
        if (up != PBF_OK) return up;
    }
    pbf_refresh(w);
    pbf_update_stats(w);
    return PBF_OK;
}

static int boxes_overlap(pbf_vec3 amin, pbf_vec3 amax, pbf_vec3 bmin, pbf_vec3 bmax) {
    return amin.x < bmax.x && bmin.x < amax.x && amin.y < bmax.y && bmin.y < amax.y &&
           amin.z < bmax.z && bmin.z < amax.z;
}

pbf_status pbf_world_add_box(pbf_world *w, const pbf_box *box, pbf_error *err) {
    if (!w || !box) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "pbf_world_add_box: NULL argument");
        return PBF_ERR_INVALID_ARGUMENT;
    }
    if (w->nboxes >= PBF_MAX_BOXES) {
        pbf_set_error(err, PBF_ERR_LIMIT, "box %d: at most %d boxes per world", w->nboxes,
                      PBF_MAX_BOXES);
        return PBF_ERR_LIMIT;
    }
    const int index = w->nboxes;
    float mn[3], mx[3];
    pbf_v3(box->min, mn);
    pbf_v3(box->max, mx);
    for (int a = 0; a < 3; ++a) {
        if (!isfinite(mn[a]) || !isfinite(mx[a]) || !(mn[a] < mx[a])) {
            pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                          "box %d: min.%c = %g must be finite and less than max.%c = %g", index,
                          AXIS[a], mn[a], AXIS[a], mx[a]);
            return PBF_ERR_INVALID_ARGUMENT;
        }
    }
    const pbf_motion *m = &box->motion;
    pbf_vec3 dir = m->direction;
    float len = sqrtf(dir.x * dir.x + dir.y * dir.y + dir.z * dir.z);
    if (m->type != PBF_MOTION_NONE) {
        if (m->type != PBF_MOTION_OSCILLATE && m->type != PBF_MOTION_LINEAR) {
            pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "box %d: motion.type = %d is unknown",
                          index, (int)m->type);
            return PBF_ERR_INVALID_ARGUMENT;
        }
        if (!vec3_finite(dir) || !(len > 0.0f) || !isfinite(len)) {
            pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                          "box %d: motion.direction = (%g, %g, %g) must be a finite non-zero "
                          "vector",
                          index, dir.x, dir.y, dir.z);
            return PBF_ERR_INVALID_ARGUMENT;
        }
        const float vals[] = {m->amplitude, m->period, m->phase, m->speed, m->start, m->stop};
        const char *names[] = {"amplitude", "period", "phase", "speed", "start", "stop"};
        for (int k = 0; k < 6; ++k) {
            if (!isfinite(vals[k])) {
                pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "box %d: motion.%s = %g is not finite",
                              index, names[k], vals[k]);
                return PBF_ERR_INVALID_ARGUMENT;
            }
        }
        if (m->type == PBF_MOTION_OSCILLATE && !(m->period > 0.0f)) {
            pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                          "box %d: motion.period = %g must be greater than 0", index, m->period);
            return PBF_ERR_INVALID_ARGUMENT;
        }
        if (m->start < 0.0f || (m->stop >= 0.0f && m->stop < m->start)) {
            pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                          "box %d: motion.start = %g, motion.stop = %g: need 0 <= start and "
                          "stop >= start (or stop < 0 for forever)",
                          index, m->start, m->stop);
            return PBF_ERR_INVALID_ARGUMENT;
        }
        dir = (pbf_vec3){dir.x / len, dir.y / len, dir.z / len};
    }
    for (int b = 0; b < w->nboxes; ++b) {
        if (boxes_overlap(box->min, box->max, w->boxes[b].def.min, w->boxes[b].def.max)) {
            pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "box %d overlaps box %d", index, b);
            return PBF_ERR_INVALID_ARGUMENT;
        }
    }
    pbf_box_state *bs = &w->boxes[w->nboxes];
    memset(bs, 0, sizeof *bs);
    bs->def = *box;
    bs->dir = dir;
    w->nboxes += 1;
    w->wc.nboxes = w->nboxes;
    pbf_boxes_update(w, w->time);
    pbf_wall_box *wb = &w->wall_boxes[index];
    for (int a = 0; a < 3; ++a) wb->prev_lo[a] = wb->lo[a];
    w->backend->boxes_changed(w);
    return PBF_OK;
}

int pbf_world_box_count(const pbf_world *w) { return w ? w->nboxes : 0; }

pbf_status pbf_world_box_bounds(const pbf_world *w, int index, pbf_vec3 *min, pbf_vec3 *max) {
    if (!w || index < 0 || index >= w->nboxes) return PBF_ERR_INVALID_ARGUMENT;
    const pbf_wall_box *bs = &w->wall_boxes[index];
    if (min) *min = (pbf_vec3){bs->lo[0], bs->lo[1], bs->lo[2]};
    if (max) *max = (pbf_vec3){bs->hi[0], bs->hi[1], bs->hi[2]};
    return PBF_OK;
}

pbf_status pbf_world_step(pbf_world *w, float dt, pbf_error *err) {
    if (!w) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "pbf_world_step: world is NULL");
        return PBF_ERR_INVALID_ARGUMENT;
    }
    if (!isfinite(dt) || !(dt > 0.0f) || dt > 1.0f) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "pbf_world_step: dt = %g s must be finite and in (0, 1]", dt);
        return PBF_ERR_INVALID_ARGUMENT;
    }
    pbf_run_step(w, dt);
    return PBF_OK;
}

/* The STATE arrays of the registry in the member order of pbf_particles and pbf_snapshot
 * (x, y, z, vx, vy, vz, density, id: the public field table, component by component). */
enum { PUBLIC_ARRAYS = 8 };
static int public_slot(int f) {
    static const int first[] = {0, 3, 6, 7}; /* position, velocity, density, id */
    int pub = pbf_fields[f].public_field;
    return pub < 0 ? -1 : first[pub] + pbf_fields[f].component;
}

static void state_arrays(const pbf_world *w, const void *a[PUBLIC_ARRAYS]) {
    for (int f = 0; f < PBF_FIELD_COUNT; ++f)
        if (public_slot(f) >= 0) a[public_slot(f)] = w->field[f];
}

pbf_particles pbf_world_particles(const pbf_world *w) {
    pbf_particles p;
    memset(&p, 0, sizeof p);
    if (!w) return p;
    pbf_sync_host(w);
    const void *a[PUBLIC_ARRAYS];
    state_arrays(w, a);
    p.count = w->count;
    p.x = a[0];
    p.y = a[1];
    p.z = a[2];
    p.vx = a[3];
    p.vy = a[4];
    p.vz = a[5];
    p.density = a[6];
    p.id = a[7];
    return p;
}

pbf_stats pbf_world_stats(const pbf_world *w) {
    pbf_stats s;
    memset(&s, 0, sizeof s);
    return w ? w->stats : s;
}

pbf_derived pbf_world_derived(const pbf_world *w) {
    pbf_derived d;
    memset(&d, 0, sizeof d);
    if (!w) return d;
    d.spacing = w->spacing;
    d.h = w->k.h;
    d.mass = w->k.mass;
    d.lattice_grad2 = w->lattice_grad2;
    d.max_speed = w->def.cfl * w->k.h;
    return d;
}

pbf_snapshot pbf_world_snapshot(const pbf_world *w) {
    pbf_snapshot s;
    memset(&s, 0, sizeof s);
    if (!w) return s;
    pbf_particles p = pbf_world_particles(w);
    s.time = w->time;
    s.steps = w->steps;
    s.count = w->count;
    s.x = p.x;
    s.y = p.y;
    s.z = p.z;
    s.vx = p.vx;
    s.vy = p.vy;
    s.vz = p.vz;
    s.density = p.density;
    s.id = p.id;
    s.lambda = pbf_world_lambda(w); /* the carried row, or NULL */
    return s;
}

pbf_status pbf_world_restore(pbf_world *w, const pbf_snapshot *s, pbf_error *err) {
    if (!w || !s) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "pbf_world_restore: NULL argument");
        return PBF_ERR_INVALID_ARGUMENT;
    }
    if (s->count < 0 || !isfinite(s->time) || s->time < 0.0 || s->steps < 0) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "snapshot: count = %d, time = %g, steps = %lld: need count >= 0, a finite "
                      "time >= 0 and steps >= 0",
                      s->count, s->time, (long long)s->steps);
        return PBF_ERR_INVALID_ARGUMENT;
    }
    if (s->count > 0 && (!s->x || !s->y || !s->z || !s->vx || !s->vy || !s->vz || !s->density ||
                         !s->id)) {
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT, "snapshot: a particle array is NULL");
        return PBF_ERR_INVALID_ARGUMENT;
    }
    if (w->def.max_particles > 0 && s->count > w->def.max_particles) {
        pbf_set_error(err, PBF_ERR_LIMIT,
                      "snapshot: %d particles exceed max_particles = %d", s->count,
                      w->def.max_particles);
        return PBF_ERR_LIMIT;
    }
    pbf_status st = reserve(w, s->count, err);
    if (st != PBF_OK) return st;
    const size_t bytes = (size_t)s->count * 4;
    const void *src[PUBLIC_ARRAYS] = {s->x, s->y, s->z, s->vx, s->vy, s->vz, s->density, s->id};
    if (bytes)
        for (int f = 0; f < PBF_FIELD_COUNT; ++f)
            if (pbf_fields[f].flags & PBF_FIELD_STATE) memcpy(w->field[f], src[public_slot(f)], bytes);
    w->count = s->count;
    w->time = s->time;
    w->steps = s->steps;
    zero_warm_rows(w, s->lambda ? pbf_carried_row(w) : -1);
    pbf_boxes_update(w, w->time);
    for (int b = 0; b < w->nboxes; ++b)
        for (int a = 0; a < 3; ++a) w->wall_boxes[b].prev_lo[a] = w->wall_boxes[b].lo[a];
    w->backend->boxes_changed(w);
    st = w->backend->upload(w, err);
    if (st != PBF_OK) return st;
    st = pbf_set_lambda(w, s->count, s->lambda, err); /* the carried row, or 0 */
    if (st != PBF_OK) return st;
    w->host_stale = 0;
    pbf_update_stats(w);
    return PBF_OK;
}

pbf_diagnosis pbf_world_diagnose(const pbf_world *w, double density_limit) {
    pbf_diagnosis d;
    memset(&d, 0, sizeof d);
    d.index = -1;
    d.ok = 1;
    if (!w) return d;
    /* on a device, the statistics of the step already tell a healthy state: no download */
    if (w->host_stale && !w->stats.bad_stage && w->stats.nonfinite == 0 && w->stats.escaped == 0 &&
        (density_limit <= 0.0 || w->stats.density_error_max < 0.999 * density_limit))
        return d;
    pbf_sync_host(w);
    const int n = w->count;
    /* sequential scan: called once per step by guards, O(n) and far cheaper than a step */
    int worst = -1;
    double value = 0.0;
    for (int i = 0; i < n; ++i) {
        if (!(isfinite(w->px[i]) && isfinite(w->py[i]) && isfinite(w->pz[i]) &&
              isfinite(w->vx[i]) && isfinite(w->vy[i]) && isfinite(w->vz[i]))) {
            worst = i;
            break;
        }
    }
    if (worst >= 0) {
        d.check = "non-finite";
        d.stage = w->stats.bad_stage;
    } else if (w->stats.bad_stage) {
        /* a non-finite value appeared during the last step and was clamped away by the
         * collision stage: still a failure; report the particle where it first appeared */
        d.ok = 0;
        d.check = "non-finite";
        d.stage = w->stats.bad_stage;
        d.index = w->bad.index;
        d.id = w->bad.id;
        d.position = w->bad.position;
        d.value = NAN;
        return d;
    } else {
        for (int i = 0; i < n; ++i) {
            const float p[3] = {w->px[i], w->py[i], w->pz[i]};
            double out = 0.0;
            for (int a = 0; a < 3; ++a) {
                if (p[a] < w->lo[a]) out = fmax(out, (double)w->lo[a] - p[a]);
                if (p[a] > w->hi[a]) out = fmax(out, (double)p[a] - w->hi[a]);
            }
            if (out > value) {
                value = out;
                worst = i;
            }
        }
        if (worst >= 0) d.check = "escaped";
    }
    if (worst < 0 && density_limit > 0.0) {
        for (int i = 0; i < n; ++i) {
            double e = 100.0 * ((double)w->density[i] / w->def.rest_density - 1.0);
            if (e > density_limit && e > value) {
                value = e;
                worst = i;
            }
        }
        if (worst >= 0) d.check = "density";
    }
    if (worst >= 0) {
        d.ok = 0;
        d.index = worst;
        d.id = w->id[worst];
        d.position = (pbf_vec3){w->px[worst], w->py[worst], w->pz[worst]};
        d.value = value;
    }
    return d;
}

pbf_timings pbf_world_timings(const pbf_world *w) {
    pbf_timings t;
    memset(&t, 0, sizeof t);
    return w ? w->timings : t;
}

void pbf_world_reset_timings(pbf_world *w) {
    if (w) memset(&w->timings, 0, sizeof w->timings);
}

int pbf_world_set_stage_timing(pbf_world *w, int on) {
    if (!w) return 0;
    int was = w->stage_timing;
    w->stage_timing = on != 0;
    return was;
}

pbf_memory pbf_world_memory(const pbf_world *w) {
    pbf_memory m;
    memset(&m, 0, sizeof m);
    if (!w) return m;
    m.device = w->backend->name;
    int gpu = w->backend != &pbf_backend_cpu;
    size_t cap = (size_t)(w->capacity > 0 ? w->capacity : 0) + PBF_ARRAY_PADDING;
    size_t arrays =
        cap * (gpu ? pbf_fields_solver_bytes(PBF_FIELD_CPU, &w->def) : host_bytes_per_particle(w));
    size_t lists = w->backend->list_bytes ? w->backend->list_bytes(w) : 0;
    m.grid_bytes = ((size_t)w->grid.ncells + 1) * sizeof(uint32_t);
    m.total_bytes = arrays + lists + m.grid_bytes;
    m.bytes_per_particle = w->capacity > 0 ? (double)(arrays + lists) / (double)w->capacity : 0.0;
    return m;
}

int64_t pbf_world_neighbour_pairs(const pbf_world *w) {
    if (!w) return -1;
    pbf_sync_host(w);
    const int n = w->count;
    if (n <= 0) return 0;
    /* a grid of the world's layout over the current positions (the world's own is sorted by
     * the positions of its last build), in memory of its own */
    pbf_grid g = w->grid;
    g.cell_start = calloc((size_t)g.ncells + 1, sizeof *g.cell_start);
    uint32_t *key = malloc((size_t)n * sizeof *key), *perm = malloc((size_t)n * sizeof *perm);
    uint32_t *rank = malloc((size_t)n * sizeof *rank);
    float *x = malloc((size_t)n * 3 * sizeof *x);
    int64_t pairs = -1;
    if (g.cell_start && key && perm && rank && x) {
        pbf_grid_build(&g, n, w->px, w->py, w->pz, key, rank, perm, w->nthreads);
        for (int k = 0; k < n; ++k) { /* positions in cell order: ranges are contiguous */
            x[3 * k + 0] = w->px[perm[k]];
            x[3 * k + 1] = w->py[perm[k]];
            x[3 * k + 2] = w->pz[perm[k]];
        }
        const float h2 = w->k.h2;
        long long count = 0;
#pragma omp parallel for schedule(static) num_threads(w->nthreads) reduction(+ : count)
        for (int k = 0; k < n; ++k) {
            uint32_t begin[9], end[9];
            const int nr = pbf_grid_neighbour_ranges(&g, key[perm[k]], begin, end);
            const float xi = x[3 * k], yi = x[3 * k + 1], zi = x[3 * k + 2];
            for (int r = 0; r < nr; ++r)
                for (uint32_t j = begin[r]; j < end[r]; ++j) {
                    /* as the CPU backend's list scan: the same float operations, in order */
                    const float dx = xi - x[3 * j], dy = yi - x[3 * j + 1], dz = zi - x[3 * j + 2];
                    const float r2 = dx * dx + dy * dy + dz * dz;
                    count += r2 < h2;
                }
        }
        pairs = (int64_t)count;
    }
    free(g.cell_start);
    free(key);
    free(perm);
    free(rank);
    free(x);
    return pairs;
}
