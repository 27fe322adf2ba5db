/*
 * divergence-free SPH (Bender & Koschier 2015, 2017): the method's descriptor (src/solvers/solver.h).
 */
#ifndef PBF_SOLVER_DFSPH_H
#define PBF_SOLVER_DFSPH_H

#include "solvers/solver.h"

/* The `solver` key's value, the method's title, and its part of that key's description. */
#define PBF_SOLVER_INFO_dfsph {PBF_SOLVER_DFSPH, "dfsph", "divergence-free SPH (Bender & Koschier 2015, 2017)"}
#define PBF_SOLVER_KEY_dfsph "dfsph = divergence-free SPH (Bender & Koschier 2017)"

extern const pbf_solver pbf_solver_dfsph;

#endif
