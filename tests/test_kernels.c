/* Kernels, the rest-lattice mass, the tabulated wall integrals and the Tait equation's power. */
#include <math.h>

#include "internal.h"
#include "solvers/dfsph/dfsph_formulas.h"
#include "solvers/iisph/iisph_formulas.h"
#include "solvers/pcisph/pcisph_formulas.h"
#include "solvers/wcsph/wcsph_formulas.h"
#include "pbf/pbf.h"
#include "test.h"

static pbf_world *make_world_solver(float radius, pbf_solver_kind solver) {
    pbf_world_def def = pbf_default_world_def();
    def.particle_radius = radius;
    def.solver = solver;
    def.domain_max = (pbf_vec3){1, 1, 1};
    pbf_world *w = NULL;
    pbf_error err;
    if (pbf_world_create(&def, &w, &err) != PBF_OK) {
        printf("pbf_world_create: %s\n", err.message);
        return NULL;
    }
    return w;
}

static pbf_world *make_world(float radius) { return make_world_solver(radius, PBF_SOLVER_PBF); }

/* Integral of poly6 over its support by a midpoint rule on a fine grid: 1. */
static void test_poly6_normalised(void) {
    pbf_world *w = make_world(0.01f);
    ENSURE(w);
    const int m = 80;
    const double h = w->k.h, ds = 2 * h / m;
    double sum = 0.0;
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < m; ++j)
            for (int k = 0; k < m; ++k) {
                double x = -h + (i + 0.5) * ds, y = -h + (j + 0.5) * ds, z = -h + (k + 0.5) * ds;
                float r2 = (float)(x * x + y * y + z * z);
                if (r2 < w->k.h2) sum += pbf_poly6(&w->k, r2) * ds * ds * ds;
            }
    pbf_world_destroy(w);
    ENSURE_NEAR(sum, 1.0, 2e-3);
}

/* Spiky: its gradient integrates to zero over the support (odd), and its radial magnitude
 * integrated against r over the ball gives the kernel's normalisation: the spiky kernel
 * W = 15/(pi h^6)(h-r)^3 has integral 1, and -dW/dr = 45/(pi h^6)(h-r)^2. */
static void test_spiky_gradient(void) {
    pbf_world *w = make_world(0.01f);
    ENSURE(w);
    const float h = w->k.h;
    /* antisymmetry: grad W(r) = -grad W(-r), exactly */
    for (int t = 1; t < 50; ++t) {
        float rx = 0.013f * (float)t / 50.0f, ry = -0.007f * (float)t / 50.0f, rz = 0.02f * (float)t / 60.0f;
        float r2 = rx * rx + ry * ry + rz * rz;
        if (r2 >= w->k.h2) continue;
        float f = pbf_spiky(&w->k, r2);
        float fm = pbf_spiky(&w->k, (-rx) * (-rx) + (-ry) * (-ry) + (-rz) * (-rz));
        ENSURE(f * rx == -(fm * -rx));
        ENSURE(f < 0.0f); /* points from i towards j: W decreases with distance */
    }
    /* magnitude: |grad W|(r) = 45/(pi h^6) (h-r)^2 = -d/dr of 15/(pi h^6)(h-r)^3; check that
     * -integral_0^h dW/dr dr = W(0) = 15/(pi h^3) numerically */
    double acc = 0.0;
    const int m = 20000;
    for (int i = 0; i < m; ++i) {
        double r = (i + 0.5) * h / m;
        acc += -pbf_spiky(&w->k, (float)(r * r)) * r * (h / m);
    }
    ENSURE_NEAR(acc / (15.0 / (3.14159265358979 * pow(h, 3))), 1.0, 1e-3);
    /* finite at r = 0 and multiplies a zero vector there */
    ENSURE(isfinite(pbf_spiky(&w->k, 0.0f)));
    pbf_world_destroy(w);
}

