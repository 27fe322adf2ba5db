/* Physics of the solver: conservation, the resting column, walls, limits, determinism. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pbf/params.h"
#include "pbf/pbf.h"
#include "test.h"

/* The device the physics runs on: PBF_TEST_DEVICE (cpu, opencl, cuda, ...; default cpu), so that
 * every physics test of this file also runs on each GPU backend (ctest test_solver_opencl, ...). */
static const char *test_device(void) {
    const char *d = getenv("PBF_TEST_DEVICE");
    return d && *d ? d : "cpu";
}
static int on_cpu(void) { return strcmp(test_device(), "cpu") == 0; }

/* Subtests that read or write the CPU backend's arrays in the middle of a step. */
#define CPU_ONLY()                                                                                 \
    do {                                                                                           \
        if (!on_cpu()) {                                                                           \
            printf("  skipped on %s: reads the CPU backend's internal arrays\n", test_device());    \
            return;                                                                                \
        }                                                                                          \
    } while (0)

static pbf_world *make(pbf_world_def *def) {
    pbf_world *w = NULL;
    pbf_error err;
    snprintf(def->device, sizeof def->device, "%s", test_device());
    if (pbf_world_create(def, &w, &err) != PBF_OK) {
        printf("pbf_world_create: %s\n", err.message);
        return NULL;
    }
    return w;
}

static int add_block(pbf_world *w, pbf_vec3 mn, pbf_vec3 mx, pbf_vec3 v) {
    pbf_fluid_block b = {mn, mx, v};
    pbf_error err;
    if (pbf_world_add_fluid_block(w, &b, &err) != PBF_OK) {
        printf("add block: %s\n", err.message);
        return 0;
    }
    return 1;
}

/* delta p (eq. 14) of an isolated, compressed blob: the pair terms are antisymmetric, so the
 * mass-weighted sum of the corrections (linear momentum change) vanishes. */
static void test_delta_p_conserves_momentum(void) {
    CPU_ONLY();
    pbf_world_def def = pbf_default_world_def();
    def.domain_max = (pbf_vec3){1, 1, 1};
    def.pbf.constraint = PBF_CONSTRAINT_BILATERAL; /* every particle gets a lambda */
    pbf_world *w = make(&def);
    ENSURE(w);
    ENSURE(add_block(w, (pbf_vec3){0.4f, 0.4f, 0.4f}, (pbf_vec3){0.6f, 0.6f, 0.6f},
                     (pbf_vec3){0, 0, 0}));
    /* compress by 10 % towards the centre and jitter, far from every wall */
    uint32_t s = 7u;
    for (int i = 0; i < w->count; ++i) {
        s = s * 1664525u + 1013904223u;
        float j = ((float)(s >> 8) / 16777216.0f - 0.5f) * 0.002f;
        w->px[i] = 0.5f + 0.9f * (w->px[i] - 0.5f) + j;
        w->py[i] = 0.5f + 0.9f * (w->py[i] - 0.5f) - j;
        w->pz[i] = 0.5f + 0.9f * (w->pz[i] - 0.5f) + 0.5f * j;
    }
    memcpy(w->qx, w->px, (size_t)w->count * 4);
    memcpy(w->qy, w->py, (size_t)w->count * 4);
    memcpy(w->qz, w->pz, (size_t)w->count * 4);
    const pbf_step_ctx ctx = {1.0f / 240.0f, 1e3f, 0, 0};
    pbf_cpu_stage(w, "grid", &ctx);
    pbf_cpu_stage(w, "lambda", &ctx);
    /* delta p moves x* (with the collisions, none here: far from the walls) */
    const size_t bytes = (size_t)w->count * 4;
    float *q0 = malloc(3 * bytes);
    ENSURE(q0);
    memcpy(q0, w->qx, bytes);
    memcpy(q0 + w->count, w->qy, bytes);
    memcpy(q0 + 2 * w->count, w->qz, bytes);
    pbf_cpu_stage(w, "delta_p", &ctx);
    pbf_cpu_stage(w, "collide", &ctx);
    double sum[3] = {0, 0, 0}, mag = 0.0;
    for (int i = 0; i < w->count; ++i) {
        const double d[3] = {(double)w->qx[i] - q0[i], (double)w->qy[i] - q0[w->count + i],
                             (double)w->qz[i] - q0[2 * w->count + i]};
        for (int a = 0; a < 3; ++a) sum[a] += d[a];
        mag += sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    }
    free(q0);
    ENSURE(mag > 1e-3); /* the blob really is pushed apart */
    for (int a = 0; a < 3; ++a) ENSURE(fabs(sum[a]) < 1e-5 * mag);
    pbf_world_destroy(w);
}

/* A water column settles: density error under 1 % on average and 5 % at most, nobody leaves,
 * and the fluid at the floor and side walls is at rest density (no under-density). */
static void test_resting_column(void) {
    pbf_world_def def = pbf_default_world_def();
    def.particle_radius = 0.0125f;
    def.domain_max = (pbf_vec3){0.3f, 0.8f, 0.3f};
    pbf_world *w = make(&def);
    ENSURE(w);
    ENSURE(add_block(w, (pbf_vec3){0, 0, 0}, (pbf_vec3){0.3f, 0.5f, 0.3f}, (pbf_vec3){0, 0, 0}));
    const float dt = 1.0f / 240.0f;
    for (int s = 0; s < 360; ++s) ENSURE(pbf_world_step(w, dt, NULL) == PBF_OK);
    pbf_stats st = pbf_world_stats(w);
    printf("  column: %d particles, density error avg %.3f %% max %.3f %%, max speed %.4f m/s\n",
           st.particles, st.density_error_avg, st.density_error_max, st.max_speed);
    ENSURE(st.density_error_avg < 1.0);
    ENSURE(st.density_error_max < 5.0);
    ENSURE_EQ_INT(st.escaped, 0);
    ENSURE_EQ_INT(st.nonfinite, 0);
    pbf_particles p = pbf_world_particles(w);
    double mean_speed = 0.0;
    for (int i = 0; i < p.count; ++i)
        mean_speed += sqrt((double)p.vx[i] * p.vx[i] + (double)p.vy[i] * p.vy[i] +
                           (double)p.vz[i] * p.vz[i]);
    mean_speed /= p.count;
    printf("  mean speed %.4f m/s (sqrt(g H) = %.3f m/s)\n", mean_speed, sqrt(9.81 * 0.5));
    ENSURE(mean_speed < 0.02 * sqrt(9.81 * 0.5)); /* residual jitter of the Jacobi solve */
    /* particles in the first layer at the floor, away from the free surface: at rest density */
    double floor_sum = 0, side_sum = 0;
    int floor_n = 0, side_n = 0;
    const float d = 2.0f * def.particle_radius;
    for (int i = 0; i < p.count; ++i) {
        if (p.y[i] < d) { floor_sum += p.density[i]; floor_n++; }
        if (p.x[i] < d && p.y[i] > 0.1f && p.y[i] < 0.3f) { side_sum += p.density[i]; side_n++; }
    }
    ENSURE(floor_n > 0 && side_n > 0);
    printf("  wall layers: floor %.1f kg/m^3 (%d), side %.1f kg/m^3 (%d)\n", floor_sum / floor_n,
           floor_n, side_sum / side_n, side_n);
    ENSURE_NEAR(floor_sum / floor_n, 1000.0, 20.0);
    ENSURE_NEAR(side_sum / side_n, 1000.0, 20.0);
    pbf_world_destroy(w);
}

