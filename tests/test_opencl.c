/*
 * The OpenCL backend against the CPU backend (the reference): one step from the same state,
 * a dam break's statistics, run-to-run determinism, snapshots across backends, boxes and moving
 * walls, the non-finite guard, device selection errors and the device memory limit; and the
 * other solvers: WCSPH, DFSPH, PCISPH and IISPH dam breaks and settled columns (substeps,
 * iterations, solve errors, states), DFSPH, PCISPH and IISPH with fixed counts, PBF stopped at a
 * tolerance, their determinism and guard.
 *
 * Exits 77 (ctest: skipped) with the reason when no OpenCL device can be opened.
 *
 * What is required, in two strengths:
 *  - the contract: the same sort (ids in the same order after a step), positions within
 *    TOL_POSITION h, velocities within TOL_VELOCITY h / dt, densities within TOL_DENSITY rho_0 after
 *    one step; statistics averaged over a dam break within TOL_ERR_AVG, TOL_ERR_MAX, TOL_SPEED.
 *  - what the backend delivers (and what these tests then require): the CPU backend's bits. The
 *    kernels add the same terms in the same order as the CPU backend (its neighbour sets, its
 *    SIMD lanes, its tree of lane sums, src/backends/gpu/pbf_kernels.cl) on IEEE single precision
 *    with correctly rounded division and square root and no contraction, so the states are
 *    identical step after step; only the statistics' double sums are reduced in another order
 *    (TOL_STATS_SUM, relative). A device or driver that contracts a * b + c, flushes denormals or
 *    rounds division differently fails the exact checks first: see the printed differences.
 * Measured on PoCL 3.1 (pthread, AVX-512 host): identical states; the mean density error of the
 * statistics equal to 1e-16.
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_prelude.h"
#include "internal.h"
#include "backends/gpu/gpu_host.h"
#include "pbf/pbf.h"
#include "test.h"

#define DT (1.0f / 240.0f)

/* one step, relative to h, h / dt and rho_0 */
#define TOL_POSITION 1e-5
#define TOL_VELOCITY 1e-5
#define TOL_DENSITY 1e-5
/* a dam break: statistics averaged over the steps, relative (the spread of two CPU runs whose
 * sums differ in the last bit: the flow is chaotic) */
#define TOL_ERR_AVG 0.02
#define TOL_ERR_MAX 0.15
#define TOL_SPEED 0.02
/* the statistics' double sums, reduced in another order */
#define TOL_STATS_SUM 1e-12

static pbf_world_def scene_def(void) {
    pbf_world_def def = pbf_default_world_def();
    def.particle_radius = 0.01f; /* h = 0.04 m */
    def.domain_max = (pbf_vec3){0.8f, 0.5f, 0.2f};
    def.vorticity = 0.05f;
    def.friction_static = 0.1f;
    def.friction_dynamic = 0.05f;
    return def;
}

static pbf_world *make(pbf_world_def def, const char *device) {
    pbf_world *w = NULL;
    pbf_error err;
    snprintf(def.device, sizeof def.device, "%s", device);
    if (pbf_world_create(&def, &w, &err) != PBF_OK) {
        printf("pbf_world_create(%s): %s\n", device, err.message);
        return NULL;
    }
    return w;
}

static int add_block(pbf_world *w, pbf_vec3 mn, pbf_vec3 mx) {
    pbf_fluid_block b = {mn, mx, {0, 0, 0}};
    pbf_error err;
    if (pbf_world_add_fluid_block(w, &b, &err) != PBF_OK) {
        printf("add block: %s\n", err.message);
        return 0;
    }
    return 1;
}

/* A dam break (3,000 particles) with or without a static obstacle and a moving wall. */
static pbf_world *dam_break_of(pbf_world_def def, const char *device, int boxes) {
    pbf_world *w = make(def, device);
    if (!w) return NULL;
    if (boxes) {
        pbf_box obstacle = {{0.45f, 0.0f, 0.05f}, {0.55f, 0.12f, 0.15f}, {0}};
        pbf_box wall = {{0.74f, 0.0f, 0.0f}, {0.78f, 0.5f, 0.2f}, {0}};
        wall.motion.type = PBF_MOTION_OSCILLATE;
        wall.motion.direction = (pbf_vec3){-1, 0, 0};
        wall.motion.amplitude = 0.05f;
        wall.motion.period = 0.5f;
        wall.motion.stop = -1.0f;
        pbf_error err;
        if (pbf_world_add_box(w, &obstacle, &err) != PBF_OK ||
            pbf_world_add_box(w, &wall, &err) != PBF_OK) {
            printf("add box: %s\n", err.message);
            pbf_world_destroy(w);
            return NULL;
        }
    }
    if (!add_block(w, (pbf_vec3){0, 0, 0}, (pbf_vec3){0.3f, 0.4f, 0.2f})) {
        pbf_world_destroy(w);
        return NULL;
    }
    return w;
}

static pbf_world *dam_break(const char *device, int boxes) {
    return dam_break_of(scene_def(), device, boxes);
}

static int steps(pbf_world *w, int n) {
    for (int s = 0; s < n; ++s)
        if (pbf_world_step(w, DT, NULL) != PBF_OK) return 0;
    return 1;
}

/* Largest differences between two worlds' particles (same order required for the ids). */
typedef struct diff {
    int same_ids;
    double x, v, rho; /* max abs difference of any component */
} diff;

static diff compare(const pbf_world *a, const pbf_world *b) {
    diff d = {1, 0.0, 0.0, 0.0};
    pbf_particles p = pbf_world_particles(a), q = pbf_world_particles(b);
    if (p.count != q.count) {
        d.same_ids = 0;
        return d;
    }
    for (int i = 0; i < p.count; ++i) {
        if (p.id[i] != q.id[i]) d.same_ids = 0;
        const double dx[3] = {p.x[i] - q.x[i], p.y[i] - q.y[i], p.z[i] - q.z[i]};
        const double dv[3] = {p.vx[i] - q.vx[i], p.vy[i] - q.vy[i], p.vz[i] - q.vz[i]};
        for (int k = 0; k < 3; ++k) {
            if (!(fabs(dx[k]) <= d.x)) d.x = isnan(dx[k]) ? INFINITY : fabs(dx[k]);
            if (!(fabs(dv[k]) <= d.v)) d.v = isnan(dv[k]) ? INFINITY : fabs(dv[k]);
        }
        const double dr = fabs((double)p.density[i] - q.density[i]);
        if (!(dr <= d.rho)) d.rho = isnan(dr) ? INFINITY : dr;
    }
    return d;
}

