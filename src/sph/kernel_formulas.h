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