/* The paper's bilateral constraint with its large relaxation epsilon also holds a column. */
static void test_bilateral_column(void) {
    pbf_world_def def = pbf_default_world_def();
    def.particle_radius = 0.0125f;
    def.domain_max = (pbf_vec3){0.3f, 0.8f, 0.3f};
    def.pbf.constraint = PBF_CONSTRAINT_BILATERAL;
    def.pbf.relaxation = 1.0f;
    pbf_world *w = make(&def);
    ENSURE(w);
    ENSURE(add_block(w, (pbf_vec3){0, 0, 0}, (pbf_vec3){0.3f, 0.5f, 0.3f}, (pbf_vec3){0, 0, 0}));
    for (int s = 0; s < 240; ++s) ENSURE(pbf_world_step(w, 1.0f / 240.0f, NULL) == PBF_OK);
    pbf_stats st = pbf_world_stats(w);
    printf("  bilateral column: density error avg %.3f %% max %.3f %%, max speed %.4f m/s\n",
           st.density_error_avg, st.density_error_max, st.max_speed);
    ENSURE(st.density_error_avg < 2.0);
    ENSURE(st.density_error_max < 6.0);
    ENSURE(st.max_speed < 0.5);
    ENSURE_EQ_INT(st.escaped, 0);
    ENSURE_EQ_INT(st.nonfinite, 0);
    pbf_world_destroy(w);
}

/* A column settling for 1 s at 4 iterations, from the paper's plain Jacobi solve (warm start 0)
 * with over-relaxation omega, Chebyshev's rho and the warm start beta: its statistics. */
static pbf_stats column_with(float omega, float chebyshev_rho, float warm) {
    pbf_stats st;
    memset(&st, 0, sizeof st);
    st.nonfinite = -1;
    pbf_world_def def = pbf_default_world_def();
    def.particle_radius = 0.0125f;
    def.domain_max = (pbf_vec3){0.3f, 0.8f, 0.3f};
    def.pbf.over_relaxation = omega;
    def.pbf.chebyshev_rho = chebyshev_rho;
    def.pbf.lambda_warm_start = warm;
    pbf_world *w = make(&def);
    if (!w) return st;
    if (!add_block(w, (pbf_vec3){0, 0, 0}, (pbf_vec3){0.3f, 0.5f, 0.3f}, (pbf_vec3){0, 0, 0}))
        return st;
    for (int s = 0; s < 240; ++s) pbf_world_step(w, 1.0f / 240.0f, NULL);
    st = pbf_world_stats(w);
    pbf_world_destroy(w);
    printf("  over_relaxation %.2f, chebyshev_rho %.2f, lambda_warm_start %.2f: density error avg "
           "%.3f %% max %.3f %%, max speed %.4f m/s, escaped %d, non-finite %d\n", omega,
           chebyshev_rho, warm, st.density_error_avg, st.density_error_max, st.max_speed,
           st.escaped, st.nonfinite);
    return st;
}
/* Over-relaxing the Jacobi corrections (SOR) converges the column further in 4 iterations. */
static double column_error_with(float omega, float chebyshev_rho) {
    pbf_stats st = column_with(omega, chebyshev_rho, 0.0f);
    return (st.escaped || st.nonfinite) ? NAN : st.density_error_avg;
}
static double column_error(float omega) {
    return column_error_with(omega, 0.0f);
}

/* The warm start of the multipliers (pbf_warm_lambda): the formula, beta = 0 the paper's solve,
 * and a column at rest whose compression at 4 iterations about halves at beta = 0.5 (the
 * multipliers reach 1 / (1 - beta) times the plain ones), its largest error falling too, its
 * particles no faster. */
static void test_warm_start(void) {
    ENSURE(pbf_warm_lambda(-2.0f, -4.0f, 0.5f) == -4.0f);
    ENSURE(pbf_warm_lambda(-2.0f, -4.0f, 0.0f) == -2.0f);
    pbf_stats plain = column_with(1.0f, 0.0f, 0.0f), warm = column_with(1.0f, 0.0f, 0.5f);
    ENSURE(plain.nonfinite == 0 && warm.nonfinite == 0 && plain.escaped == 0 && warm.escaped == 0);
    ENSURE(warm.density_error_avg < 0.65 * plain.density_error_avg);
    ENSURE(warm.density_error_avg > 0.35 * plain.density_error_avg);
    ENSURE(warm.density_error_max < plain.density_error_max);
    /* no faster than the plain solve's (single surface particles: 0.18 m/s, sqrt(g H) = 2.2 m/s) */
    ENSURE(warm.max_speed <= 1.1 * plain.max_speed);
}

/* That column at rest (9 x 72 x 4 particles of r = 2.03 mm in a container 216 spacings high,
 * vorticity off) in a world of `def`'s other parameters; NULL on failure. */
static pbf_world *column_n36(pbf_world_def def) {
    const float r = 0.0020277777f, s = 2.0f * r;
    def.particle_radius = r;
    def.domain_max = (pbf_vec3){9 * s, 216 * s, 4 * s};
    def.vorticity = 0.0f;
    pbf_world *w = make(&def);
    if (w && !add_block(w, (pbf_vec3){0, 0, 0}, (pbf_vec3){9 * s, 72 * s, 4 * s},
                        (pbf_vec3){0, 0, 0})) {
        pbf_world_destroy(w);
        w = NULL;
    }
    return w;
}

/* The largest odd-even part of the velocities, max |v_i(step k) - v_i(step k + 1)| / 2 over the
 * particles (matched by id), of a column of the validation's n = 36 resolution (r = 2.03 mm),
 * 9 particles wide, 72 deep, 4 across, after 1.5 s at dt = 1/960 s without vorticity
 * confinement; with `carry` the warm start's lambda_carry. In m/s. */
static double column_odd_even(float carry) {
    pbf_world_def def = pbf_default_world_def();
    def.pbf.lambda_carry = carry;
    pbf_world *w = column_n36(def);
    if (!w) return NAN;
    const float dt = 1.0f / 960.0f;
    int ok = 1;
    for (int k = 0; ok && k < 1440; ++k) ok = pbf_world_step(w, dt, NULL) == PBF_OK;
    pbf_particles p = pbf_world_particles(w);
    const int n = p.count;
    float *v = ok ? malloc(3 * sizeof(float) * (size_t)n) : NULL;
    if (!v) {
        pbf_world_destroy(w);
        return NAN;
    }
    for (int i = 0; i < n; ++i) {
        v[3 * p.id[i] + 0] = p.vx[i];
        v[3 * p.id[i] + 1] = p.vy[i];
        v[3 * p.id[i] + 2] = p.vz[i];
    }
    double odd = NAN;
    if (pbf_world_step(w, dt, NULL) == PBF_OK) {
        p = pbf_world_particles(w);
        odd = 0.0;
        for (int i = 0; i < p.count; ++i) {
            const float *a = v + 3 * p.id[i];
            const double dx = a[0] - p.vx[i], dy = a[1] - p.vy[i], dz = a[2] - p.vz[i];
            const double o = 0.5 * sqrt(dx * dx + dy * dy + dz * dz);
            if (o > odd) odd = o;
        }
    }
    free(v);
    pbf_world_destroy(w);
    return odd;
}

/* lambda_carry (pbf_warm_lambda_factor): the first iteration adds the carried lambda times the
 * carry, the others beta times the previous iteration's; a settled column keeps no odd-even
 * oscillation from step to step (carried at beta, 0.5, its fastest odd-even part is 0.77 % of
 * sqrt(g H) = 1.69 m/s: 0.013 m/s; at the default 0.6, 0.04 %). */
