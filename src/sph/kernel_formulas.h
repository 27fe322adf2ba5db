/*
 * The kernel formulas, written once over PBF_REAL (float, or a SIMD vector of floats on the CPU).
 * Included by kernel.h for float and by the CPU backend for its SIMD lanes, with
 *   PBF_REAL            the value type
 *   PBF_REAL_SQRT(x)    correctly rounded square root of PBF_REAL
 *   PBF_REAL_MAX(a, b)  a > b ? a : b per lane
 *   PBF_KFN(name)       the name of the instance (name, or name##_v)
 * Every formula evaluates its operations in one fixed order, so a scalar lane and a SIMD lane give
 * bit-identical results (built with -ffp-contract=off: no fused multiply-add).
 * No include guard: included once per instance.
 */

/* W_poly6(r) for r2 = |r|^2 < h^2 (checked, or masked, by the caller). */
PBF_FN PBF_REAL PBF_KFN(pbf_poly6)(const pbf_sph_consts *k, PBF_REAL r2) {
    PBF_REAL d = k->h2 - r2;
    return k->poly6 * d * d * d;
}

/* grad W_spiky(r) = pbf_spiky(k, |r|^2) * r for |r| < h. Finite at r = 0 (distance floor r_min),
 * where it multiplies a zero vector, so callers need no special case for j = i. */
PBF_FN PBF_REAL PBF_KFN(pbf_spiky)(const pbf_sph_consts *k, PBF_REAL r2) {
    PBF_REAL r = PBF_REAL_SQRT(r2);
    r = PBF_REAL_MAX(r, k->r_min);
    PBF_REAL d = k->h - r;
    return k->spiky * d * d / r;
}

/* The cubic spline (Monaghan 1992; SPlisHSPlasH's CubicKernel) with support h, for r2 < h^2:
 * W = 8 / (pi h^3) (2 (1 - q)^3 - max(1 - 2q, 0)^3), q = |r| / h, which is 6 q^3 - 6 q^2 + 1
 * for q <= 1/2 and 2 (1 - q)^3 beyond, written without a branch (SIMD lanes). */
PBF_FN PBF_REAL PBF_KFN(pbf_cubic)(const pbf_sph_consts *k, PBF_REAL r2) {
    PBF_REAL q = PBF_REAL_SQRT(r2) * k->inv_h;
    PBF_REAL a = 1.0f - q, b = PBF_REAL_MAX(1.0f - 2.0f * q, 0.0f);
    return k->cubic_w * (2.0f * a * a * a - b * b * b);
}

/* Its gradient, grad W = pbf_cubic_grad(k, |r|^2) * r for |r| < h: dW/dq / (h |r|) with
 * dW/dq = 48 / (pi h^3) (max(1 - 2q, 0)^2 - (1 - q)^2) (= 48 / (pi h^3) q (3q - 2) for
 * q <= 1/2), so the factor is finite at r = 0 (distance floor r_min, as pbf_spiky). */
PBF_FN PBF_REAL PBF_KFN(pbf_cubic_grad)(const pbf_sph_consts *k, PBF_REAL r2) {
    PBF_REAL r = PBF_REAL_SQRT(r2);
    r = PBF_REAL_MAX(r, k->r_min);
    PBF_REAL q = r * k->inv_h;
    PBF_REAL a = 1.0f - q, b = PBF_REAL_MAX(1.0f - 2.0f * q, 0.0f);
    return k->cubic_g * (b * b - a * a) / r;
}

/* Artificial pressure of eq. 13 without its strength: (W(r) / W(dq))^n, from w = W(r). The
 * default n = 4 is two squarings. */
PBF_FN PBF_REAL PBF_KFN(pbf_scorr_shape)(PBF_REAL w, float inv_wdq, int n) {
    PBF_REAL ratio = w * inv_wdq, s;
    if (n == 4) {
        s = ratio * ratio;
        s = s * s;
    } else {
        s = ratio;
        for (int e = 1; e < n; ++e) s *= ratio;
    }
    return s;
}

/* s_corr of a pair from its shape s = (W(r) / W(dq))^n, in two parts (both on lambda's scale,
 * negative: repulsive): ks times the part above s_rest, the shape at the rest spacing, which
 * only pairs closer than the rest spacing have (against clumping), and ksg times the rest,
 * min(s, s_rest), the artificial pressure that every pair within h feels (ksg scales with
 * g dt^2: see pbf_scorr_support_ks). */
PBF_FN PBF_REAL PBF_KFN(pbf_scorr_split)(PBF_REAL s, float s_rest, float ks, float ksg) {
    PBF_REAL above = PBF_REAL_MAX(s - s_rest, 0.0f);
    return ks * above + ksg * (s - above);
}
