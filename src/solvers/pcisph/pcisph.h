/*
 * predictive-corrective incompressible SPH (Solenthaler & Pajarola 2009): the method's descriptor (src/solvers/solver.h).
 */
#ifndef PBF_SOLVER_PCISPH_H
#define PBF_SOLVER_PCISPH_H

#include "solvers/solver.h"

/* The `solver` key's value, the method's title, and its part of that key's description. */
#define PBF_SOLVER_INFO_pcisph {PBF_SOLVER_PCISPH, "pcisph", "predictive-corrective incompressible SPH (Solenthaler & Pajarola 2009)"}
#define PBF_SOLVER_KEY_pcisph "pcisph = predictive-corrective incompressible SPH (Solenthaler & Pajarola 2009)"

extern const pbf_solver pbf_solver_pcisph;

#endif