static void test_warm_carry(void) {
    ENSURE(pbf_warm_lambda_factor(0.5f, 0.6f, 0) == 0.6f);
    ENSURE(pbf_warm_lambda_factor(0.5f, 0.6f, 1) == 0.5f);
    ENSURE(pbf_warm_lambda_factor(0.5f, 0.6f, 3) == 0.5f);
    const pbf_world_def d = pbf_default_world_def();
    ENSURE(d.pbf.lambda_carry == 0.6f && d.pbf.lambda_warm_start == 0.5f);
    const double sqrt_gh = sqrt(9.81 * 72 * 2 * 0.0020277777), odd = column_odd_even(0.6f);
    printf("  column at rest, n = 36: largest odd-even velocity %.5f m/s = %.3f %% of sqrt(g H)\n",
           odd, 100.0 * odd / sqrt_gh);
    ENSURE(isfinite(odd));
    ENSURE(odd < 0.0025 * sqrt_gh);
}

/* The column of column_n36 at dt = 1/960 s for 0.2 s with `iterations` fixed iterations
 * (tolerance 0) or a tolerance and pbf_min_iterations = `iterations`, the warm start at `warm`:
 * the largest speed over the steps (m/s; NAN if a step failed) and, into pos, the final
 * positions by id (3 floats per particle). */
static double column_iterations(int iterations, float tolerance, float warm, float *pos) {
    pbf_world_def def = pbf_default_world_def();
    def.pbf.solver_iterations = iterations;
    def.pbf.tolerance = tolerance;
    def.pbf.min_iterations = iterations;
    def.pbf.lambda_warm_start = warm;
    pbf_world *w = column_n36(def);
    if (!w) return NAN;
    int ok = 1;
    double vmax = 0.0;
    for (int k = 0; ok && k < 192; ++k) {
        ok = pbf_world_step(w, 1.0f / 960.0f, NULL) == PBF_OK;
        pbf_stats st = pbf_world_stats(w);
        if (ok && st.max_speed > vmax) vmax = st.max_speed;
    }
    pbf_particles p = pbf_world_particles(w);
    for (int i = 0; ok && i < p.count; ++i) {
        pos[3 * p.id[i] + 0] = p.x[i];
        pos[3 * p.id[i] + 1] = p.y[i];
        pos[3 * p.id[i] + 2] = p.z[i];
    }
    pbf_world_destroy(w);
    return ok ? vmax : NAN;
}

/* The warm start acts only when every step runs at least 3 iterations (PBF_WARM_MIN_ITERATIONS):
 * at 2 its momentum made this resting column boil within 0.04 s (its fastest particles at the
 * speed limit, 15.6 m/s); the paper's solve keeps it below 1 m/s (its start-up: 0.93 m/s, under
 * sqrt(g H) = 1.69 m/s). So at 2 iterations, and with a tolerance from 1 iteration, the default
 * run is the plain solve's to the bit; at 3 iterations, and with a tolerance from 3, the warm
 * start acts (the runs differ). */
static void test_warm_needs_iterations(void) {
    const int n = 9 * 72 * 4;
    const double sqrt_gh = sqrt(9.81 * 72 * 2 * 0.0020277777);
    float *a = calloc(3 * (size_t)n, sizeof(float)), *b = calloc(3 * (size_t)n, sizeof(float));
    ENSURE(a && b);
    if (!a || !b) {
        free(a);
        free(b);
        return;
    }
    const float beta = pbf_default_world_def().pbf.lambda_warm_start;
    ENSURE(beta > 0.0f);
    double v2 = column_iterations(2, 0.0f, beta, a), v2p = column_iterations(2, 0.0f, 0.0f, b);
    printf("  column at rest, n = 36, 2 iterations: largest speed %.3f m/s = %.1f %% of "
           "sqrt(g H) (the paper's solve: %.3f m/s)\n",
           v2, 100.0 * v2 / sqrt_gh, v2p);
    ENSURE(isfinite(v2) && v2 < sqrt_gh);
    ENSURE(memcmp(a, b, 3 * sizeof(float) * (size_t)n) == 0);
    double t1 = column_iterations(1, 1.0f, beta, a), t1p = column_iterations(1, 1.0f, 0.0f, b);
    ENSURE(isfinite(t1) && t1 == t1p);
    ENSURE(memcmp(a, b, 3 * sizeof(float) * (size_t)n) == 0);
    double v3 = column_iterations(3, 0.0f, beta, a), v3p = column_iterations(3, 0.0f, 0.0f, b);
    printf("  3 iterations: largest speed %.3f m/s with the warm start, %.3f m/s without\n", v3,
           v3p);
    ENSURE(isfinite(v3) && v3 < sqrt_gh);
    ENSURE(memcmp(a, b, 3 * sizeof(float) * (size_t)n) != 0);
    double t3 = column_iterations(3, 1.0f, beta, a), t3p = column_iterations(3, 1.0f, 0.0f, b);
    ENSURE(isfinite(t3) && isfinite(t3p));
    ENSURE(memcmp(a, b, 3 * sizeof(float) * (size_t)n) != 0);
    free(a);
    free(b);
}

static void test_over_relaxation(void) {
    double plain = column_error(1.0f), sor = column_error(1.3f);
    ENSURE(isfinite(plain) && isfinite(sor));
    ENSURE(sor < 0.8 * plain);
}

/* Chebyshev acceleration (Wang 2015): the weights of its recurrence, plain Jacobi at rho = 0, and
 * a column that converges further in the same 4 iterations. */
static void test_chebyshev(void) {
    for (int k = 0; k < 8; ++k) ENSURE(pbf_chebyshev_omega(0.0f, k) == 1.0f);
    const float r2 = 0.7f * 0.7f;
    float prev = 2.0f / (2.0f - r2);
    ENSURE(pbf_chebyshev_omega(0.7f, 0) == 1.0f);
    ENSURE(pbf_chebyshev_omega(0.7f, 1) == prev);
    for (int k = 2; k < 8; ++k) { /* omega_k = 4 / (4 - rho^2 omega_(k-1)), falling to a limit */
        float o = pbf_chebyshev_omega(0.7f, k);
        ENSURE(o == 4.0f / (4.0f - r2 * prev));
        ENSURE(o < prev && o > 1.0f);
        prev = o;
    }
    double plain = column_error_with(1.0f, 0.0f), cheb = column_error_with(1.0f, 0.7f);
    ENSURE(isfinite(plain) && isfinite(cheb));
    ENSURE(cheb < 0.85 * plain);
}

/* A fast dam break stays in its container, finite and within the CFL speed limit. */
static void test_dam_break_contained(void) {
    pbf_world_def def = pbf_default_world_def();
    def.particle_radius = 0.015f;
    def.domain_max = (pbf_vec3){0.8f, 0.5f, 0.2f};
    def.vorticity = 0.05f;
    pbf_world *w = make(&def);
    ENSURE(w);
    ENSURE(add_block(w, (pbf_vec3){0, 0, 0}, (pbf_vec3){0.25f, 0.45f, 0.2f},
                     (pbf_vec3){3.0f, -2.0f, 0.5f}));
    const float dt = 1.0f / 120.0f; /* 2 substeps at 60 fps: harsher than the scenes */
    const double limit = def.cfl * pbf_world_derived(w).h / dt;
    for (int s = 0; s < 120; ++s) {
        ENSURE(pbf_world_step(w, dt, NULL) == PBF_OK);
        pbf_stats st = pbf_world_stats(w);
        ENSURE_EQ_INT(st.escaped, 0);
        ENSURE_EQ_INT(st.nonfinite, 0);
        ENSURE(st.max_speed <= limit * 1.0001);
        ENSURE(st.density_error_max < 50.0);
    }
    pbf_world_destroy(w);
}

/* The dam break of `pbf validate` refined to 36 particles across the column (L = 0.146 m, a slab
 * 4 particles thick, r = 2.03 mm) at the shipped scenes' steps, 60 frames/s of 4 steps and 4
 * iterations: taken as given (dt sqrt(|g| / h) = 0.145), the solve fed energy into the falling
 * column from its first frames, +88 % of E(0) by 0.25 s, its fastest particles at the speed
 * limit. PBF's force condition (pbf_gravity_cfl) splits those steps in two: every value stays
 * finite, within `pbf run`'s density guard, and the energy (kinetic + potential) never rises
 * above E(0) by more than 1 % of it, the stability envelope's test. */