/* The particle mass puts a cubic lattice exactly at rest density. */
static void test_lattice_mass(void) {
    pbf_world *w = make_world(0.01f);
    ENSURE(w);
    const float d = w->spacing;
    double rho = 0.0;
    for (int i = -4; i <= 4; ++i)
        for (int j = -4; j <= 4; ++j)
            for (int k = -4; k <= 4; ++k) {
                float r2 = (float)(i * i + j * j + k * k) * d * d;
                if (r2 < w->k.h2) rho += w->k.mass * pbf_poly6(&w->k, r2);
            }
    ENSURE_NEAR(rho, w->def.rest_density, 1e-3 * w->def.rest_density);
    /* and the mass is close to rho0 * d^3 (the kernel sum is a good quadrature) */
    ENSURE_NEAR(w->k.mass / (w->def.rest_density * d * d * d), 1.0, 0.05);
    pbf_world_destroy(w);
}

/* Wall tables: whole space is 1, a half space 1/2, symmetric in permutations, box integrals. */
static void test_wall_tables(void) {
    pbf_world *w = make_world(0.01f);
    ENSURE(w);
    const float h = w->k.h, big = 10.0f;
    float g[3], p[3] = {0, 0, 0};
    float lo_all[3] = {-big, -big, -big}, hi_all[3] = {big, big, big};
    ENSURE_NEAR(pbf_box_integral(&w->wc, w->walls.F, w->walls.G, lo_all, hi_all, p, g), 1.0, 1e-5);
    ENSURE_NEAR(g[0], 0.0, 1e-3 / h);
    /* half space x > 0 */
    float lo_half[3] = {0, -big, -big};
    ENSURE_NEAR(pbf_box_integral(&w->wc, w->walls.F, w->walls.G, lo_half, hi_all, p, g), 0.5, 1e-3);
    /* octant x, y, z > 0: 1/8 */
    float lo_oct[3] = {0, 0, 0};
    ENSURE_NEAR(pbf_box_integral(&w->wc, w->walls.F, w->walls.G, lo_oct, hi_all, p, g), 0.125, 1e-3);
    /* a box beyond the support contributes nothing */
    float lo_far[3] = {1.01f * h, -big, -big};
    ENSURE_NEAR(pbf_box_integral(&w->wc, w->walls.F, w->walls.G, lo_far, hi_all, p, g), 0.0, 1e-7);
    /* symmetry F(a,b,c) = F(b,a,c) = F(c,b,a) */
    float l1[3] = {0.3f * h, -0.5f * h, 0.1f * h}, l2[3] = {-0.5f * h, 0.3f * h, 0.1f * h},
          l3[3] = {0.1f * h, -0.5f * h, 0.3f * h};
    float a = pbf_box_integral(&w->wc, w->walls.F, w->walls.G, l1, hi_all, p, g);
    ENSURE_NEAR(pbf_box_integral(&w->wc, w->walls.F, w->walls.G, l2, hi_all, p, g), a, 1e-5);
    ENSURE_NEAR(pbf_box_integral(&w->wc, w->walls.F, w->walls.G, l3, hi_all, p, g), a, 1e-5);
    /* the gradient of the half space integral is the spiky-kernel plane integral: at the plane
     * through the centre it equals integral of W_spiky over a plane through 0, which is
     * 2 pi int_0^h 15/(pi h^6) (h-r)^3 r dr = 30/h^6 * h^5/20 = 1.5 / h */
    float gx = 0;
    pbf_box_integral(&w->wc, w->walls.F, w->walls.G, lo_half, hi_all, p, g);
    gx = g[0];
    ENSURE_NEAR(gx * h, 1.5, 0.01);
    pbf_world_destroy(w);
}

/* The SPH solvers' cubic spline (Monaghan 1992): PBF keeps poly6 / spiky, an SPH world gets the
 * spline; it integrates to 1, matches the piecewise form of the paper, its gradient is the
 * derivative of W (what makes the symmetric pressure force conservative: the poly6 / spiky pair
 * is not), its lattice mass gives rest density, and the wall tables hold the same kernel: the
 * wall's gradient is the derivative of the wall's density. */