/* Copies a world's state into owned arrays (a snapshot outlives the next step). */
typedef struct state {
    pbf_snapshot s;
    float *f[7];
    uint32_t *id;
} state;

static int save(const pbf_world *w, state *st) {
    pbf_snapshot s = pbf_world_snapshot(w);
    const float *src[7] = {s.x, s.y, s.z, s.vx, s.vy, s.vz, s.density};
    size_t n = (size_t)(s.count > 0 ? s.count : 1);
    memset(st, 0, sizeof *st);
    for (int k = 0; k < 7; ++k) {
        st->f[k] = malloc(n * sizeof(float));
        if (!st->f[k]) return 0;
        if (s.count) memcpy(st->f[k], src[k], (size_t)s.count * sizeof(float));
    }
    st->id = malloc(n * sizeof(uint32_t));
    if (!st->id) return 0;
    if (s.count) memcpy(st->id, s.id, (size_t)s.count * sizeof(uint32_t));
    st->s = s;
    st->s.x = st->f[0];
    st->s.y = st->f[1];
    st->s.z = st->f[2];
    st->s.vx = st->f[3];
    st->s.vy = st->f[4];
    st->s.vz = st->f[5];
    st->s.density = st->f[6];
    st->s.id = st->id;
    return 1;
}

static void drop(state *st) {
    for (int k = 0; k < 7; ++k) free(st->f[k]);
    free(st->id);
    memset(st, 0, sizeof *st);
}

static int restore(pbf_world *w, const state *st) {
    pbf_error err;
    if (pbf_world_restore(w, &st->s, &err) != PBF_OK) {
        printf("restore: %s\n", err.message);
        return 0;
    }
    return 1;
}

static uint64_t state_hash(const pbf_world *w) {
    pbf_particles p = pbf_world_particles(w);
    uint64_t h = 1469598103934665603ull;
    const void *arrays[8] = {p.x, p.y, p.z, p.vx, p.vy, p.vz, p.density, p.id};
    for (int a = 0; a < 8; ++a) {
        const unsigned char *b = arrays[a];
        for (size_t i = 0; i < (size_t)p.count * 4; ++i) h = (h ^ b[i]) * 1099511628211ull;
    }
    return h;
}

/* One step from the same (dynamic) state on both backends: the same sort, the same values up
 * to rounding. */
static void check_one_step(int boxes) {
    pbf_world *ref = dam_break("cpu", boxes);
    ENSURE(ref);
    ENSURE(steps(ref, 40)); /* a moving state: the fluid is falling and spreading */
    state st;
    ENSURE(save(ref, &st));
    pbf_world *cpu = dam_break("cpu", boxes), *gpu = dam_break("opencl", boxes);
    ENSURE(cpu && gpu);
    ENSURE(restore(cpu, &st) && restore(gpu, &st));
    diff d0 = compare(cpu, gpu);
    ENSURE(d0.same_ids && d0.x == 0.0 && d0.v == 0.0 && d0.rho == 0.0); /* the upload is exact */
    ENSURE(steps(cpu, 1) && steps(gpu, 1));
    const pbf_derived dv = pbf_world_derived(cpu);
    const double h = dv.h, rho0 = scene_def().rest_density;
    diff d = compare(cpu, gpu);
    printf("  one step%s: |dx| %.3g h, |dv| %.3g h/dt, |drho| %.3g rho0, same order %d\n",
           boxes ? " (boxes)" : "", d.x / h, d.v * DT / h, d.rho / rho0, d.same_ids);
    ENSURE(d.same_ids);
    ENSURE(d.x <= TOL_POSITION * h);
    ENSURE(d.v <= TOL_VELOCITY * h / DT);
    ENSURE(d.rho <= TOL_DENSITY * rho0);
    ENSURE(d.x == 0.0 && d.v == 0.0 && d.rho == 0.0); /* the CPU's bits */
    ENSURE(state_hash(cpu) == state_hash(gpu));
    pbf_stats a = pbf_world_stats(cpu), b = pbf_world_stats(gpu);
    ENSURE_EQ_INT(a.particles, b.particles);
    ENSURE_NEAR(b.density_error_avg, a.density_error_avg, TOL_STATS_SUM * a.density_error_avg);
    ENSURE(b.density_error_max == a.density_error_max && b.max_speed == a.max_speed);
    ENSURE(a.time == b.time && a.steps == b.steps);
    drop(&st);
    pbf_world_destroy(ref);
    pbf_world_destroy(cpu);
    pbf_world_destroy(gpu);
}

static void test_one_step_matches_cpu(void) {
    check_one_step(0);
}
static void test_boxes_one_step_matches_cpu(void) {
    check_one_step(1);
}

/* Runs both worlds n steps and compares their statistics averaged over those steps (a single
 * step's maximum is too chaotic to compare: see the tolerances at the top). */
static void run_and_compare_solve(pbf_world *cpu, pbf_world *gpu, int n, const char *what);

static void run_and_compare(pbf_world *cpu, pbf_world *gpu, int n) {
    double mc[3] = {0, 0, 0}, mg[3] = {0, 0, 0};
    for (int s = 0; s < n; ++s) {
        ENSURE(steps(cpu, 1) && steps(gpu, 1));
        pbf_stats a = pbf_world_stats(cpu), b = pbf_world_stats(gpu);
        ENSURE_EQ_INT(b.particles, a.particles);
        ENSURE_EQ_INT(b.nonfinite, 0);
        ENSURE_EQ_INT(b.escaped, 0);
        ENSURE(b.bad_stage == NULL);
        ENSURE(b.speed_clamps == a.speed_clamps); /* the speed limit's cuts, counted alike */
        mc[0] += a.density_error_avg / n;
        mc[1] += a.density_error_max / n;
        mc[2] += a.max_speed / n;
        mg[0] += b.density_error_avg / n;
        mg[1] += b.density_error_max / n;
        mg[2] += b.max_speed / n;
    }
    printf("  means over %d steps: density error avg %.4f / %.4f %%, max %.3f / %.3f %%, "
           "max speed %.4f / %.4f m/s (cpu / opencl)\n",
           n, mc[0], mg[0], mc[1], mg[1], mc[2], mg[2]);
    ENSURE_NEAR(mg[0], mc[0], TOL_ERR_AVG * mc[0]);
    ENSURE_NEAR(mg[1], mc[1], TOL_ERR_MAX * mc[1]);
    ENSURE_NEAR(mg[2], mc[2], TOL_SPEED * mc[2]);
    /* and the CPU's bits all along */
    ENSURE(state_hash(cpu) == state_hash(gpu));
    ENSURE_NEAR(mg[0], mc[0], TOL_STATS_SUM * mc[0]);
    ENSURE(mg[1] == mc[1] && mg[2] == mc[2]);
}

