/* The SPH family beside PBF: each solver's counterparts of PBF's physics tests (rest density of a
 * settled column, the density profile along the depth, no energy gain, no escape, a column that
 * falls at once, determinism over thread counts), the iterations that stop at a tolerance, and
 * PBF's fixed count untouched by them. Small particle counts: a few seconds each. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pbf/params.h"
#include "pbf/pbf.h"
#include "test.h"

static const pbf_solver_kind sph_solvers[] = {PBF_SOLVER_WCSPH, PBF_SOLVER_DFSPH,
                                              PBF_SOLVER_PCISPH, PBF_SOLVER_IISPH};
static const char *const sph_names[] = {"wcsph", "dfsph", "pcisph", "iisph"};
#define NSPH 4

/* A 0.2 x 0.3 x 0.2 m column (768 particles) in a 0.2 x 0.6 x 0.2 m tank. */
static pbf_world *column(pbf_solver_kind solver, int threads) {
    pbf_world_def def = pbf_default_world_def();
    def.particle_radius = 0.0125f;
    def.domain_max = (pbf_vec3){0.2f, 0.6f, 0.2f};
    def.solver = solver;
    def.threads = threads;
    pbf_world *w = NULL;
    pbf_error err;
    if (pbf_world_create(&def, &w, &err) != PBF_OK) {
        printf("pbf_world_create: %s\n", err.message);
        return NULL;
    }
    pbf_fluid_block b = {{0, 0, 0}, {0.2f, 0.3f, 0.2f}, {0, 0, 0}};
    if (pbf_world_add_fluid_block(w, &b, &err) != PBF_OK) {
        printf("add block: %s\n", err.message);
        pbf_world_destroy(w);
        return NULL;
    }
    return w;
}

/* Kinetic plus potential energy (gravity along -y), J per kg of fluid. */
static double energy(const pbf_world *w) {
    pbf_particles p = pbf_world_particles(w);
    double e = 0.0;
    for (int i = 0; i < p.count; ++i)
        e += 0.5 * ((double)p.vx[i] * p.vx[i] + (double)p.vy[i] * p.vy[i] +
                    (double)p.vz[i] * p.vz[i]) +
             9.81 * p.y[i];
    return e / p.count;
}

static double mean_y(const pbf_world *w) {
    pbf_particles p = pbf_world_particles(w);
    double s = 0.0;
    for (int i = 0; i < p.count; ++i) s += p.y[i];
    return s / p.count;
}

/* WCSPH's density along the depth follows its equation of state under the hydrostatic pressure:
 * rho / rho_0 = (1 + rho_0 g d / B)^(1 / gamma) at depth d (Becker & Teschner 2007's Tait
 * equation inverted); DFSPH holds it at rest density at every depth. */
static void check_density_profile(const pbf_world *w, int s) {
    {
        pbf_world_def def = pbf_default_world_def();
        pbf_particles p = pbf_world_particles(w);
        /* the surface: the highest particles; bands 2 spacings thick below it, walls excluded */
        double top = 0.0;
        for (int i = 0; i < p.count; ++i)
            if (p.y[i] > top) top = p.y[i];
        for (int band = 1; band <= 4; ++band) {
            double lo = top - 0.05 * (band + 1), hi = top - 0.05 * band, sum = 0.0;
            int n = 0;
            for (int i = 0; i < p.count; ++i)
                if (p.y[i] >= lo && p.y[i] < hi && p.x[i] > 0.03f && p.x[i] < 0.17f &&
                    p.z[i] > 0.03f && p.z[i] < 0.17f) {
                    sum += p.density[i];
                    n++;
                }
            if (n == 0) continue;
            double depth = top + 0.0125 - 0.5 * (lo + hi), rho = sum / n, expect = 1000.0;
            if (sph_solvers[s] == PBF_SOLVER_WCSPH)
                expect = 1000.0 * pow(1.0 + 1000.0 * 9.81 * depth / def.wcsph.stiffness,
                                      1.0 / def.wcsph.exponent);
            printf("  %s: depth %.3f m: %.2f kg/m^3 (%d particles), expected %.2f\n", sph_names[s],
                   depth, rho, n, expect);
            ENSURE_NEAR(rho, expect, 6.0);
        }
    }
}

/* Each solver settles a column: no energy gain over the run (the initial lattice sits at rest
 * density, so the energy can only go), the column never rises, nobody leaves, and the settled
 * fluid is at rest density on average and at the floor, nearly at rest, with the density profile
 * of its method along the depth. */
