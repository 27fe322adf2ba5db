/* `pbf run` under an MPI launcher in a pbf built without MPI (see mpi_run.h). */
#include <stdio.h>
#include <stdlib.h>

#include "cli/mpi_run.h"

/* Started by mpirun/mpiexec/srun with more than one process: each would run the whole scene
 * into the same directory, so the run is refused. */
int pbfapp_mpi_launched(void) {
    const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; ++i) {
        const char *v = getenv(vars[i]);
        if (v && atoi(v) > 1) return 1;
    }
    return 0;
}

int pbfapp_mpi_run(const pbfapp_mpi_run_options *o) {
    (void)o;
    fputs("pbf: started by an MPI launcher with several processes, but this pbf was built "
          "without MPI (install libopenmpi-dev and rebuild; cmake says \"pbf MPI: ON\")\n",
          stderr);
    return 2;
}