/* A short dam break: the statistics of the two backends agree. */
static void check_dam_break(int boxes) {
    pbf_world *cpu = dam_break("cpu", boxes), *gpu = dam_break("opencl", boxes);
    ENSURE(cpu && gpu);
    const int n = pbf_world_stats(cpu).particles;
    ENSURE(n > 2000 && pbf_world_stats(gpu).particles == n);
    run_and_compare(cpu, gpu, 100);
    ENSURE_EQ_INT(pbf_world_particles(gpu).count, n);
    /* every identity still there once */
    pbf_particles p = pbf_world_particles(gpu);
    char *seen = calloc((size_t)n, 1);
    ENSURE(seen);
    int ok = 1;
    for (int i = 0; i < n; ++i) {
        if (p.id[i] >= (uint32_t)n || seen[p.id[i]])
            ok = 0;
        else
            seen[p.id[i]] = 1;
    }
    free(seen);
    ENSURE(ok);
    pbf_world_destroy(cpu);
    pbf_world_destroy(gpu);
}

static void test_dam_break_matches_cpu(void) {
    check_dam_break(0);
}
static void test_moving_wall_matches_cpu(void) {
    check_dam_break(1);
}

/* Without vorticity confinement the CPU's velocity stage is the density and XSPH alone (no curl,
 * no |omega| gathered), while the device computes omega and leaves it unused: the CPU's bits
 * still, step after step (also its delta p reading the wall gradient lambda left it, and its
 * collisions skipped inside the container, against the device's full pbf_collide). */
static void test_no_vorticity_matches_cpu(void) {
    pbf_world_def def = scene_def();
    def.vorticity = 0.0f;
    pbf_world *cpu = dam_break_of(def, "cpu", 0), *gpu = dam_break_of(def, "opencl", 0);
    ENSURE(cpu && gpu);
    run_and_compare(cpu, gpu, 100);
    pbf_world_destroy(cpu);
    pbf_world_destroy(gpu);
}

/* The bed shear stress (bed_friction) on every wall, the obstacle and the moving wall included:
 * the CPU's bits, in PBF's prediction and in the SPH solvers' gravity stage. */
static void test_bed_friction_matches_cpu(void) {
    pbf_world_def def = scene_def();
    def.bed_friction = 0.02f;
    def.bed_friction_walls = PBF_BED_WALLS_ALL;
    pbf_world *cpu = dam_break_of(def, "cpu", 1), *gpu = dam_break_of(def, "opencl", 1);
    ENSURE(cpu && gpu);
    run_and_compare(cpu, gpu, 100);
    pbf_world_destroy(cpu);
    pbf_world_destroy(gpu);
    def.solver = PBF_SOLVER_WCSPH;
    def.bed_friction_walls = PBF_BED_WALLS_BED;
    cpu = dam_break_of(def, "cpu", 1);
    gpu = dam_break_of(def, "opencl", 1);
    ENSURE(cpu && gpu);
    run_and_compare_solve(cpu, gpu, 40, "wcsph, bed friction");
    pbf_world_destroy(cpu);
    pbf_world_destroy(gpu);
}

/* Chebyshev acceleration of the iterations: the previous iteration's lambda, read back on the
 * device, gives the CPU's bits. */
static void test_chebyshev_matches_cpu(void) {
    pbf_world_def def = scene_def();
    def.pbf.chebyshev_rho = 0.7f;
    pbf_world *cpu = make(def, "cpu"), *gpu = make(def, "opencl");
    ENSURE(cpu && gpu);
    ENSURE(add_block(cpu, (pbf_vec3){0, 0, 0}, (pbf_vec3){0.2f, 0.3f, 0.2f}));
    ENSURE(add_block(gpu, (pbf_vec3){0, 0, 0}, (pbf_vec3){0.2f, 0.3f, 0.2f}));
    run_and_compare(cpu, gpu, 20);
    pbf_world_destroy(cpu);
    pbf_world_destroy(gpu);
}

/* Other solver settings (the bilateral constraint, s_corr with n = 3, over-relaxation, two
 * iterations) and particles added in the middle of a run (the device arrays grow with particles
 * on them, then the sort and density of the refresh): still the CPU's bits. */
static void test_options_and_growth_match_cpu(void) {
    pbf_world_def def = scene_def();
    def.pbf.constraint = PBF_CONSTRAINT_BILATERAL;
    def.pbf.scorr_n = 3;
    def.pbf.over_relaxation = 1.3f;
    def.pbf.solver_iterations = 2;
    def.vorticity = 0.1f;
    def.xsph_viscosity = 0.05f;
    pbf_world *cpu = make(def, "cpu"), *gpu = make(def, "opencl");
    ENSURE(cpu && gpu);
    ENSURE(add_block(cpu, (pbf_vec3){0, 0, 0}, (pbf_vec3){0.2f, 0.3f, 0.2f}));
    ENSURE(add_block(gpu, (pbf_vec3){0, 0, 0}, (pbf_vec3){0.2f, 0.3f, 0.2f}));
    ENSURE(state_hash(cpu) == state_hash(gpu)); /* the refresh: sort and density */
    run_and_compare(cpu, gpu, 20);
    ENSURE(add_block(cpu, (pbf_vec3){0.5f, 0.2f, 0.0f}, (pbf_vec3){0.7f, 0.45f, 0.2f}));
    ENSURE(add_block(gpu, (pbf_vec3){0.5f, 0.2f, 0.0f}, (pbf_vec3){0.7f, 0.45f, 0.2f}));
    ENSURE(state_hash(cpu) == state_hash(gpu));
    run_and_compare(cpu, gpu, 20);
    pbf_world_destroy(cpu);
    pbf_world_destroy(gpu);
}