static void test_refined_dam_break_stable(void) {
    pbf_world_def def = pbf_default_world_def();
    const float L = 0.146f, s = L / 36.0f;
    def.particle_radius = 0.5f * s;
    def.domain_max = (pbf_vec3){5.0f * L, 3.0f * L, 4.0f * s};
    ENSURE(def.pbf.solver_iterations == 4);
    pbf_world *w = make(&def);
    ENSURE(w);
    ENSURE(
        add_block(w, (pbf_vec3){0, 0, 0}, (pbf_vec3){L, 2.0f * L, 4.0f * s}, (pbf_vec3){0, 0, 0}));
    const float dt = 1.0f / 240.0f;
    const double g = -def.gravity.y;
    double e0 = 0.0, gain = 0.0, worst_avg = 0.0, worst_max = 0.0;
    int most_substeps = 0;
    for (int step = 0; step <= 120; ++step) {
        if (step % 4 == 0) { /* a frame: the energy per unit mass, summed */
            pbf_particles p = pbf_world_particles(w);
            double e = 0.0;
            for (int i = 0; i < p.count; ++i)
                e += 0.5 * ((double)p.vx[i] * p.vx[i] + (double)p.vy[i] * p.vy[i] +
                            (double)p.vz[i] * p.vz[i]) +
                     g * p.y[i];
            if (step == 0) e0 = e;
            if (100.0 * (e - e0) / e0 > gain) gain = 100.0 * (e - e0) / e0;
        }
        if (step == 120) break;
        ENSURE(pbf_world_step(w, dt, NULL) == PBF_OK);
        pbf_stats st = pbf_world_stats(w);
        ENSURE_EQ_INT(st.nonfinite, 0);
        ENSURE_EQ_INT(st.escaped, 0);
        ENSURE(isfinite(st.max_speed));
        if (st.density_error_avg > worst_avg) worst_avg = st.density_error_avg;
        if (st.density_error_max > worst_max) worst_max = st.density_error_max;
        if (st.substeps > most_substeps) most_substeps = st.substeps;
    }
    printf("  n = 36, 0.5 s at 1/240 s: energy gain %.2f %% of E(0), density error peaks %.2f / "
           "%.1f %%, up to %d substeps\n",
           gain, worst_avg, worst_max, most_substeps);
    ENSURE(worst_avg < 10.0);   /* the stability envelope's bound on the average */
    ENSURE(worst_max <= 100.0); /* pbf run's guard (guard_density_error) on the largest */
    ENSURE(gain <= 1.0);
    ENSURE(most_substeps > 1); /* the rule split the fast steps */
    pbf_world_destroy(w);
}

/* PBF's substeps: the force condition (pbf_gravity_cfl) takes the shipped scenes' steps (r = 7.5
 * and 10 mm, 1/240 s) as given and splits those of half their radius; the CFL condition (pbf_cfl,
 * off by default) splits a step in which a block crosses more than pbf_cfl diameters; with both
 * off every step is taken as given. */
static int pbf_substeps_of(float radius, float speed, float cfl, float gravity_cfl) {
    pbf_world_def def = pbf_default_world_def();
    def.particle_radius = radius;
    def.domain_max = (pbf_vec3){4.0f, 1.0f, 0.2f};
    def.pbf.cfl = cfl;
    def.pbf.gravity_cfl = gravity_cfl;
    pbf_world *w = make(&def);
    const float s = 2.0f * radius;
    int most = -1;
    if (w && add_block(w, (pbf_vec3){0.1f, 0, 0}, (pbf_vec3){0.1f + 3 * s, 3 * s, 3 * s},
                       (pbf_vec3){speed, 0, 0})) {
        most = 0;
        for (int k = 0; k < 3; ++k) {
            if (pbf_world_step(w, 1.0f / 240.0f, NULL) != PBF_OK) return -1;
            const int n = pbf_world_stats(w).substeps;
            if (n > most) most = n;
        }
    }
    pbf_world_destroy(w);
    return most;
}

static void test_pbf_substep_rule(void) {
    const pbf_world_def d = pbf_default_world_def();
    ENSURE_EQ_INT(pbf_substeps_of(0.0075f, 0.0f, d.pbf.cfl, d.pbf.gravity_cfl), 1);
    ENSURE_EQ_INT(pbf_substeps_of(0.01f, 0.0f, d.pbf.cfl, d.pbf.gravity_cfl), 1);
    ENSURE_EQ_INT(pbf_substeps_of(0.00375f, 0.0f, d.pbf.cfl, d.pbf.gravity_cfl), 2);
    ENSURE_EQ_INT(pbf_substeps_of(0.005f, 0.0f, d.pbf.cfl, d.pbf.gravity_cfl), 2);
    ENSURE_EQ_INT(pbf_substeps_of(0.00375f, 0.0f, 0.0f, 0.0f), 1);
    ENSURE(d.pbf.cfl == 0.0f);
    /* 1.5 diameters per step: pbf_cfl = 1 splits it in two */
    ENSURE_EQ_INT(pbf_substeps_of(0.0075f, 1.5f * 0.015f * 240.0f, 1.0f, d.pbf.gravity_cfl), 2);
    ENSURE_EQ_INT(pbf_substeps_of(0.0075f, 1.5f * 0.015f * 240.0f, 0.0f, 0.0f), 1);
}

/* A wall moving into the fluid pushes it: no particle is left inside the box. */
static void test_moving_wall(void) {
    pbf_world_def def = pbf_default_world_def();
    def.particle_radius = 0.015f;
    def.domain_max = (pbf_vec3){0.8f, 0.4f, 0.2f};
    pbf_world *w = make(&def);
    ENSURE(w);
    ENSURE(add_block(w, (pbf_vec3){0.2f, 0, 0}, (pbf_vec3){0.6f, 0.2f, 0.2f}, (pbf_vec3){0, 0, 0}));
    pbf_box wall = {.min = {0.0f, 0.0f, 0.0f}, .max = {0.1f, 0.4f, 0.2f}};
    wall.motion = (pbf_motion){.type = PBF_MOTION_LINEAR, .direction = {1, 0, 0}, .speed = 0.5f,
                               .start = 0.0f, .stop = 0.5f};
    pbf_error err;
    ENSURE(pbf_world_add_box(w, &wall, &err) == PBF_OK);
    for (int s = 0; s < 150; ++s) ENSURE(pbf_world_step(w, 1.0f / 240.0f, NULL) == PBF_OK);
    pbf_vec3 mn, mx;
    ENSURE(pbf_world_box_bounds(w, 0, &mn, &mx) == PBF_OK);
    ENSURE_NEAR(mn.x, 0.25f, 1e-4); /* moved 0.5 m/s for 0.5 s, then stopped */
    pbf_particles p = pbf_world_particles(w);
    int inside = 0;
    for (int i = 0; i < p.count; ++i)
        if (p.x[i] < mx.x) inside++;
    ENSURE_EQ_INT(inside, 0);
    pbf_stats st = pbf_world_stats(w);
    ENSURE_EQ_INT(st.escaped, 0);
    ENSURE_EQ_INT(st.nonfinite, 0);
    pbf_world_destroy(w);
}