static void test_cubic_spline(void) {
    pbf_world *pw = make_world(0.01f);
    pbf_world *w = make_world_solver(0.01f, PBF_SOLVER_IISPH);
    ENSURE(pw && w);
    if (!pw || !w) return;
    ENSURE(pw->k.cubic == 0.0f);
    ENSURE(w->k.cubic != 0.0f);
    const double h = w->k.h, pi = 3.14159265358979323846, c = 8.0 / (pi * h * h * h);
    /* the paper's piecewise form, and grad W = dW/dr r / |r| against a central difference */
    double worst_w = 0.0, worst_g = 0.0;
    for (int i = 1; i < 200; ++i) {
        const double r = h * i / 200.0, q = r / h;
        const double paper = q <= 0.5 ? c * (6 * q * q * q - 6 * q * q + 1) : c * 2 * pow(1 - q, 3);
        const double got = pbf_cubic(&w->k, (float)(r * r));
        if (fabs(got - paper) / c > worst_w) worst_w = fabs(got - paper) / c;
        const double e = 1e-4 * h, rp = r + e, rm = r - e;
        const double dwdr = (pbf_cubic(&w->k, (float)(rp * rp)) - pbf_cubic(&w->k, (float)(rm * rm))) / (2 * e);
        const double g = pbf_cubic_grad(&w->k, (float)(r * r)) * r;
        if (fabs(g - dwdr) * h / c > worst_g) worst_g = fabs(g - dwdr) * h / c;
        /* the world's kernel of the shared stages is the spline here, poly6 / spiky for PBF */
        ENSURE(pbf_kernel_w(&w->k, (float)(r * r)) == pbf_cubic(&w->k, (float)(r * r)));
        ENSURE(pbf_kernel_grad(&pw->k, (float)(r * r)) == pbf_spiky(&pw->k, (float)(r * r)));
    }
    printf("  cubic spline: largest |W - paper| %.2g, |grad W - dW/dr| %.2g (of 8 / (pi h^3))\n",
           worst_w, worst_g);
    ENSURE(worst_w < 1e-5);
    ENSURE(worst_g < 2e-3);
    ENSURE(pbf_cubic(&w->k, 0.0f) == (float)c);
    ENSURE(isfinite(pbf_cubic_grad(&w->k, 0.0f)));
    /* normalised: the midpoint rule over the support */
    const int n = 80;
    const double ds = 2.0 * h / n;
    double sum = 0.0, rho = 0.0;
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
            for (int k = 0; k < n; ++k) {
                double x = -h + (i + 0.5) * ds, y = -h + (j + 0.5) * ds, z = -h + (k + 0.5) * ds;
                double r2 = x * x + y * y + z * z;
                if (r2 < h * h) sum += pbf_cubic(&w->k, (float)r2) * ds * ds * ds;
            }
    ENSURE_NEAR(sum, 1.0, 2e-3);
    /* the lattice mass */
    const float d = w->spacing;
    for (int i = -4; i <= 4; ++i)
        for (int j = -4; j <= 4; ++j)
            for (int k = -4; k <= 4; ++k) {
                float r2 = (float)(i * i + j * j + k * k) * d * d;
                if (r2 < w->k.h2) rho += w->k.mass * pbf_cubic(&w->k, r2);
            }
    ENSURE_NEAR(rho, w->def.rest_density, 1e-3 * w->def.rest_density);
    /* the wall: d(density)/dp against the tabulated gradient, across a flat wall and a corner */
    const float big = 10.0f;
    float lo[3] = {0, -big, -big}, lo_c[3] = {0, 0, -big}, hi[3] = {big, big, big}, g[3], g2[3];
    double worst_wall = 0.0, worst_pw = 0.0;
    for (int m = -9; m <= 9; ++m) {
        const float a = (float)(0.1 * m * h), e = (float)(0.0625 * h); /* one table step */
        float p[3] = {a, 0.3f * (float)h, 0.0f}, pp[3] = {a + e, p[1], 0}, pm[3] = {a - e, p[1], 0};
        for (int box = 0; box < 2; ++box) {
            const float *l = box ? lo_c : lo;
            pbf_box_integral(&w->wc, w->walls.F, w->walls.G, l, hi, p, g);
            double fd = (pbf_box_integral(&w->wc, w->walls.F, w->walls.G, l, hi, pp, g2) -
                         pbf_box_integral(&w->wc, w->walls.F, w->walls.G, l, hi, pm, g2)) / (2 * e);
            if (fabs(g[0] - fd) * h > worst_wall) worst_wall = fabs(g[0] - fd) * h;
            pbf_box_integral(&pw->wc, pw->walls.F, pw->walls.G, l, hi, p, g);
            fd = (pbf_box_integral(&pw->wc, pw->walls.F, pw->walls.G, l, hi, pp, g2) -
                  pbf_box_integral(&pw->wc, pw->walls.F, pw->walls.G, l, hi, pm, g2)) / (2 * e);
            if (fabs(g[0] - fd) * h > worst_pw) worst_pw = fabs(g[0] - fd) * h;
        }
    }
    printf("  wall gradient against d(wall density)/dx, times h: cubic spline %.3g, poly6 / spiky "
           "%.3g\n", worst_wall, worst_pw);
    ENSURE(worst_wall < 0.02);
    ENSURE(worst_pw > 0.1); /* PBF's pair is not a gradient pair: the check can tell */
    pbf_world_destroy(pw);
    pbf_world_destroy(w);
}