static void test_resting_column(void) {
    for (int s = 0; s < NSPH; ++s) {
        pbf_world *w = column(sph_solvers[s], 0);
        ENSURE(w);
        if (!w) continue;
        const double e0 = energy(w), y0 = mean_y(w);
        double emax = e0;
        const float dt = 1.0f / 120.0f;
        for (int k = 0; k < 120; ++k) {
            ENSURE(pbf_world_step(w, dt, NULL) == PBF_OK);
            double e = energy(w);
            if (e > emax) emax = e;
            if (k == 0) ENSURE(mean_y(w) <= y0); /* falls at once */
        }
        pbf_stats st = pbf_world_stats(w);
        pbf_particles p = pbf_world_particles(w);
        double speed = 0.0, floor_rho = 0.0;
        int floor_n = 0;
        for (int i = 0; i < p.count; ++i) {
            speed += sqrt((double)p.vx[i] * p.vx[i] + (double)p.vy[i] * p.vy[i] +
                          (double)p.vz[i] * p.vz[i]);
            if (p.y[i] < 0.025f) {
                floor_rho += p.density[i];
                floor_n++;
            }
        }
        speed /= p.count;
        floor_rho /= floor_n > 0 ? floor_n : 1;
        printf("  %s: density error avg %.3f %% max %.3f %%, mean speed %.4f m/s, floor layer "
               "%.1f kg/m^3, energy gain %.2e J/kg, substeps %d, iterations %d (error %.3f %%), "
               "divergence %d (%.3f %%)\n",
               sph_names[s], st.density_error_avg, st.density_error_max, speed, floor_rho,
               emax - e0, st.substeps, st.iterations, st.solver_error, st.divergence_iterations,
               st.divergence_error);
        ENSURE(emax <= e0 + 1e-6 * fabs(e0));
        ENSURE_EQ_INT(st.escaped, 0);
        ENSURE_EQ_INT(st.nonfinite, 0);
        ENSURE(st.bad_stage == NULL);
        /* WCSPH is compressible by design: B = 50 kPa holds 0.3 m of water within ~1 % */
        ENSURE(st.density_error_avg < (sph_solvers[s] == PBF_SOLVER_WCSPH ? 1.5 : 0.5));
        ENSURE(st.density_error_max < 5.0);
        ENSURE(speed < 0.05 * sqrt(9.81 * 0.3)); /* free fall from the top: 2.4 m/s */
        ENSURE(floor_n > 0);
        ENSURE_NEAR(floor_rho, 1000.0, 20.0);
        check_density_profile(w, s);
        pbf_world_destroy(w);
    }
}

/* A dam break stays in its container, finite, for every solver. */
static void test_dam_break_contained(void) {
    for (int s = 0; s < NSPH; ++s) {
        pbf_world_def def = pbf_default_world_def();
        def.particle_radius = 0.015f;
        def.domain_max = (pbf_vec3){0.6f, 0.4f, 0.15f};
        def.solver = sph_solvers[s];
        pbf_world *w = NULL;
        ENSURE(pbf_world_create(&def, &w, NULL) == PBF_OK);
        if (!w) continue;
        pbf_fluid_block b = {{0, 0, 0}, {0.2f, 0.3f, 0.15f}, {1.0f, 0, 0}};
        ENSURE(pbf_world_add_fluid_block(w, &b, NULL) == PBF_OK);
        pbf_box ob = {.min = {0.4f, 0.0f, 0.0f}, .max = {0.45f, 0.06f, 0.15f}};
        ENSURE(pbf_world_add_box(w, &ob, NULL) == PBF_OK);
        for (int k = 0; k < 60; ++k) {
            ENSURE(pbf_world_step(w, 1.0f / 120.0f, NULL) == PBF_OK);
            pbf_stats st = pbf_world_stats(w);
            ENSURE_EQ_INT(st.escaped, 0);
            ENSURE_EQ_INT(st.nonfinite, 0);
            ENSURE(st.density_error_max < 50.0);
        }
        pbf_stats st = pbf_world_stats(w);
        printf("  %s dam break: max speed %.2f m/s, density error avg %.3f %%, %d substeps\n",
               sph_names[s], st.max_speed, st.density_error_avg, st.substeps);
        pbf_world_destroy(w);
    }
}

static uint64_t state_hash(const pbf_world *w) {
    pbf_particles p = pbf_world_particles(w);
    uint64_t h = 1469598103934665603ull;
    const void *arrays[] = {p.x, p.y, p.z, p.vx, p.vy, p.vz, p.density, p.id};
    for (size_t a = 0; a < 8; ++a) {
        const unsigned char *b = arrays[a];
        for (size_t k = 0; k < (size_t)p.count * 4; ++k) h = (h ^ b[k]) * 1099511628211ull;
    }
    return h;
}

/* Bit-identical results for 1, 2 and 3 threads. */
static void test_determinism_threads(void) {
    for (int s = 0; s < NSPH; ++s) {
        uint64_t h[3] = {0, 0, 0};
        for (int t = 1; t <= 3; ++t) {
            pbf_world *w = column(sph_solvers[s], t);
            ENSURE(w);
            if (!w) continue;
            for (int k = 0; k < 20; ++k) pbf_world_step(w, 1.0f / 120.0f, NULL);
            h[t - 1] = state_hash(w);
            pbf_world_destroy(w);
        }
        ENSURE(h[0] != 0 && h[0] == h[1] && h[0] == h[2]);
    }
}

