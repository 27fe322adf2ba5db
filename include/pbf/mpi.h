/*
 * pbf over MPI: a world split among the processes of an MPI communicator (libpbf_mpi, built
 * only where MPI is found; the library libpbf itself knows nothing of MPI).
 *
 *     MPI_Init(&argc, &argv);
 *     pbf_world *w = ...;                     // every process: the same definition, blocks, boxes
 *     pbf_mpi_domain *d = NULL;               // (or the same restored snapshot)
 *     pbf_mpi_domain_create(w, MPI_COMM_WORLD, NULL, &d, &err);  // each keeps its slab
 *     for (...) pbf_world_step(w, dt, &err);  // collective: every process steps together
 *     pbf_snapshot s;
 *     pbf_mpi_gather(d, 0, &s);               // the whole state on process 0, in the order of a
 *                                             // single-process run
 *     pbf_mpi_domain_destroy(d);
 *
 * Decomposition: slabs of whole grid cells along the container's longest axis, one per process
 * in rank order, their bounds chosen on particle counts so that the load is balanced (or of equal
 * width: options.imbalance <= 0). Each process owns the particles whose grid cell (of the
 * predicted position, the cell the step sorts by) lies in its slab, and receives every step, as
 * ghost particles, the particles of the one cell layer on either side of it (a cell is at least
 * the kernel radius h wide). Exchanges in a step, all of them only between processes whose slabs
 * touch:
 *   after predict     migration of particles whose cell left the slab, and the ghosts (every
 *                     SORTED field of the particle-field registry: positions, predicted
 *                     positions, velocities, id, cell)
 *   after lambda      lambda of the ghosts (delta p reads lambda_j)
 *   after collide     predicted positions of the ghosts (the next lambda and the velocity pass
 *                     read x*_j), every solver iteration
 *   after velocity    density and |omega| of the ghosts (XSPH and vorticity confinement read
 *                     them; the ghosts' velocities are recomputed exactly from x and x*)
 *   after vorticity   the ghosts are dropped
 *   statistics        combined over every process (MPI_Allreduce)
 * The slabs are rebalanced at the start of a step when the largest process's particle count
 * exceeds the mean by more than options.imbalance.
 *
 * Same answer: ghosts enter every neighbour sum in the order of a single-process run (each
 * process's particles are kept in the global cell-sorted order; see src/mpi/domain.c), so a run
 * on any number of processes is bit-identical to the single-process run (CPU device; the one
 * exception is a step in which a cell range of more than 4095 particles switches the CPU
 * backend from neighbour lists to range scans on some processes only).
 *
 * Every call here is collective over the communicator. Only the CPU device is supported.
 */
#ifndef PBF_MPI_H
#define PBF_MPI_H

#include <mpi.h>

#include "pbf/pbf.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pbf_mpi_domain pbf_mpi_domain;

typedef struct pbf_mpi_options {
    int axis;         /* 0, 1, 2; -1 = the container's longest axis */
    double imbalance; /* rebalance when max count > (1 + imbalance) * mean; <= 0: slabs of equal
                         width in cells, never rebalanced */
} pbf_mpi_options;

/* Longest axis, imbalance 0.1. */
pbf_mpi_options pbf_mpi_default_options(void);

/* Splits the world among the processes of `comm`. Every process must hold the same world (same
 * definition, boxes, particles in the same order: built from the same scene, or restored from
 * the same snapshot); each keeps the particles of its slab. The world then belongs to the
 * domain until pbf_mpi_domain_destroy: step it on every process together, and neither add
 * particles to it nor restore a snapshot into it meanwhile (restore before creating the domain,
 * as `pbf run --resume` does). Fails (on every
 * process) for a device other than the CPU or worlds that differ in particle count. */
pbf_status pbf_mpi_domain_create(pbf_world *world, MPI_Comm comm, const pbf_mpi_options *options,
                                 pbf_mpi_domain **out, pbf_error *err);

/* Detaches from the world (which keeps this process's particles) and frees the domain. */
void pbf_mpi_domain_destroy(pbf_mpi_domain *domain);

/* The whole state gathered on process `root`, in the memory order of a single-process run, into
 * *out (arrays owned by the domain, valid until the next call; count 0 elsewhere). Time and
 * steps are the world's. */
pbf_status pbf_mpi_gather(pbf_mpi_domain *domain, int root, pbf_snapshot *out, pbf_error *err);

/* The same check as pbf_world_diagnose over every process: on failure, the diagnosis of the
 * lowest-ranked failing process (its particle index is that process's) and its rank in *rank
 * (-1 when every process is fine). */
pbf_diagnosis pbf_mpi_diagnose(pbf_mpi_domain *domain, double density_limit, int *rank);

typedef struct pbf_mpi_info {
    int ranks;                 /* processes */
    int rank;                  /* this one */
    int axis;                  /* slab axis */
    int rank_particles_min;    /* smallest and largest particle count of a process, at the end */
    int rank_particles_max;    /* of the last step (or at creation) */
    int slab_lo, slab_hi;      /* this process's cell layers along the axis: [lo, hi) */
    int64_t rebalances;        /* times the slabs were moved */
    double migrated_bytes;     /* bytes this process sent, summed over steps: migration and */
    double halo_bytes;         /* ghost copies after predict; halo updates after lambda, */
                               /* collide and velocity */
    double ghosts;             /* ghost particles this process received, summed over steps */
    double messages;           /* point-to-point messages it sent (migration counted once per
                                  destination; the collectives not counted), summed over steps */
    int64_t steps;             /* steps since creation */
} pbf_mpi_info;

pbf_mpi_info pbf_mpi_domain_info(const pbf_mpi_domain *domain);

#ifdef __cplusplus
}
#endif

#endif /* PBF_MPI_H */