/* A speed limit low enough to cut velocities every step (cfl 0.1: 0.96 m/s): both backends cut
 * the same velocities and count the same cuts in every step (stats.speed_clamps), with the CPU's
 * bits all along. */
static void test_speed_clamps_match_cpu(void) {
    pbf_world_def def = scene_def();
    def.cfl = 0.1f;
    pbf_world *cpu = make(def, "cpu"), *gpu = make(def, "opencl");
    ENSURE(cpu && gpu);
    ENSURE(add_block(cpu, (pbf_vec3){0, 0, 0}, (pbf_vec3){0.3f, 0.4f, 0.2f}));
    ENSURE(add_block(gpu, (pbf_vec3){0, 0, 0}, (pbf_vec3){0.3f, 0.4f, 0.2f}));
    int64_t total = 0;
    for (int s = 0; s < 60; ++s) {
        ENSURE(steps(cpu, 1) && steps(gpu, 1));
        pbf_stats a = pbf_world_stats(cpu), b = pbf_world_stats(gpu);
        if (a.speed_clamps != b.speed_clamps)
            printf("  step %d: %lld cuts on the CPU, %lld on OpenCL\n", s + 1,
                   (long long)a.speed_clamps, (long long)b.speed_clamps);
        ENSURE(a.speed_clamps == b.speed_clamps);
        total += a.speed_clamps;
    }
    printf("  cfl 0.1: %lld speed-limit cuts in 60 steps on both backends\n", (long long)total);
    ENSURE(total > 100);
    ENSURE(state_hash(cpu) == state_hash(gpu));
    pbf_world_destroy(cpu);
    pbf_world_destroy(gpu);
}

/* Two runs on the device: bit-identical states. */
static void test_determinism(void) {
    uint64_t hash[2];
    pbf_stats st[2];
    for (int r = 0; r < 2; ++r) {
        pbf_world *w = dam_break("opencl", 1);
        ENSURE(w);
        ENSURE(steps(w, 60));
        hash[r] = state_hash(w);
        st[r] = pbf_world_stats(w);
        pbf_world_destroy(w);
    }
    ENSURE(hash[0] == hash[1]);
    ENSURE(memcmp(&st[0].density_error_avg, &st[1].density_error_avg, sizeof(double)) == 0);
    ENSURE(st[0].density_error_max == st[1].density_error_max);
    ENSURE(st[0].max_speed == st[1].max_speed);
}

/* A snapshot of one backend restored into the other continues with matching statistics. */
static void check_cross_restore(const char *from, const char *to) {
    pbf_world *a = dam_break(from, 1);
    ENSURE(a);
    ENSURE(steps(a, 30));
    state st;
    ENSURE(save(a, &st));
    pbf_world *b = dam_break(to, 1);
    ENSURE(b);
    ENSURE(restore(b, &st));
    ENSURE(state_hash(a) == state_hash(b));
    ENSURE(pbf_world_stats(b).time == pbf_world_stats(a).time);
    const int cpu_first = strcmp(from, "cpu") == 0;
    run_and_compare(cpu_first ? a : b, cpu_first ? b : a, 60);
    ENSURE(pbf_world_stats(a).steps == pbf_world_stats(b).steps);
    drop(&st);
    pbf_world_destroy(a);
    pbf_world_destroy(b);
}

static void test_snapshot_opencl_to_cpu(void) {
    check_cross_restore("opencl", "cpu");
}
static void test_snapshot_cpu_to_opencl(void) {
    check_cross_restore("cpu", "opencl");
}

/* A NaN velocity: the guard names the predict stage and the particle, with its position at the
 * start of the step, as on the CPU; the collision stage puts the particle back on the container
 * wall and nothing non-finite reaches its neighbours. */
static void test_nan_guard(void) {
    pbf_world *cpu = dam_break("cpu", 1), *gpu = dam_break("opencl", 1);
    ENSURE(cpu && gpu);
    ENSURE(steps(cpu, 10));
    state st;
    ENSURE(save(cpu, &st));
    const int victim = st.s.count / 3;
    const uint32_t id = st.id[victim];
    const float pos[3] = {st.f[0][victim], st.f[1][victim], st.f[2][victim]};
    st.f[4][victim] = NAN; /* vy */
    ENSURE(restore(cpu, &st) && restore(gpu, &st));
    pbf_diagnosis before = pbf_world_diagnose(gpu, 0.0);
    ENSURE(!before.ok && strcmp(before.check, "non-finite") == 0 && before.index == victim);
    ENSURE(steps(cpu, 1) && steps(gpu, 1));
    pbf_stats sc = pbf_world_stats(cpu), sg = pbf_world_stats(gpu);
    ENSURE(sc.bad_stage && strcmp(sc.bad_stage, "predict") == 0);
    ENSURE(sg.bad_stage && strcmp(sg.bad_stage, "predict") == 0);
    ENSURE_EQ_INT(sg.nonfinite, 0);
    ENSURE_EQ_INT(sg.escaped, 0);
    /* one NaN does not spread to its neighbours on either backend (masked padding lanes) */
    ENSURE_EQ_INT(sc.nonfinite, 0);
    ENSURE_EQ_INT(sc.escaped, 0);
    pbf_diagnosis d = pbf_world_diagnose(gpu, 0.0);
    printf("  opencl: %s in %s, particle %d (id %u, victim %u) at (%g, %g, %g)\n", d.check, d.stage,
           d.index, d.id, id, d.position.x, d.position.y, d.position.z);
    ENSURE(!d.ok && strcmp(d.check, "non-finite") == 0 && strcmp(d.stage, "predict") == 0);
    ENSURE(d.id == id);
    ENSURE(d.index >= 0 && pbf_world_particles(gpu).id[d.index] == id);
    ENSURE(d.position.x == pos[0] && d.position.y == pos[1] && d.position.z == pos[2]);
    /* the particle of the same id on the CPU went to the same place in the sort */
    ENSURE(pbf_world_particles(cpu).id[d.index] == id);
    /* the next step of the now finite state reports nothing */
    ENSURE(steps(gpu, 1));
    ENSURE(pbf_world_stats(gpu).bad_stage == NULL);
    ENSURE(pbf_world_diagnose(gpu, 0.0).ok);
    drop(&st);
    pbf_world_destroy(cpu);
    pbf_world_destroy(gpu);
}