/* Friction at the floor slows a sliding sheet of fluid; without it the sheet keeps going. */
static double slide(float mu_s, float mu_k) {
    pbf_world_def def = pbf_default_world_def();
    def.particle_radius = 0.015f;
    def.domain_max = (pbf_vec3){2.0f, 0.3f, 0.15f};
    def.friction_static = mu_s;
    def.friction_dynamic = mu_k;
    def.xsph_viscosity = 0.0f;
    def.vorticity = 0.0f;
    pbf_world *w = make(&def);
    if (!w) return NAN;
    if (!add_block(w, (pbf_vec3){0, 0, 0}, (pbf_vec3){0.3f, 0.06f, 0.15f}, (pbf_vec3){1.0f, 0, 0}))
        return NAN;
    for (int s = 0; s < 60; ++s) pbf_world_step(w, 1.0f / 240.0f, NULL);
    pbf_particles p = pbf_world_particles(w);
    double vx = 0;
    for (int i = 0; i < p.count; ++i) vx += p.vx[i];
    vx /= p.count;
    pbf_world_destroy(w);
    return vx;
}

static void test_friction(void) {
    double free_slip = slide(0.0f, 0.0f), rough = slide(0.5f, 0.3f);
    printf("  mean vx after 0.25 s: free slip %.4f m/s, with friction %.4f m/s\n", free_slip, rough);
    ENSURE(free_slip > 0.8);
    ENSURE(rough < 0.9 * free_slip);
}

/* Bed shear stress (bed_friction): fluid sliding along a wall for `steps` steps of 1/240 s.
 * Sliding (vertical = 0): a block [0.1, 0.4] x [0, depth] x [0.07, 0.23] m on the floor at
 * 1 m/s, without gravity (the block keeps its lattice: no spreading, no artificial pressure),
 * with the stress on every wall (only the floor touches it); returns the mean vx and the momentum
 * per floor area. Falling (vertical = 1): a film [0, 2r] x [0.3, 0.5] x [0, 0.15] m at the wall
 * x = 0 under gravity; returns the mean vy. */
static double bed_slide(float radius, float depth, float cf, pbf_bed_walls walls, int vertical,
                        int steps, double *momentum_per_area) {
    pbf_world_def def = pbf_default_world_def();
    def.particle_radius = radius;
    def.domain_max = (pbf_vec3){2.0f, 0.6f, vertical ? 0.15f : 0.3f};
    if (!vertical) def.gravity = (pbf_vec3){0, 0, 0};
    def.bed_friction = cf;
    def.bed_friction_walls = walls;
    def.xsph_viscosity = 0.0f;
    def.vorticity = 0.0f;
    pbf_world *w = make(&def);
    if (!w) return NAN;
    int ok = vertical ? add_block(w, (pbf_vec3){0, 0.3f, 0}, (pbf_vec3){2.0f * radius, 0.5f, 0.15f},
                                  (pbf_vec3){0, 0, 0})
                      : add_block(w, (pbf_vec3){0.1f, 0, 0.07f}, (pbf_vec3){0.4f, depth, 0.23f},
                                  (pbf_vec3){1.0f, 0, 0});
    if (!ok) return NAN;
    for (int s = 0; s < steps; ++s) pbf_world_step(w, 1.0f / 240.0f, NULL);
    pbf_particles p = pbf_world_particles(w);
    double v = 0;
    for (int i = 0; i < p.count; ++i) v += vertical ? p.vy[i] : p.vx[i];
    if (momentum_per_area) /* mass of a particle: rho_0 (2r)^3; the block's floor 0.3 x 0.16 m */
        *momentum_per_area = v * def.rest_density * pow(2.0 * radius, 3) / (0.3 * 0.16);
    v /= p.count;
    pbf_world_destroy(w);
    return v;
}

/* One layer sliding on the floor decelerates as the quadratic law integrated over each step says,
 * du/dt = -(C_f / 2r) u^2: u(t) = u0 / (1 + C_f u0 t / 2r); without it the layer keeps its
 * speed. */
static void test_bed_friction_law(void) {
    const float r = 0.015f, cf = 0.01f;
    const double t = 60.0 / 240.0, k = cf / (2.0 * r), exact = 1.0 / (1.0 + k * t);
    double none = bed_slide(r, 2.0f * r, 0.0f, PBF_BED_WALLS_ALL, 0, 60, NULL);
    double drag = bed_slide(r, 2.0f * r, cf, PBF_BED_WALLS_ALL, 0, 60, NULL);
    printf("  one layer after %.2f s: free slip %.5f m/s, C_f = %.2f: %.5f m/s (law: %.5f)\n", t,
           none, cf, drag, exact);
    ENSURE(fabs(none - 1.0) < 1e-4);
    ENSURE(fabs(drag - exact) < 1e-3 * (1.0 - exact));
}

/* The force per wall area does not depend on the resolution: a block 8 cm deep (4 and 8 layers)
 * loses the momentum per floor area of a layer slowed by the law,
 * rho 2r u0 (1 - 1 / (1 + k u0 t)) = rho C_f u0^2 t / (1 + k u0 t), k = C_f / 2r: the stress
 * rho C_f u0^2 to first order in t at both radii (2.4 and 4.8 % below it after 0.1 s here). */
static void test_bed_friction_resolution(void) {
    const float cf = 0.005f;
    const int steps = 24; /* 0.1 s */
    const double t = steps / 240.0, law = 1000.0 * cf * 1.0 * t;
    double m0c, m1c, m0f, m1f;
    bed_slide(0.01f, 0.08f, 0.0f, PBF_BED_WALLS_ALL, 0, steps, &m0c);
    bed_slide(0.01f, 0.08f, cf, PBF_BED_WALLS_ALL, 0, steps, &m1c);
    bed_slide(0.005f, 0.08f, 0.0f, PBF_BED_WALLS_ALL, 0, steps, &m0f);
    bed_slide(0.005f, 0.08f, cf, PBF_BED_WALLS_ALL, 0, steps, &m1f);
    const double lc = m0c - m1c, lf = m0f - m1f;
    const double ec = law / (1.0 + cf / 0.02 * t), ef = law / (1.0 + cf / 0.01 * t);
    printf("  momentum lost per floor area in %.2f s: r = 1 cm %.4f (law %.4f), r = 0.5 cm %.4f "
           "(law %.4f) N s/m^2; rho C_f u0^2 t = %.4f\n",
           t, lc, ec, lf, ef, law);
    ENSURE(fabs(lc - ec) < 1e-3 * law && fabs(lf - ef) < 1e-3 * law);
    ENSURE(fabs(lc - law) < 0.05 * law && fabs(lf - law) < 0.05 * law);
}

/* Zero at rest, so it holds nothing on a wall: a film at a wall with the stress on every wall
 * falls at least as fast as a layer that stays on the wall would, du/dt = g - k u^2
 * (u_T tanh(g t / u_T), u_T = sqrt(g / k)), where Coulomb friction would hold it; with the bed
 * alone the wall is free-slip (free fall). */
static void test_bed_friction_wall(void) {
    const float r = 0.015f, cf = 0.01f;
    const int steps = 48;
    const double t = steps / 240.0, g = 9.81, k = cf / (2.0 * r), ut = sqrt(g / k);
    double all = bed_slide(r, 0.0f, cf, PBF_BED_WALLS_ALL, 1, steps, NULL);
    double bed = bed_slide(r, 0.0f, cf, PBF_BED_WALLS_BED, 1, steps, NULL);
    const double law = -ut * tanh(g * t / ut);
    printf("  film falling along a wall for %.2f s: bed only %.4f m/s (free fall %.4f), every wall "
           "%.4f m/s (a layer on the wall: %.4f)\n",
           t, bed, -g * t, all, law);
    ENSURE(fabs(bed + g * t) < 1e-3 * g * t);
    ENSURE(all <= law + 1e-3 * g * t && all > bed);
}