/* The Tait equation's x^gamma (WCSPH): a whole gamma by binary powering (the same products on
 * every device), within a few float roundings of the exact power over the densities a fluid
 * reaches (rel = rho / rho_0 in [0.9, 1.2]) and exact for gamma = 1; any other gamma is powf. */
static void test_tait_power(void) {
    double worst = 0.0, worst7 = 0.0;
    for (int n = 1; n <= 20; ++n)
        for (int k = 0; k <= 3000; ++k) {
            const float x = 0.9f + 0.3f * (float)k / 3000.0f;
            const double exact = pow((double)x, n), got = pbf_tait_pow(x, (float)n);
            const double rel = fabs(got - exact) / exact;
            /* a rounding (u = 2^-24) per product, doubled by every later squaring: < n u */
            ENSURE(rel <= n * 0x1p-24);
            if (rel > worst) worst = rel;
            if (n == 7 && rel > worst7) worst7 = rel;
            if (n == 1) ENSURE(got == (double)x);
        }
    printf("  largest relative error: %.3g for gamma = 7, %.3g for gamma = 1..20 (float epsilon "
           "%.3g)\n",
           worst7, worst, 0x1p-23);
    const float xs[3] = {0.95f, 1.01f, 1.2f}, es[3] = {7.5f, 1.5f, 20.25f};
    for (int k = 0; k < 3; ++k) ENSURE(pbf_tait_pow(xs[k], es[k]) == powf(xs[k], es[k]));
}

/* The container's wall density: the lattice site at a face, in an edge and in a corner of the
 * container reads rest density (fluid lattice sum plus wall), the value and gradient are the
 * whole box's inclusion-exclusion when the edge and corner factors equal the face's, and with
 * the cubic spline the gradient is the derivative of the value. One factor for all three left
 * an edge 0.85 % and a corner 2 % under-dense. */
