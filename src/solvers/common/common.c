/*
 * What the shared stages declare beyond their rows (common.h).
 */
#include "solvers/common/common.h"

#include "internal.h"

unsigned pbf_velocity_halo(const pbf_world *w) {
    unsigned rows = PBF_ROW(PBF_F_DENSITY) | PBF_ROW(PBF_F_LAMBDA);
    if (pbf_lambda_carried(w) && w->def.vorticity > 0.0f)
        rows |= PBF_ROW(PBF_F_PX) | PBF_ROW(PBF_F_PY) | PBF_ROW(PBF_F_PZ);
    return rows;
}