/* ---- the SPH solvers on the device: WCSPH, DFSPH, PCISPH, IISPH, and PBF stopped at a
 * tolerance ----------------------------------------------------------------------------------
 * The same contract as PBF's: the CPU's bits step after step (the same substeps, the same
 * iterations of every solve, the same particles), the solves' errors up to the order of their
 * double sums (TOL_STATS_SUM): the device reduces them in a tree, the CPU in index order. An
 * error landing within that of a tolerance could stop a solve one iteration apart; the states
 * then differ, and the exact checks below say so. */

/* One CPU thread: the same bits as any count (tests/test_sph.c), and no spinning OpenMP barriers
 * between the many short stages of the substeps on a loaded machine. */
static pbf_world_def solver_def(pbf_solver_kind solver) {
    pbf_world_def def = scene_def();
    def.solver = solver;
    def.threads = 1;
    return def;
}

static const char *solver_name(pbf_solver_kind solver) {
    const pbf_solver *m = pbf_solver_of(solver);
    return m ? m->info.name : "?";
}

/* The SPH solvers the GPU backends run, in the order of pbf_solvers() (the registry's): every
 * method of the SPH family with GPU launches, those added later included. */
#define NSPH_MAX 16
static int sph_solver_list(pbf_solver_kind *out) {
    int n = 0, nm = 0;
    const pbf_solver *const *all = pbf_solver_all(&nm);
    for (int m = 0; m < nm && n < NSPH_MAX; ++m)
        if (all[m]->sph && all[m]->gpu) out[n++] = all[m]->info.kind;
    return n;
}

/* n steps of both worlds, compared after each. */
static void run_and_compare_solve(pbf_world *cpu, pbf_world *gpu, int n, const char *what) {
    long long subs = 0, its = 0, divs = 0;
    double e_avg = 0.0, d_err = 0.0;
    for (int s = 0; s < n; ++s) {
        ENSURE(steps(cpu, 1) && steps(gpu, 1));
        const pbf_stats a = pbf_world_stats(cpu), b = pbf_world_stats(gpu);
        ENSURE_EQ_INT(b.particles, a.particles);
        ENSURE_EQ_INT(b.nonfinite, 0);
        ENSURE_EQ_INT(b.escaped, 0);
        ENSURE(a.bad_stage == NULL && b.bad_stage == NULL);
        ENSURE_EQ_INT(b.substeps, a.substeps);
        ENSURE_EQ_INT(b.iterations, a.iterations);
        ENSURE_EQ_INT(b.divergence_iterations, a.divergence_iterations);
        ENSURE_NEAR(b.solver_error, a.solver_error, TOL_STATS_SUM * a.solver_error);
        ENSURE_NEAR(b.divergence_error, a.divergence_error, TOL_STATS_SUM * a.divergence_error);
        ENSURE_NEAR(b.density_error_avg, a.density_error_avg, TOL_STATS_SUM * a.density_error_avg);
        ENSURE(b.density_error_max == a.density_error_max && b.max_speed == a.max_speed);
        ENSURE(state_hash(cpu) == state_hash(gpu));
        subs += b.substeps;
        its += b.iterations;
        divs += b.divergence_iterations;
        e_avg += b.density_error_avg / n;
        const double de = fabs(b.solver_error - a.solver_error);
        if (de > d_err) d_err = de;
    }
    const pbf_stats b = pbf_world_stats(gpu);
    printf("  %s, %d steps: identical states; %lld substeps, %lld iterations, %lld divergence "
           "iterations; density error avg %.4f %% (mean), solve error %.4g %% (last, largest "
           "difference %.2g), max speed %.3f m/s\n",
           what, n, subs, its, divs, e_avg, b.solver_error, d_err, b.max_speed);
}

/* A dam break with an obstacle and a moving wall, 40 steps of 1/240 s, from the start. */
static void check_sph_dam_break(pbf_solver_kind solver) {
    pbf_world *cpu = dam_break_of(solver_def(solver), "cpu", 1);
    pbf_world *gpu = dam_break_of(solver_def(solver), "opencl", 1);
    ENSURE(cpu && gpu);
    ENSURE(state_hash(cpu) == state_hash(gpu));
    run_and_compare_solve(cpu, gpu, 40, solver_name(solver));
    pbf_world_destroy(cpu);
    pbf_world_destroy(gpu);
}

static void test_wcsph_dam_break_matches_cpu(void) {
    check_sph_dam_break(PBF_SOLVER_WCSPH);
}
static void test_dfsph_dam_break_matches_cpu(void) {
    check_sph_dam_break(PBF_SOLVER_DFSPH);
}
/* PCISPH: its predicted positions, predicted pressure accelerations (s and v swap roles) and
 * tolerance stop; IISPH: its diagonal, relaxed Jacobi updates and tolerance stop. */
static void test_pcisph_dam_break_matches_cpu(void) {
    check_sph_dam_break(PBF_SOLVER_PCISPH);
}
static void test_iisph_dam_break_matches_cpu(void) {
    check_sph_dam_break(PBF_SOLVER_IISPH);
}

/* The warm starts on the device: DFSPH's (off by default) at SPlisHSPlasH's 0.5, its divergence
 * warm start within the first iteration alone and with the density solve's start, and IISPH's
 * (on by default) off: the CPU's states step by step. */
static void test_warm_starts_match_cpu(void) {
    static const float both[3][2] = {{0.5f, 0.0f}, {0.0f, 0.5f}, {0.5f, 0.5f}};
    static const char *const what[3] = {"dfsph, warm start 0.5",
                                        "dfsph, divergence warm start 0.5",
                                        "dfsph, warm start 0.5, divergence warm start 0.5"};
    pbf_world_def def;
    pbf_world *cpu, *gpu;
    for (int k = 0; k < 3; ++k) {
        def = solver_def(PBF_SOLVER_DFSPH);
        def.dfsph.warm_start = both[k][0];
        def.dfsph.divergence_warm_start = both[k][1];
        cpu = dam_break_of(def, "cpu", 1);
        gpu = dam_break_of(def, "opencl", 1);
        ENSURE(cpu && gpu);
        if (cpu && gpu) run_and_compare_solve(cpu, gpu, 40, what[k]);
        pbf_world_destroy(cpu);
        pbf_world_destroy(gpu);
    }
    def = solver_def(PBF_SOLVER_IISPH);
    def.iisph.warm_start = 0.0f;
    cpu = dam_break_of(def, "cpu", 1);
    gpu = dam_break_of(def, "opencl", 1);
    ENSURE(cpu && gpu);
    if (cpu && gpu) run_and_compare_solve(cpu, gpu, 40, "iisph, no warm start");
    pbf_world_destroy(cpu);
    pbf_world_destroy(gpu);
}