static void test_container_density(void) {
    pbf_world *ws[2] = {make_world(0.01f), make_world_solver(0.01f, PBF_SOLVER_IISPH)};
    ENSURE(ws[0] && ws[1]);
    if (!ws[0] || !ws[1]) {
        pbf_world_destroy(ws[0]);
        pbf_world_destroy(ws[1]);
        return;
    }
    for (int v = 0; v < 2; ++v) {
        pbf_world *w = ws[v];
        const float d = w->spacing, r = 0.5f * d, h = w->k.h, rho0 = w->def.rest_density;
        const int K = (int)ceilf(h / d);
        pbf_walls_consts one = w->wc; /* one factor for faces, edges and corners */
        one.scale_edge = one.scale_corner = one.scale;
        /* the site one radius from 1, 2 and 3 faces (the lower x, y, z faces of [0, 1]^3) */
        for (int walls = 1; walls <= 3; ++walls) {
            const float p[3] = {r, walls >= 2 ? r : 0.5f, walls >= 3 ? r : 0.5f};
            double rho = 0.0;
            for (int i = -K; i <= K; ++i)
                for (int j = -K; j <= K; ++j)
                    for (int l = -K; l <= K; ++l) {
                        const float q[3] = {p[0] + (float)i * d, p[1] + (float)j * d,
                                            p[2] + (float)l * d};
                        if (q[0] < 0.5f * r || q[1] < 0.5f * r || q[2] < 0.5f * r) continue;
                        const float r2 = (float)(i * i + j * j + l * l) * d * d;
                        if (r2 < w->k.h2) rho += w->k.mass * pbf_kernel_w(&w->k, r2);
                    }
            float g[3];
            const double rho1 = rho + rho0 * pbf_container_density(&one, w->walls.F, w->walls.G, p, g);
            rho += rho0 * pbf_world_wall_density(w, p, g);
            printf("  %s, lattice site at %d wall(s): %.4f rho0 (one factor: %.4f)\n",
                   v ? "cubic spline" : "poly6", walls, rho / rho0, rho1 / rho0);
            ENSURE_NEAR(rho / rho0, 1.0, 1e-3);
            if (walls >= 2) ENSURE(fabs(rho1 / rho0 - 1.0) > 2e-3); /* what the test tells apart */
        }
        /* one factor for faces, edges and corners: the container's box integral, 1 - inside */
        const float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
        double worst_v = 0.0, worst_g = 0.0, worst_fd = 0.0;
        for (int m = 0; m < 64; ++m) {
            /* points within h of up to three faces, lower and upper */
            const float f[3] = {(float)((m * 7) % 11) / 10.0f, (float)((m * 5) % 9) / 8.0f,
                                (float)((m * 3) % 13) / 12.0f};
            float p[3];
            for (int a = 0; a < 3; ++a) p[a] = (m >> a) & 1 ? 1.0f - 1.2f * h * f[a] : 1.2f * h * f[a];
            for (int a = 0; a < 3; ++a) p[a] = p[a] < 0.3f * r ? 0.3f * r : p[a];
            float g[3], gb[3];
            const float val = pbf_container_density(&one, w->walls.F, w->walls.G, p, g);
            const float in = pbf_box_integral(&one, w->walls.F, w->walls.G, lo, hi, p, gb);
            const double ref = one.scale * (1.0 - in);
            if (fabs(val - ref) > worst_v) worst_v = fabs(val - ref);
            for (int a = 0; a < 3; ++a)
                if (fabs(g[a] + one.scale * gb[a]) * h > worst_g)
                    worst_g = fabs(g[a] + one.scale * gb[a]) * h;
            if (v == 1) { /* the spline: gradient = derivative of the calibrated value */
                const float e = 0.0625f * h;
                for (int a = 0; a < 3; ++a) {
                    float pp[3] = {p[0], p[1], p[2]}, pm[3] = {p[0], p[1], p[2]}, gg[3];
                    pp[a] += e;
                    pm[a] -= e;
                    const double fd =
                        (pbf_container_density(&w->wc, w->walls.F, w->walls.G, pp, gg) -
                         pbf_container_density(&w->wc, w->walls.F, w->walls.G, pm, gg)) / (2 * e);
                    pbf_container_density(&w->wc, w->walls.F, w->walls.G, p, gg);
                    if (fabs(gg[a] - fd) * h > worst_fd) worst_fd = fabs(gg[a] - fd) * h;
                }
            }
        }
        printf("  %s: against 1 - box integral: value %.2g, gradient x h %.2g; cubic: gradient "
               "against the derivative x h %.2g\n",
               v ? "cubic spline" : "poly6", worst_v, worst_g, worst_fd);
        ENSURE(worst_v < 1e-5);
        ENSURE(worst_g < 1e-4);
        if (v == 1) ENSURE(worst_fd < 0.02);
    }
    pbf_world_destroy(ws[0]);
    pbf_world_destroy(ws[1]);
}

int main(int argc, char **argv) {
    test_begin(argc, argv);
    RUN_SUBTEST(test_poly6_normalised);
    RUN_SUBTEST(test_spiky_gradient);
    RUN_SUBTEST(test_lattice_mass);
    RUN_SUBTEST(test_wall_tables);
    RUN_SUBTEST(test_container_density);
    RUN_SUBTEST(test_tait_power);
    RUN_SUBTEST(test_cubic_spline);
    return test_end();
}