/* FNV-1a over the particle state in id order. */
static uint64_t state_hash(const pbf_world *w) {
    pbf_particles p = pbf_world_particles(w);
    uint64_t h = 1469598103934665603ull;
    const float *arrays[] = {p.x, p.y, p.z, p.vx, p.vy, p.vz, p.density};
    for (size_t a = 0; a < 7; ++a) {
        const unsigned char *b = (const unsigned char *)arrays[a];
        for (size_t k = 0; k < (size_t)p.count * 4; ++k) h = (h ^ b[k]) * 1099511628211ull;
    }
    const unsigned char *b = (const unsigned char *)p.id;
    for (size_t k = 0; k < (size_t)p.count * 4; ++k) h = (h ^ b[k]) * 1099511628211ull;
    return h;
}

/* timing: -1 the world's default, else pbf_world_set_stage_timing's; tm: the timings, or NULL */
static uint64_t run_world(int threads, int timing, pbf_timings *tm) {
    pbf_world_def def = pbf_default_world_def();
    def.particle_radius = 0.015f;
    def.domain_max = (pbf_vec3){0.6f, 0.5f, 0.2f};
    def.threads = threads;
    def.vorticity = 0.05f;
    def.friction_static = 0.1f;
    def.friction_dynamic = 0.05f;
    def.bed_friction = 0.01f; /* on every wall and the moving box */
    def.bed_friction_walls = PBF_BED_WALLS_ALL;
    pbf_world *w = make(&def);
    if (!w) return 0;
    add_block(w, (pbf_vec3){0, 0, 0}, (pbf_vec3){0.2f, 0.4f, 0.2f}, (pbf_vec3){0, 0, 0});
    pbf_box b = {.min = {0.4f, 0.0f, 0.05f}, .max = {0.45f, 0.1f, 0.15f}};
    b.motion = (pbf_motion){.type = PBF_MOTION_OSCILLATE, .direction = {1, 0, 0},
                            .amplitude = 0.05f, .period = 0.5f, .stop = -1};
    pbf_world_add_box(w, &b, NULL);
    if (timing >= 0) pbf_world_set_stage_timing(w, timing);
    for (int s = 0; s < 60; ++s) pbf_world_step(w, 1.0f / 240.0f, NULL);
    uint64_t h = state_hash(w);
    if (tm) *tm = pbf_world_timings(w);
    pbf_world_destroy(w);
    return h;
}

static uint64_t run_threads(int threads) {
    return run_world(threads, -1, NULL);
}

/* Per-stage timing changes no result; off, only the total is measured; on, the stages add up to
 * it. */
static void test_stage_timing(void) {
    pbf_timings off, on;
    uint64_t h_off = run_world(2, 0, &off), h_on = run_world(2, 1, &on);
    ENSURE(h_off != 0 && h_off == h_on && h_on == run_threads(2));
    ENSURE(off.steps == 60 && on.steps == 60);
    ENSURE(off.total > 0.0 && on.total > 0.0);
    ENSURE(off.predict == 0.0 && off.grid == 0.0 && off.lambda == 0.0 && off.delta_p == 0.0 &&
           off.collide == 0.0 && off.velocity == 0.0 && off.stats == 0.0);
    const double parts =
        on.predict + on.grid + on.lambda + on.delta_p + on.collide + on.velocity + on.stats;
    ENSURE(on.lambda > 0.0 && on.delta_p > 0.0 && on.grid > 0.0);
    ENSURE(parts <= on.total * (1.0 + 1e-9) && parts >= 0.99 * on.total);
}

/* The speed limit |v| <= cfl h / dt never cuts a velocity silently: stats.speed_clamps counts
 * every cut, the same on every device and for any thread count, and is 0 where the flow stays
 * below the limit. */
static int64_t clamped_run(float cfl, int threads, float v0, int64_t *first_step,
                           double *vmax_seen, int *particles) {
    pbf_world_def def = pbf_default_world_def();
    def.particle_radius = 0.015f;
    def.domain_max = (pbf_vec3){0.8f, 0.5f, 0.2f};
    def.cfl = cfl;
    def.threads = threads;
    pbf_world *w = make(&def);
    if (!w || !add_block(w, (pbf_vec3){0, 0, 0}, (pbf_vec3){0.24f, 0.3f, 0.2f},
                         (pbf_vec3){v0, 0.0f, 0.0f})) {
        pbf_world_destroy(w);
        return -1;
    }
    const float dt = 1.0f / 240.0f;
    int64_t total = 0;
    *vmax_seen = 0.0;
    *particles = pbf_world_stats(w).particles;
    for (int s = 0; s < 60; ++s) {
        if (pbf_world_step(w, dt, NULL) != PBF_OK) total = -1;
        pbf_stats st = pbf_world_stats(w);
        if (total < 0 || st.speed_clamps < 0) break;
        if (s == 0) *first_step = st.speed_clamps;
        total += st.speed_clamps;
        if (st.max_speed > *vmax_seen) *vmax_seen = st.max_speed;
    }
    pbf_world_destroy(w);
    return total;
}

static void test_speed_limit_counted(void) {
    /* cfl 0.2: |v| <= 0.2 * 0.06 m * 240 /s = 2.88 m/s; the block starts at 4 m/s, so the first
     * step's prediction cuts every particle's velocity, and the later velocity updates of the
     * step may cut them again */
    const double limit = 0.2 * 0.06 * 240.0;
    int64_t first = 0;
    double vmax = 0.0;
    int n = 0, n2 = 0;
    int64_t total = clamped_run(0.2f, 1, 4.0f, &first, &vmax, &n);
    printf("  cfl 0.2, 4 m/s: %lld cuts in the first step, %lld in 60 steps, max speed %.4f m/s "
           "(limit %.4f)\n", (long long)first, (long long)total, vmax, limit);
    ENSURE(n > 400);
    ENSURE(first >= n && first <= 3 * n);
    ENSURE(total > first);
    ENSURE(vmax <= limit * 1.0001);
    /* the same count with other thread counts */
    for (int t = 2; t <= 3; ++t) {
        int64_t f2 = 0;
        double v2 = 0.0;
        ENSURE_EQ_INT((int)clamped_run(0.2f, t, 4.0f, &f2, &v2, &n2), (int)total);
        ENSURE_EQ_INT((int)f2, (int)first);
    }
    /* the default limit (cfl * h / dt with h = 0.06 m, dt = 1/240 s) is far above this flow: no
     * cut at all */
    total = clamped_run(pbf_default_world_def().cfl, 1, 1.0f, &first, &vmax, &n2);
    printf("  default cfl, 1 m/s: %lld cuts, max speed %.4f m/s\n", (long long)total, vmax);
    ENSURE_EQ_INT((int)total, 0);
    ENSURE(vmax > 1.0);
}

/* s_corr (eq. 13) keeps particles from clumping: in a splashing dam break (the Koshizuka & Oka
 * column at 18 particles across, 0.5 s) no particle comes closer than half the rest spacing to
 * another with the default s_corr, while without it (scorr_k = scorr_support = 0) hundreds do.
 * And its artificial pressure never lifts a column: the column's top falls from the start. */