/* The iterative solves stop at their tolerance within their bounds and report what they reached;
 * PBF's default is its fixed count, and its tolerance option stops early. */
static void test_iterations(void) {
    /* DFSPH: the error reached is at most the tolerance unless the maximum was hit */
    pbf_world *w = column(PBF_SOLVER_DFSPH, 0);
    ENSURE(w);
    if (w) {
        for (int k = 0; k < 30; ++k) {
            pbf_world_step(w, 1.0f / 120.0f, NULL);
            pbf_stats st = pbf_world_stats(w);
            ENSURE(st.substeps >= 1);
            ENSURE(st.iterations >= 2 * st.substeps && st.iterations <= 100 * st.substeps);
            ENSURE(st.solver_error <= 0.1 + 1e-9 || st.iterations == 100 * st.substeps);
            ENSURE(st.divergence_error <= 0.1 + 1e-9 ||
                   st.divergence_iterations == 100 * st.substeps);
        }
        pbf_world_destroy(w);
    }
    /* PBF: fixed count by default; with a tolerance, fewer iterations where it is met */
    pbf_world_def def = pbf_default_world_def();
    def.particle_radius = 0.0125f;
    def.domain_max = (pbf_vec3){0.2f, 0.6f, 0.2f};
    int total[2] = {0, 0};
    for (int mode = 0; mode < 2; ++mode) {
        if (mode == 1) {
            def.pbf.tolerance = 0.5f;
            def.pbf.min_iterations = 1;
            def.pbf.max_iterations = 8;
        }
        pbf_world *p = NULL;
        ENSURE(pbf_world_create(&def, &p, NULL) == PBF_OK);
        if (!p) continue;
        pbf_fluid_block b = {{0, 0, 0}, {0.2f, 0.3f, 0.2f}, {0, 0, 0}};
        pbf_world_add_fluid_block(p, &b, NULL);
        for (int k = 0; k < 60; ++k) {
            pbf_world_step(p, 1.0f / 240.0f, NULL);
            pbf_stats st = pbf_world_stats(p);
            total[mode] += st.iterations;
            if (mode == 0) ENSURE_EQ_INT(st.iterations, 4);
            else {
                ENSURE(st.iterations >= 1 && st.iterations <= 8);
                ENSURE(st.solver_error <= 0.5 + 1e-9 || st.iterations == 8);
            }
        }
        printf("  pbf %s: %d iterations in 60 steps, last error %.3f %%\n",
               mode ? "tolerance 0.5 %" : "fixed 4", total[mode], pbf_world_stats(p).solver_error);
        pbf_world_destroy(p);
    }
    ENSURE(total[1] != total[0]); /* the tolerance changed the work done */
}

/* Every solver is listed with its table; bad bounds and GPU devices are refused by name. */
static void test_tables_and_errors(void) {
    size_t ns = 0;
    const pbf_solver_info *sv = pbf_solvers(&ns);
    ENSURE(ns == 3);
    for (size_t k = 0; k < ns; ++k) {
        size_t n = 0;
        ENSURE(pbf_solver_params(sv[k].kind, &n) != NULL && n > 0);
    }
    pbf_error err;
    pbf_world_def def = pbf_default_world_def();
    def.dfsph.min_iterations = 5;
    def.dfsph.max_iterations = 3;
    ENSURE(pbf_world_def_validate(&def, &err) == PBF_ERR_INVALID_ARGUMENT);
    ENSURE(strstr(err.message, "dfsph_min_iterations") != NULL);
    def = pbf_default_world_def();
    def.wcsph.stiffness = 0.0f;
    ENSURE(pbf_world_def_validate(&def, &err) == PBF_ERR_INVALID_ARGUMENT);
    ENSURE(strstr(err.message, "wcsph_stiffness") != NULL);
    def = pbf_default_world_def();
    def.solver = PBF_SOLVER_DFSPH;
    snprintf(def.device, sizeof def.device, "opencl");
    pbf_world *w = NULL;
    ENSURE(pbf_world_create(&def, &w, &err) == PBF_ERR_INVALID_ARGUMENT);
    ENSURE(w == NULL);
    ENSURE(strstr(err.message, "dfsph") != NULL && strstr(err.message, "cpu") != NULL);
}

int main(int argc, char **argv) {
    test_begin(argc, argv);
    RUN_SUBTEST(test_resting_column);
    RUN_SUBTEST(test_dam_break_contained);
    RUN_SUBTEST(test_determinism_threads);
    RUN_SUBTEST(test_iterations);
    RUN_SUBTEST(test_tables_and_errors);
    return test_end();
}
