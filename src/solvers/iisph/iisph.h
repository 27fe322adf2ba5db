/*
 * implicit incompressible SPH (Ihmsen et al. 2014): the method's descriptor (src/solvers/solver.h).
 */
#ifndef PBF_SOLVER_IISPH_H
#define PBF_SOLVER_IISPH_H

#include "solvers/solver.h"

/* The `solver` key's value, the method's title, and its part of that key's description. */
#define PBF_SOLVER_INFO_iisph {PBF_SOLVER_IISPH, "iisph", "implicit incompressible SPH (Ihmsen et al. 2014)"}
#define PBF_SOLVER_KEY_iisph "iisph = implicit incompressible SPH (Ihmsen et al. 2014)"

extern const pbf_solver pbf_solver_iisph;

#endif