static int close_pairs(float scorr_k, float support, double *nearest, double *rise) {
    pbf_world_def def = pbf_default_world_def();
    const float L = 0.146f, s = L / 18.0f;
    def.particle_radius = 0.5f * s;
    def.domain_max = (pbf_vec3){5.0f * L, 3.0f * L, 4.0f * s};
    def.pbf.scorr_k = scorr_k;
    def.pbf.scorr_support = support;
    pbf_world *w = make(&def);
    if (!w || !add_block(w, (pbf_vec3){0, 0, 0}, (pbf_vec3){L, 2.0f * L, 4.0f * s},
                         (pbf_vec3){0, 0, 0})) {
        pbf_world_destroy(w);
        return -1;
    }
    const float dt = 1.0f / 480.0f;
    *rise = 0.0;
    for (int step = 0; step < 240; ++step) {
        if (pbf_world_step(w, dt, NULL) != PBF_OK) break;
        pbf_particles p = pbf_world_particles(w);
        double top = 0.0;
        for (int i = 0; i < p.count; ++i)
            if (p.x[i] < 2.0f * s && p.y[i] > top) top = p.y[i];
        top += def.particle_radius;
        if (top - 2.0 * L > *rise) *rise = top - 2.0 * L;
    }
    pbf_particles p = pbf_world_particles(w);
    int close = 0;
    *nearest = INFINITY;
    for (int i = 0; i < p.count; ++i) {
        double best = INFINITY;
        for (int j = 0; j < p.count; ++j) {
            if (j == i) continue;
            double dx = p.x[i] - p.x[j], dy = p.y[i] - p.y[j], dz = p.z[i] - p.z[j];
            double d2 = dx * dx + dy * dy + dz * dz;
            if (d2 < best) best = d2;
        }
        best = sqrt(best) / s;
        if (best < *nearest) *nearest = best;
        if (best < 0.5) ++close;
    }
    pbf_world_destroy(w);
    return close;
}

static void test_scorr_prevents_clumping(void) {
    double nearest, rise;
    const double r = 0.5 * 0.146 / 18.0;
    int close = close_pairs(pbf_default_world_def().pbf.scorr_k,
                            pbf_default_world_def().pbf.scorr_support, &nearest, &rise);
    printf("  default s_corr: %d particles closer than 0.5 spacing to another, nearest %.3f "
           "spacing; the top at the wall rose %.3f r\n",
           close, nearest, rise / r);
    ENSURE_EQ_INT(close, 0);
    ENSURE(nearest > 0.6);
    ENSURE(rise < 0.5 * r); /* a released column falls, never rises (pbf validate, section 6) */
    int bare = close_pairs(0.0f, 0.0f, &nearest, &rise);
    printf("  no s_corr: %d particles closer than 0.5 spacing, nearest %.3f spacing\n", bare,
           nearest);
    ENSURE(bare > 100);
}

static void test_determinism_threads(void) {
    uint64_t h1 = run_threads(1);
    ENSURE(h1 != 0);
    for (int t = 2; t <= 4; ++t) {
        uint64_t ht = run_threads(t);
        if (ht != h1) printf("  threads %d: hash %016llx != %016llx\n", t,
                             (unsigned long long)ht, (unsigned long long)h1);
        ENSURE(ht == h1);
    }
}

/* A snapshot restored into a fresh world continues bit-identically. */
static pbf_world *restore_world(void) {
    pbf_world_def def = pbf_default_world_def();
    def.particle_radius = 0.015f;
    def.domain_max = (pbf_vec3){0.6f, 0.5f, 0.2f};
    def.friction_dynamic = 0.1f;
    pbf_world *w = make(&def);
    if (!w) return NULL;
    pbf_box b = {.min = {0.4f, 0.0f, 0.05f}, .max = {0.45f, 0.1f, 0.15f}};
    b.motion = (pbf_motion){.type = PBF_MOTION_OSCILLATE, .direction = {1, 0, 0},
                            .amplitude = 0.05f, .period = 0.5f, .stop = -1};
    pbf_world_add_box(w, &b, NULL);
    return w;
}

static void test_snapshot_restore(void) {
    pbf_world *a = restore_world(), *b = restore_world();
    ENSURE(a && b);
    ENSURE(add_block(a, (pbf_vec3){0, 0, 0}, (pbf_vec3){0.2f, 0.4f, 0.2f}, (pbf_vec3){0, 0, 0}));
    for (int s = 0; s < 30; ++s) pbf_world_step(a, 1.0f / 240.0f, NULL);
    pbf_snapshot snap = pbf_world_snapshot(a);
    size_t bytes = (size_t)snap.count * 4;
    float *copy = malloc(bytes * 7);
    uint32_t *ids = malloc(bytes);
    ENSURE(copy && ids);
    const float *src[] = {snap.x, snap.y, snap.z, snap.vx, snap.vy, snap.vz, snap.density};
    for (int k = 0; k < 7; ++k) memcpy(copy + (size_t)k * snap.count, src[k], bytes);
    memcpy(ids, snap.id, bytes);
    pbf_snapshot c = snap;
    c.x = copy; c.y = copy + snap.count; c.z = copy + 2 * (size_t)snap.count;
    c.vx = copy + 3 * (size_t)snap.count; c.vy = copy + 4 * (size_t)snap.count;
    c.vz = copy + 5 * (size_t)snap.count; c.density = copy + 6 * (size_t)snap.count;
    c.id = ids;
    pbf_error err;
    ENSURE(pbf_world_restore(b, &c, &err) == PBF_OK);
    free(copy);
    free(ids);
    ENSURE(state_hash(a) == state_hash(b));
    for (int s = 0; s < 30; ++s) {
        pbf_world_step(a, 1.0f / 240.0f, NULL);
        pbf_world_step(b, 1.0f / 240.0f, NULL);
    }
    ENSURE(state_hash(a) == state_hash(b));
    ENSURE(pbf_world_stats(a).time == pbf_world_stats(b).time);
    c.count = -1;
    ENSURE(pbf_world_restore(b, &c, &err) == PBF_ERR_INVALID_ARGUMENT);
    pbf_world_destroy(a);
    pbf_world_destroy(b);
}

/* The health check names the failed check, the stage and the worst particle. */
static void test_diagnose(void) {
    CPU_ONLY();
    pbf_world_def def = pbf_default_world_def();
    def.particle_radius = 0.02f;
    def.domain_max = (pbf_vec3){0.5f, 0.5f, 0.5f};
    /* the paper's plain solve leaves the lattice compressed after one step (the warm start's
     * momentum can leave it at or below rest density) */
    def.pbf.lambda_warm_start = 0.0f;
    pbf_world *w = make(&def);
    ENSURE(w);
    ENSURE(add_block(w, (pbf_vec3){0, 0, 0}, (pbf_vec3){0.2f, 0.2f, 0.2f}, (pbf_vec3){0, 0, 0}));
    pbf_diagnosis d = pbf_world_diagnose(w, 50.0);
    ENSURE(d.ok && d.check == NULL && d.index == -1);
    /* density: a limit below the surface-free lattice's tiny error is exceeded */
    pbf_world_step(w, 1.0f / 240.0f, NULL);
    d = pbf_world_diagnose(w, 1e-6);
    ENSURE(!d.ok && strcmp(d.check, "density") == 0 && d.value > 1e-6);
    /* escaped: move one particle outside by hand */
    w->px[3] = -0.25f;
    d = pbf_world_diagnose(w, 0.0);
    ENSURE(!d.ok && strcmp(d.check, "escaped") == 0 && d.index == 3);
    ENSURE_NEAR(d.value, 0.25, 1e-6);
    ENSURE_NEAR(d.position.x, -0.25, 1e-6);
    w->px[3] = 0.1f;
    /* non-finite: a NaN velocity shows up first in the predict stage */
    w->vy[5] = NAN;
    uint32_t id5 = w->id[5];
    pbf_world_step(w, 1.0f / 240.0f, NULL);
    pbf_stats st = pbf_world_stats(w);
    ENSURE(st.bad_stage && strcmp(st.bad_stage, "predict") == 0);
    d = pbf_world_diagnose(w, 0.0);
    ENSURE(!d.ok && strcmp(d.check, "non-finite") == 0 && strcmp(d.stage, "predict") == 0);
    ENSURE(d.id == id5 && d.index >= 0 && w->id[d.index] == id5);
    /* the collision stage clamped the NaN position back into the container */
    ENSURE_EQ_INT(st.escaped, 0);
    pbf_world_destroy(w);
}