/* DFSPH's divergence solve without the particles of too low a density number
 * (dfsph_divergence_min_density, off by default; at 0.95 the splash and free-surface particles of
 * the dam break drop out), alone and with the warm start: the CPU's states step by step. */
static void test_dfsph_min_density_matches_cpu(void) {
    for (int warm = 0; warm < 2; ++warm) {
        pbf_world_def def = solver_def(PBF_SOLVER_DFSPH);
        def.dfsph.divergence_min_density = 0.95f;
        def.dfsph.warm_start = warm ? 0.5f : 0.0f;
        pbf_world *cpu = dam_break_of(def, "cpu", 1), *gpu = dam_break_of(def, "opencl", 1);
        ENSURE(cpu && gpu);
        if (cpu && gpu)
            run_and_compare_solve(cpu, gpu, 40,
                                  warm ? "dfsph, divergence min density 0.95, warm start 0.5"
                                       : "dfsph, divergence min density 0.95");
        pbf_world_destroy(cpu);
        pbf_world_destroy(gpu);
    }
}

/* DFSPH, PCISPH and IISPH with fixed iteration counts (tolerances 0: no read-back, the errors
 * arrive with the statistics) and from a moving state restored into both backends; PBF stopped
 * at a tolerance (one read of the error per iteration). */
static void test_fixed_counts_and_pbf_tolerance_match_cpu(void) {
    pbf_world_def def = solver_def(PBF_SOLVER_DFSPH);
    def.dfsph.tolerance = 0.0f;
    def.dfsph.max_iterations = 3;
    def.dfsph.divergence_tolerance = 0.0f;
    def.dfsph.divergence_max_iterations = 2;
    pbf_world *ref = dam_break_of(solver_def(PBF_SOLVER_DFSPH), "cpu", 0);
    ENSURE(ref);
    ENSURE(steps(ref, 30));
    state st;
    ENSURE(save(ref, &st));
    pbf_world *cpu = dam_break_of(def, "cpu", 0), *gpu = dam_break_of(def, "opencl", 0);
    ENSURE(cpu && gpu);
    ENSURE(restore(cpu, &st) && restore(gpu, &st));
    run_and_compare_solve(cpu, gpu, 20, "dfsph, 3 + 2 iterations");
    ENSURE(pbf_world_stats(gpu).iterations == 3 * pbf_world_stats(gpu).substeps);
    ENSURE(pbf_world_stats(gpu).solver_error > 0.0);
    pbf_world_destroy(ref);
    pbf_world_destroy(cpu);
    pbf_world_destroy(gpu);

    /* PCISPH and IISPH with a fixed count (tolerance 0), from the same moving state */
    for (int k = 0; k < 2; ++k) {
        const pbf_solver_kind kind = k ? PBF_SOLVER_IISPH : PBF_SOLVER_PCISPH;
        def = solver_def(kind);
        def.pcisph.tolerance = def.iisph.tolerance = 0.0f;
        def.pcisph.max_iterations = def.iisph.max_iterations = 4;
        cpu = dam_break_of(def, "cpu", 0);
        gpu = dam_break_of(def, "opencl", 0);
        ENSURE(cpu && gpu);
        ENSURE(restore(cpu, &st) && restore(gpu, &st));
        char what[64];
        snprintf(what, sizeof what, "%s, 4 iterations", solver_name(kind));
        run_and_compare_solve(cpu, gpu, 20, what);
        ENSURE(pbf_world_stats(gpu).iterations == 4 * pbf_world_stats(gpu).substeps);
        ENSURE(pbf_world_stats(gpu).solver_error > 0.0);
        pbf_world_destroy(cpu);
        pbf_world_destroy(gpu);
    }
    drop(&st);

    def = solver_def(PBF_SOLVER_PBF);
    def.pbf.tolerance = 0.3f;
    def.pbf.min_iterations = 1;
    def.pbf.max_iterations = 10;
    cpu = dam_break_of(def, "cpu", 1);
    gpu = dam_break_of(def, "opencl", 1);
    ENSURE(cpu && gpu);
    run_and_compare_solve(cpu, gpu, 40, "pbf, tolerance 0.3 %");
    pbf_world_destroy(cpu);
    pbf_world_destroy(gpu);
}

/* A settled column (768 particles, 1 s of steps of 1/120 s) on the device: the CPU's state and
 * statistics, and the density error of the CPU's figures (tests/test_sph.c's bounds). */
static void test_sph_column_matches_cpu(void) {
    pbf_solver_kind solvers[NSPH_MAX];
    const int nsph = sph_solver_list(solvers);
    ENSURE(nsph >= 4);
    for (int k = 0; k < nsph; ++k) {
        pbf_world_def def = pbf_default_world_def();
        def.particle_radius = 0.0125f;
        def.domain_max = (pbf_vec3){0.2f, 0.6f, 0.2f};
        def.solver = solvers[k];
        def.threads = 1;
        pbf_world *w[2] = {make(def, "cpu"), make(def, "opencl")};
        ENSURE(w[0] && w[1]);
        for (int b = 0; b < 2; ++b)
            ENSURE(add_block(w[b], (pbf_vec3){0, 0, 0}, (pbf_vec3){0.2f, 0.3f, 0.2f}));
        for (int s = 0; s < 120; ++s)
            for (int b = 0; b < 2; ++b) ENSURE(pbf_world_step(w[b], 1.0f / 120.0f, NULL) == PBF_OK);
        const pbf_stats a = pbf_world_stats(w[0]), g = pbf_world_stats(w[1]);
        printf("  %s column after 1 s: density error avg %.4f / %.4f %%, max %.3f / %.3f %% "
               "(cpu / opencl)\n",
               solver_name(solvers[k]), a.density_error_avg, g.density_error_avg,
               a.density_error_max, g.density_error_max);
        ENSURE(state_hash(w[0]) == state_hash(w[1]));
        ENSURE_NEAR(g.density_error_avg, a.density_error_avg, TOL_STATS_SUM * a.density_error_avg);
        ENSURE(g.density_error_max == a.density_error_max);
        ENSURE(g.density_error_avg < (pbf_solver_of(solvers[k])->bounds(&def, PBF_SOLVE_DENSITY).tol > 0.0f ? 0.5 : 1.5)); /* (the state-equation methods: no solve) */
        ENSURE(g.density_error_max < (solvers[k] == PBF_SOLVER_IISPH ? 8.0 : 5.0));
        ENSURE_EQ_INT(g.escaped, 0);
        ENSURE_EQ_INT(g.nonfinite, 0);
        pbf_world_destroy(w[0]);
        pbf_world_destroy(w[1]);
    }
}

