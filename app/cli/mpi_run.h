/*
 * `mpirun -np N pbf run SCENE`: the run loop over MPI processes (app/cli/mpi_run.c, built where MPI
 * is found; app/cli/mpi_none.c otherwise).
 *
 * Every process loads the scene and builds the same world, then pbf_mpi_domain_create (libpbf_mpi)
 * splits it into boxes; every step is collective. Process 0 gathers the state each frame and
 * writes everything the single-process run writes (frames, stats.jsonl with `ranks`,
 * `rank_particles_min`, `rank_particles_max`, scene.json), the same files byte for byte apart
 * from those three members and the timings (or each process its piece of a frame: mpi_output =
 * pieces). Checkpoints are written by every process (app/io/checkpoint.h: a piece per process with
 * the keys that give the single-process memory order, then process 0's index), so `--resume`
 * continues on any number of processes, each reading its share of the pieces
 * (pbf_mpi_domain_create_parts), or without MPI (the pieces merged). --mesh: process 0 meshes
 * each frame gathered on it (also with mpi_output = pieces), the same meshes as the
 * single-process run's. Not supported under MPI yet: --render/--video, --adaptive.
 */
#ifndef PBFAPP_MPI_RUN_H
#define PBFAPP_MPI_RUN_H

#include <stddef.h>

#include "io/scene.h"
#include "render/mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when this process was started by an MPI launcher (mpirun, mpiexec, srun). */
int pbfapp_mpi_launched(void);

typedef struct pbfapp_mpi_run_options {
    const char *scene;  /* scene file (ignored with resume) */
    const char *out;    /* output directory (= resume with resume) */
    const char *resume; /* --resume DIR, or NULL */
    int quiet;
    int render;         /* --render or --video was given (refused) */
    const pbfapp_override *overrides;
    size_t override_count;
    const pbfapp_mesh_options *mesh; /* --mesh: process 0 meshes each gathered frame */
} pbfapp_mpi_run_options;

/* `pbf run` over MPI: initialises and finalises MPI around the run. Returns the exit status of
 * `pbf run` (the same on every process). */
int pbfapp_mpi_run(const pbfapp_mpi_run_options *options);

#ifdef __cplusplus
}
#endif

#endif /* PBFAPP_MPI_RUN_H */
