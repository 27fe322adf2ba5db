/*
 * State-equation SPH (src/solvers/sesph/): its keys are set by name like every method's, and a
 * column at rest settles to the compression its linear state equation p = k (rho / rho_0 - 1)
 * predicts: two layers dy apart differ by rho_0 g dy / k (Tait's equation with the same stiffness
 * would give a seventh of it).
 */
#include <string.h>

#include "internal.h"
#include "pbf/params.h"
#include "test.h"

static pbf_solver_kind sesph_kind(void) {
    size_t n = 0;
    const pbf_solver_info *s = pbf_solvers(&n);
    for (size_t i = 0; i < n; ++i)
        if (strcmp(s[i].name, "sesph") == 0) return s[i].kind;
    return (pbf_solver_kind)-1;
}

static int set_key(pbf_world_def *d, const char *key, double v, pbf_error *err) {
    size_t n = 0;
    const pbf_param_info *t = pbf_solver_params(sesph_kind(), &n);
    const pbf_param_info *p = t ? pbf_param_find(t, n, key) : NULL;
    return p && pbf_param_set_number(p, d, 0, v, key, err) == PBF_OK;
}

/* Its keys by name; a bad value refused with the key in the message. */
static void test_keys(void) {
    ENSURE((int)sesph_kind() >= PBF_FIRST_SLICED_METHOD);
    pbf_world_def d = pbf_default_world_def();
    d.solver = sesph_kind();
    ENSURE(pbf_world_def_validate(&d, NULL) == PBF_OK);
    pbf_error err;
    memset(&err, 0, sizeof err);
    ENSURE(set_key(&d, "sesph_stiffness", 2.0e5, &err));
    ENSURE(!set_key(&d, "sesph_tension", 2.0, &err));
    ENSURE(strstr(err.message, "sesph_tension") != NULL);
    /* the defaults of the other methods are untouched by its slice */
    const pbf_world_def ref = pbf_default_world_def();
    ENSURE(memcmp(&d.wcsph, &ref.wcsph, sizeof d.wcsph) == 0);
    ENSURE(memcmp(&d.iisph, &ref.iisph, sizeof d.iisph) == 0);
}

/* The difference of the compression of two layers of a column at rest after `seconds`, their
 * distance in *height, in percent. */
static double column_error(double k, double tension, double seconds, double *height) {
    pbf_world_def d = pbf_default_world_def();
    d.solver = sesph_kind();
    d.particle_radius = 0.01f;
    d.domain_max = (pbf_vec3){0.2f, 0.6f, 0.2f};
    d.threads = 2;
    if (!set_key(&d, "sesph_stiffness", k, NULL) || !set_key(&d, "sesph_tension", tension, NULL) ||
        !set_key(&d, "sesph_viscosity", 0.5, NULL))
        return -1.0;
    pbf_world *w = NULL;
    if (pbf_world_create(&d, &w, NULL) != PBF_OK) return -1.0;
    pbf_fluid_block b = {{0.0f, 0.0f, 0.0f}, {0.2f, 0.4f, 0.2f}, {0, 0, 0}};
    double avg = -1.0;
    if (pbf_world_add_fluid_block(w, &b, NULL) == PBF_OK) {
        const int steps = (int)(seconds * 240.0 + 0.5);
        int ok = 1;
        for (int s = 0; s < steps && ok; ++s) ok = pbf_world_step(w, 1.0f / 240.0f, NULL) == PBF_OK;
        const pbf_stats st = pbf_world_stats(w);
        /* the mean density of two layers 0.2 m apart, inside the column (away from the floor
         * and the surface): the hydrostatic pressure rho_0 g dy between them compresses the
         * lower one by rho_0 g dy / k */
        const pbf_particles p = pbf_world_particles(w);
        double sum[2] = {0.0, 0.0}, cnt[2] = {0.0, 0.0};
        for (int i = 0; i < p.count; ++i) {
            const int l = p.y[i] > 0.06f && p.y[i] < 0.1f   ? 0
                          : p.y[i] > 0.26f && p.y[i] < 0.3f ? 1
                                                            : -1;
            if (l < 0 || p.x[i] < 0.04f || p.x[i] > 0.16f || p.z[i] < 0.04f || p.z[i] > 0.16f)
                continue;
            sum[l] += p.density[i];
            cnt[l] += 1.0;
        }
        if (ok && st.nonfinite == 0 && st.escaped == 0 && cnt[0] > 0.0 && cnt[1] > 0.0)
            avg = 100.0 * (sum[0] / cnt[0] - sum[1] / cnt[1]) / 1000.0;
        *height = 0.2;
    }
    pbf_world_destroy(w);
    return avg;
}

static void test_column_follows_the_linear_equation(void) {
    double H = 0.0;
    const double k = 1.0e5;
    const double e1 = column_error(k, 0.0, 2.0, &H);
    const double expect = 100.0 * 1000.0 * 9.81 * H / k;
    printf("  k = %.0f Pa: %.3f %% (rho_0 g dy / k = %.3f %%)\n", k, e1, expect);
    /* (the column still rings after 2 s: measured 1.958 % against 1.962 %, and 0.911 % against
     * 0.981 % for 2k; Tait's equation would give a seventh) */
    ENSURE(e1 > 0.75 * expect && e1 < 1.25 * expect);
    /* Müller et al.'s tension: still finite and in the box */
    const double et = column_error(k, 1.0, 0.5, &H);
    printf("  with tension: %.3f %%\n", et);
    ENSURE(et > 0.0);
}

int main(int argc, char **argv) {
    test_begin(argc, argv);
    RUN_SUBTEST(test_keys);
    RUN_SUBTEST(test_column_follows_the_linear_equation);
    return test_end();
}