/* Bad arguments are returned as errors naming the field and the value. */
static void test_errors(void) {
    pbf_world_def def = pbf_default_world_def();
    pbf_world *w = NULL;
    pbf_error err;
    def.particle_radius = -1.0f;
    ENSURE(pbf_world_create(&def, &w, &err) == PBF_ERR_INVALID_ARGUMENT);
    ENSURE(w == NULL);
    ENSURE(strstr(err.message, "particle_radius") && strstr(err.message, "-1"));
    def = pbf_default_world_def();
    def.gravity.y = NAN;
    ENSURE(pbf_world_create(&def, &w, &err) == PBF_ERR_INVALID_ARGUMENT);
    ENSURE(strstr(err.message, "gravity[1]") && strstr(err.message, "nan"));
    def = pbf_default_world_def();
    def.pbf.solver_iterations = 0;
    ENSURE(pbf_world_create(&def, &w, &err) == PBF_ERR_INVALID_ARGUMENT);
    ENSURE(strstr(err.message, "solver_iterations"));
    def = pbf_default_world_def();
    def.domain_max.x = def.domain_min.x;
    ENSURE(pbf_world_create(&def, &w, &err) == PBF_ERR_INVALID_ARGUMENT);
    ENSURE(strstr(err.message, "domain_max[0]") && !strstr(err.message, "world_def"));
    def = pbf_default_world_def();
    def.max_particles = 100;
    ENSURE(pbf_world_create(&def, &w, &err) == PBF_OK);
    pbf_fluid_block b = {{0, 0, 0}, {0.5f, 0.5f, 0.5f}, {0, 0, 0}};
    ENSURE(pbf_world_add_fluid_block(w, &b, &err) == PBF_ERR_LIMIT);
    ENSURE(strstr(err.message, "max_particles"));
    b.max.x = 2.0f;
    ENSURE(pbf_world_add_fluid_block(w, &b, &err) == PBF_ERR_INVALID_ARGUMENT);
    ENSURE(strstr(err.message, "outside the container"));
    b.max.x = NAN;
    ENSURE(pbf_world_add_fluid_block(w, &b, &err) == PBF_ERR_INVALID_ARGUMENT);
    b.max = (pbf_vec3){0.001f, 0.5f, 0.5f};
    ENSURE(pbf_world_add_fluid_block(w, &b, &err) == PBF_ERR_INVALID_ARGUMENT);
    ENSURE(strstr(err.message, "no particle"));
    ENSURE(pbf_world_step(w, -1.0f, &err) == PBF_ERR_INVALID_ARGUMENT);
    ENSURE(strstr(err.message, "dt"));
    ENSURE(pbf_world_step(w, NAN, &err) == PBF_ERR_INVALID_ARGUMENT);
    pbf_box box = {.min = {0.1f, 0.1f, 0.1f}, .max = {0.2f, 0.2f, 0.2f}};
    ENSURE(pbf_world_add_box(w, &box, &err) == PBF_OK);
    ENSURE(pbf_world_add_box(w, &box, &err) == PBF_ERR_INVALID_ARGUMENT);
    ENSURE(strstr(err.message, "overlaps"));
    pbf_box moving = {.min = {0.5f, 0.1f, 0.1f}, .max = {0.6f, 0.2f, 0.2f}};
    moving.motion.type = PBF_MOTION_OSCILLATE;
    moving.motion.direction = (pbf_vec3){0, 0, 0};
    moving.motion.period = 1.0f;
    ENSURE(pbf_world_add_box(w, &moving, &err) == PBF_ERR_INVALID_ARGUMENT);
    ENSURE(strstr(err.message, "direction"));
    pbf_world_destroy(w);
    pbf_world_destroy(NULL);
    ENSURE(pbf_world_create(NULL, &w, &err) == PBF_ERR_INVALID_ARGUMENT);
    /* a float bound accepts the value it names (0.99 is stored as 0.99000001f) */
    def = pbf_default_world_def();
    def.pbf.scorr_dq = 0.99f;
    ENSURE(pbf_world_def_validate(&def, &err) == PBF_OK);
    /* and so does a value typed as text (--set, scene files): every float key of every table
     * takes its two bounds as written (0.9 is stored as 0.89999998f, below the double 0.9) */
    const pbf_param_info *tables[PBF_MAX_PARAM_TABLES];
    size_t counts[PBF_MAX_PARAM_TABLES];
    const int nt = pbf_world_param_tables(tables, counts, PBF_MAX_PARAM_TABLES);
    int floats = 0;
    for (int t = 0; t < nt; ++t)
        for (size_t i = 0; i < counts[t]; ++i) {
            const pbf_param_info *p = &tables[t][i];
            if (p->type != PBF_PARAM_FLOAT) continue;
            ++floats;
            if (!p->min_exclusive)
                ENSURE(pbf_param_check_number(p, p->min, p->name, &err) == PBF_OK);
            ENSURE(pbf_param_check_number(p, p->max, p->name, &err) == PBF_OK);
            ENSURE(pbf_param_check_number(p, p->max * 1.001 + 1e-3, p->name, &err) != PBF_OK);
        }
    ENSURE(floats > 20);
    const pbf_param_info *cheb = NULL;
    for (int t = 0; t < nt && !cheb; ++t)
        cheb = pbf_param_find(tables[t], counts[t], "dfsph_chebyshev_rho");
    ENSURE(cheb && pbf_param_check_number(cheb, 0.9, "dfsph_chebyshev_rho", &err) == PBF_OK);
    /* absurd counts saturate instead of overflowing (UBSan checks the conversion) */
    def.particle_radius = 1e-30f;
    pbf_fluid_block huge = {{0, 0, 0}, {1, 1, 1}, {0, 0, 0}};
    ENSURE(pbf_fluid_block_count(&def, &huge) > (int64_t)1e18);
}

int main(int argc, char **argv) {
    if (!on_cpu()) { /* skip (ctest SKIP_RETURN_CODE 77) where the device is not there */
        pbf_world_def def = pbf_default_world_def();
        snprintf(def.device, sizeof def.device, "%s", test_device());
        pbf_world *w = NULL;
        pbf_error err;
        if (pbf_world_create(&def, &w, &err) != PBF_OK) {
            printf("SKIP: device %s: %s\n", test_device(), err.message);
            return 77;
        }
        pbf_world_destroy(w);
        printf("physics tests on device %s\n", test_device());
    }
    test_begin(argc, argv);
    RUN_SUBTEST(test_delta_p_conserves_momentum);
    RUN_SUBTEST(test_resting_column);
    RUN_SUBTEST(test_bilateral_column);
    RUN_SUBTEST(test_over_relaxation);
    RUN_SUBTEST(test_chebyshev);
    RUN_SUBTEST(test_warm_start);
    RUN_SUBTEST(test_warm_carry);
    RUN_SUBTEST(test_warm_needs_iterations);
    RUN_SUBTEST(test_dam_break_contained);
    RUN_SUBTEST(test_refined_dam_break_stable);
    RUN_SUBTEST(test_pbf_substep_rule);
    RUN_SUBTEST(test_moving_wall);
    RUN_SUBTEST(test_friction);
    RUN_SUBTEST(test_bed_friction_law);
    RUN_SUBTEST(test_bed_friction_resolution);
    RUN_SUBTEST(test_bed_friction_wall);
    RUN_SUBTEST(test_speed_limit_counted);
    RUN_SUBTEST(test_scorr_prevents_clumping);
    RUN_SUBTEST(test_determinism_threads);
    RUN_SUBTEST(test_stage_timing);
    RUN_SUBTEST(test_snapshot_restore);
    RUN_SUBTEST(test_diagnose);
    RUN_SUBTEST(test_errors);
    return test_end();
}