/* Two runs of each SPH solver on the device: bit-identical states and statistics. */
static void test_sph_determinism(void) {
    pbf_solver_kind solvers[NSPH_MAX];
    const int nsph = sph_solver_list(solvers);
    ENSURE(nsph >= 4);
    for (int k = 0; k < nsph; ++k) {
        uint64_t hash[2];
        pbf_stats st[2];
        for (int r = 0; r < 2; ++r) {
            pbf_world *w = dam_break_of(solver_def(solvers[k]), "opencl", 1);
            ENSURE(w);
            ENSURE(steps(w, 30));
            hash[r] = state_hash(w);
            st[r] = pbf_world_stats(w);
            pbf_world_destroy(w);
        }
        ENSURE(hash[0] == hash[1]);
        ENSURE(memcmp(&st[0].solver_error, &st[1].solver_error, sizeof(double)) == 0);
        ENSURE(memcmp(&st[0].divergence_error, &st[1].divergence_error, sizeof(double)) == 0);
        ENSURE(st[0].iterations == st[1].iterations && st[0].substeps == st[1].substeps);
        ENSURE(memcmp(&st[0].density_error_avg, &st[1].density_error_avg, sizeof(double)) == 0);
    }
}

/* A NaN velocity under DFSPH: the guard names the gravity stage (the first of a substep) and the
 * particle, with its position at the start of the step, as on the CPU. */
static void test_sph_nan_guard(void) {
    pbf_world *cpu = dam_break_of(solver_def(PBF_SOLVER_DFSPH), "cpu", 1);
    pbf_world *gpu = dam_break_of(solver_def(PBF_SOLVER_DFSPH), "opencl", 1);
    ENSURE(cpu && gpu);
    ENSURE(steps(cpu, 10));
    state st;
    ENSURE(save(cpu, &st));
    const int victim = st.s.count / 3;
    const uint32_t id = st.id[victim];
    const float pos[3] = {st.f[0][victim], st.f[1][victim], st.f[2][victim]};
    st.f[3][victim] = NAN; /* vx */
    ENSURE(restore(cpu, &st) && restore(gpu, &st));
    ENSURE(steps(cpu, 1) && steps(gpu, 1));
    pbf_diagnosis dc = pbf_world_diagnose(cpu, 0.0), dg = pbf_world_diagnose(gpu, 0.0);
    printf("  opencl: %s in %s, particle %d (id %u, victim %u); cpu: %s in %s, particle %d\n",
           dg.check, dg.stage, dg.index, dg.id, id, dc.check, dc.stage, dc.index);
    ENSURE(pbf_world_stats(cpu).bad_stage && pbf_world_stats(gpu).bad_stage);
    ENSURE(strcmp(pbf_world_stats(cpu).bad_stage, "gravity") == 0);
    ENSURE(strcmp(pbf_world_stats(gpu).bad_stage, "gravity") == 0);
    ENSURE(!dg.ok && strcmp(dg.stage, "gravity") == 0 && dg.id == id && dc.id == id);
    ENSURE(dg.index == dc.index && pbf_world_particles(gpu).id[dg.index] == id);
    ENSURE(dg.position.x == pos[0] && dg.position.y == pos[1] && dg.position.z == pos[2]);
    ENSURE(state_hash(cpu) == state_hash(gpu));
    drop(&st);
    pbf_world_destroy(cpu);
    pbf_world_destroy(gpu);
}

/* The index of the first row of a method's table named `name` (-1: none). */
static int row_of(pbf_solver_kind kind, const char *name) {
    int n = 0;
    const pbf_stage_desc *st = pbf_stage_table(kind, &n);
    for (int r = 0; r < n; ++r)
        if (strcmp(st[r].name, name) == 0) return r;
    return -1;
}

/* The guard's bookkeeping over substeps (gpu_host.h, shared with the CUDA backend): slots restart
 * at 0 in every substep (slot 0: gravity, followed through the sort), a launch of the step is
 * base + slot, and the log names the row (stage) of any launch of the step, whatever the iteration
 * counts of the substeps before it; a substep never needs more slots than counted. */
/* The next slot of the row of DFSPH's table named `name` (its first). */
static int next_slot_of(pbf_gpu_step *s, const char *name) {
    s->row = row_of(PBF_SOLVER_DFSPH, name);
    return pbf_gpu_next_slot(s);
}

static void test_guard_slots_over_substeps(void) {
    pbf_world_def def = solver_def(PBF_SOLVER_DFSPH);
    def.dfsph.max_iterations = 5;
    def.dfsph.divergence_max_iterations = 4;
    pbf_gpu_step s;
    memset(&s, 0, sizeof s);
    s.nslots = pbf_gpu_slots_per_substep(&def);
    ENSURE_EQ_INT(s.nslots, 2 + (2 * 4 + 1) + (2 * 5 + 1) + 4 + 4); /* + the warm starts */
    const int iters[3] = {5, 1, 3}; /* density iterations per substep (divergence: 4, 0, 2) */
    int launch_of_accel[3] = {0, 0, 0}, launches = 0;
    for (int sub = 0; sub < 3; ++sub) {
        ENSURE_EQ_INT(pbf_gpu_begin_substep(&s), sub == 0);
        ENSURE_EQ_INT(s.base, launches);
        ENSURE_EQ_INT(next_slot_of(&s, "gravity"), 0);
        next_slot_of(&s, "dfsph_factor");
        next_slot_of(&s, "dfsph_warm_v"); /* the warm start of each solve */
        next_slot_of(&s, "pressure_accel");
        for (int k = 0; k < iters[sub] - 1; ++k) {
            next_slot_of(&s, "divergence");
            next_slot_of(&s, "pressure_accel");
        }
        next_slot_of(&s, "divergence");
        next_slot_of(&s, "dfsph_warm");
        next_slot_of(&s, "pressure_accel");
        for (int k = 0; k < iters[sub]; ++k) {
            next_slot_of(&s, "density_adv");
            launch_of_accel[sub] = s.base + next_slot_of(&s, "pressure_accel");
        }
        next_slot_of(&s, "density_adv");
        next_slot_of(&s, "collide");
        next_slot_of(&s, "velocity");
        next_slot_of(&s, "velocity");
        const int last = next_slot_of(&s, "vorticity_xsph");
        ENSURE(last < s.nslots && s.seq <= s.nslots);
        ENSURE_EQ_INT(pbf_gpu_logged_row(&s, s.base), row_of(PBF_SOLVER_DFSPH, "gravity"));
        ENSURE_EQ_INT(pbf_gpu_logged_row(&s, s.base + last), row_of(PBF_SOLVER_DFSPH, "vorticity_xsph"));
        launches += s.seq;
    }
    for (int sub = 0; sub < 3; ++sub)
        ENSURE_EQ_INT(pbf_gpu_logged_row(&s, launch_of_accel[sub]), row_of(PBF_SOLVER_DFSPH, "pressure_accel"));
    ENSURE_EQ_INT(pbf_gpu_logged_row(&s, launches), -1); /* none yet */
    ENSURE_EQ_INT(pbf_gpu_logged_row(&s, -1), -1);
    pbf_gpu_end_step(&s);
    ENSURE_EQ_INT(pbf_gpu_begin_substep(&s), 1); /* the next step */
    ENSURE_EQ_INT(s.base, 0);
    free(s.log);
}

/* Device strings that name no device fail with a message naming it. */
static void test_device_errors(void) {
    pbf_world_def def = scene_def();
    pbf_world *w = NULL;
    pbf_error err;
    snprintf(def.device, sizeof def.device, "opencl:9.9");
    ENSURE(pbf_world_create(&def, &w, &err) == PBF_ERR_INVALID_ARGUMENT && w == NULL);
    printf("  %s\n", err.message);
    ENSURE(strstr(err.message, "opencl:9.9") != NULL);
    snprintf(def.device, sizeof def.device, "opencl:zero");
    ENSURE(pbf_world_create(&def, &w, &err) == PBF_ERR_INVALID_ARGUMENT && w == NULL);
    ENSURE(strstr(err.message, "opencl:zero") != NULL);
    /* the explicit form of the first device works and the device list has it */
    pbf_device_info info[16];
    int n = pbf_list_devices(info, 16, NULL, 0);
    int found = -1;
    for (int i = 0; i < n && i < 16; ++i)
        if (strncmp(info[i].id, "opencl:", 7) == 0 && found < 0) found = i;
    ENSURE(found >= 0);
    snprintf(def.device, sizeof def.device, "%s", info[found].id);
    ENSURE(pbf_world_create(&def, &w, &err) == PBF_OK);
    ENSURE(strcmp(pbf_world_memory(w).device, "opencl") == 0);
    pbf_world_destroy(w);
}

/* More particles than the device memory holds: refused with the figures, the world unchanged. */
static void test_memory_limit(void) {
    pbf_device_info info[16];
    int n = pbf_list_devices(info, 16, NULL, 0);
    size_t memory = 0;
    for (int i = 0; i < n && i < 16; ++i)
        if (strncmp(info[i].id, "opencl:", 7) == 0) {
            memory = info[i].memory;
            break;
        }
    const double want = (double)memory / 64.0 * 1.25; /* 64 bytes per particle on the device */
    if (memory == 0 || want >= (double)INT_MAX) {
        printf("  skipped: the device's memory holds any particle count an int can name\n");
        return;
    }
    pbf_world_def def = scene_def();
    def.max_particles = (int)want;
    pbf_world *w = NULL;
    pbf_error err;
    snprintf(def.device, sizeof def.device, "opencl");
    ENSURE(pbf_world_create(&def, &w, &err) == PBF_ERR_LIMIT && w == NULL);
    printf("  %s\n", err.message);
    ENSURE(strstr(err.message, "MiB") != NULL);
}

int main(int argc, char **argv) {
    pbf_world_def def = pbf_default_world_def();
    snprintf(def.device, sizeof def.device, "opencl");
    pbf_world *w = NULL;
    pbf_error err;
    if (pbf_world_create(&def, &w, &err) != PBF_OK) {
        printf("SKIP: no OpenCL device to test: %s\n", err.message);
        return 77;
    }
    pbf_world_destroy(w);
    test_begin(argc, argv);
    RUN_SUBTEST(test_one_step_matches_cpu);
    RUN_SUBTEST(test_boxes_one_step_matches_cpu);
    RUN_SUBTEST(test_dam_break_matches_cpu);
    RUN_SUBTEST(test_moving_wall_matches_cpu);
    RUN_SUBTEST(test_no_vorticity_matches_cpu);
    RUN_SUBTEST(test_options_and_growth_match_cpu);
    RUN_SUBTEST(test_chebyshev_matches_cpu);
    RUN_SUBTEST(test_bed_friction_matches_cpu);
    RUN_SUBTEST(test_speed_clamps_match_cpu);
    RUN_SUBTEST(test_determinism);
    RUN_SUBTEST(test_snapshot_opencl_to_cpu);
    RUN_SUBTEST(test_snapshot_cpu_to_opencl);
    RUN_SUBTEST(test_nan_guard);
    RUN_SUBTEST(test_wcsph_dam_break_matches_cpu);
    RUN_SUBTEST(test_dfsph_dam_break_matches_cpu);
    RUN_SUBTEST(test_pcisph_dam_break_matches_cpu);
    RUN_SUBTEST(test_iisph_dam_break_matches_cpu);
    RUN_SUBTEST(test_warm_starts_match_cpu);
    RUN_SUBTEST(test_dfsph_min_density_matches_cpu);
    RUN_SUBTEST(test_fixed_counts_and_pbf_tolerance_match_cpu);
    RUN_SUBTEST(test_sph_column_matches_cpu);
    RUN_SUBTEST(test_sph_determinism);
    RUN_SUBTEST(test_sph_nan_guard);
    RUN_SUBTEST(test_guard_slots_over_substeps);
    RUN_SUBTEST(test_device_errors);
    RUN_SUBTEST(test_memory_limit);
    return test_end();
}
