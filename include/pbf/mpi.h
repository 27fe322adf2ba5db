/*
 * pbf over MPI: a world split among the processes of an MPI communicator (libpbf_mpi, built
 * only where MPI is found; the library libpbf itself knows nothing of MPI).
 *
 *     MPI_Init(&argc, &argv);
 *     pbf_world *w = ...;                     // every process: the same definition, blocks, boxes
 *     pbf_mpi_domain *d = NULL;               // (or the same restored snapshot)
 *     pbf_mpi_domain_create(w, MPI_COMM_WORLD, NULL, &d, &err);  // each keeps its box
 *     for (...) pbf_world_step(w, dt, &err);  // collective: every process steps together
 *     pbf_snapshot s;
 *     pbf_mpi_gather(d, 0, &s);               // the whole state on process 0, in the order of a
 *                                             // single-process run
 *     pbf_mpi_domain_destroy(d);
 *
 * Decomposition: every process owns a box of whole grid cells. Recursive coordinate bisection
 * (the default): the grid is cut across the longest axis of its particles' bounding box at the
 * particle-count median (weighted by the processes on each side: any number of processes), and
 * each part again, so that every process holds about the same number of particles; or slabs
 * along one axis, their bounds chosen on particle counts. options.imbalance <= 0: boxes (slabs)
 * of equal width, never moved. Each process owns the particles whose grid cell (of the
 * predicted position, the cell the step sorts by) lies in its box, and receives every step, as
 * ghost particles, the particles of the cells around its box (one cell deep: a cell is at least
 * the kernel radius h wide), from up to 26 neighbours (the processes whose boxes lie within one
 * cell of its own). Exchanges in a step, the halo updates only between neighbours:
 *   after predict     migration of particles whose cell left the box, and the ghosts (every
 *                     SORTED field of the particle-field registry: positions, predicted
 *                     positions, velocities, id, cell)
 *   after lambda      lambda of the ghosts (delta p reads lambda_j)
 *   after collide     predicted positions of the ghosts (the next lambda and the velocity pass
 *                     read x*_j), every solver iteration
 *   after velocity    density and |omega| of the ghosts (XSPH and vorticity confinement read
 *                     them; the ghosts' velocities are recomputed exactly from x and x*)
 *   after vorticity   the ghosts are dropped
 *   statistics        combined over every process (MPI_Allreduce)
 * The boxes are recomputed at the start of a step when the largest process's particle count
 * exceeds the mean by more than options.imbalance.
 *
 * Same answer: ghosts enter every neighbour sum in the order of a single-process run (each
 * process's particles are kept in the global cell-sorted order; see src/mpi/domain.c), so a run
 * on any number of processes is bit-identical to the single-process run on the same device (on
 * the CPU device, one exception: a step in which a cell range of more than 4095 particles
 * switches the CPU backend from neighbour lists to range scans on some processes only).
 *
 * Devices: each process runs its own backend, the CPU (its threads) or one GPU
 * (pbf_mpi_device picks a device per process). On a GPU backend every exchange above is a host
 * round trip of exactly the rows of the field registry it moves (after the grid also the sorted
 * cells, from which the ghosts are found); the halos keep the single-process order there too, so
 * frames are byte-identical to the single-process run on the same device.
 *
 * Every call here is collective over the communicator.
 */
#ifndef PBF_MPI_H
#define PBF_MPI_H

#include <mpi.h>

#include "pbf/pbf.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pbf_mpi_domain pbf_mpi_domain;

typedef enum pbf_mpi_decomposition {
    PBF_MPI_BISECTION = 0, /* recursive coordinate bisection: boxes */
    PBF_MPI_SLABS = 1      /* slabs along one axis */
} pbf_mpi_decomposition;

typedef struct pbf_mpi_options {
    pbf_mpi_decomposition decomposition;
    int axis;         /* slabs: 0, 1, 2; -1 = the container's longest axis */
    double imbalance; /* rebalance when max count > (1 + imbalance) * mean; <= 0: boxes (slabs)
                         of equal width in cells, never rebalanced */
} pbf_mpi_options;

/* The device this process runs on, for the `device` every process was given (collective):
 * "opencl" and "cuda" (no index: the default device) become one device of that kind per process
 * on each node, the (local rank modulo count)-th of the node's devices (OpenCL: its GPUs if it
 * has any, else every device, the default device's order), the local rank being this process's
 * among those sharing its node (MPI_Comm_split_type, MPI_COMM_TYPE_SHARED). Any other string
 * ("cpu", a named device such as "opencl:0.1": every process on the node uses that one), or a
 * kind with no device here (whose opening then fails with its own message), is kept. Writes the
 * device string into out (size bytes, at least PBF_DEVICE_NAME_MAX). */
void pbf_mpi_device(MPI_Comm comm, const char *device, char *out, size_t size);

/* Bisection, imbalance 0.1 (slabs: the longest axis). */
pbf_mpi_options pbf_mpi_default_options(void);

/* "bisection", "slabs" (the scene key mpi_decomposition's values). */
const char *pbf_mpi_decomposition_name(pbf_mpi_decomposition kind);

/* Splits the world among the processes of `comm`. Every process must hold the same world (same
 * definition, boxes, particles in the same order: built from the same scene, or restored from
 * the same snapshot); each keeps the particles of its box. The world then belongs to the
 * domain until pbf_mpi_domain_destroy: step it on every process together, and neither add
 * particles to it nor restore a snapshot into it meanwhile (restore before creating the domain,
 * as `pbf run --resume` does). Fails (on every
 * process) for worlds that differ in particle count. */
pbf_status pbf_mpi_domain_create(pbf_world *world, MPI_Comm comm, const pbf_mpi_options *options,
                                 pbf_mpi_domain **out, pbf_error *err);

/* The same for a state spread over the processes (each may hold any part of it, or none; the
 * parts together hold every particle once), as `pbf run --resume` restores a checkpoint written
 * in pieces: each process restores its part into its world (pbf_world_restore, which takes any
 * count) and gives every particle's key, from pbf_mpi_domain_piece of the run that wrote it.
 * The memory order of the state is every part merged by ascending key (particles of equal key in
 * one part only, in its order): each part must be in ascending key order. key_is_cell: the keys
 * are grid cells (pbf_mpi_piece.key_is_cell). The particles are sent to the processes of a
 * decomposition computed over every part; the run then continues bit-identical to one that
 * was never interrupted. */
pbf_status pbf_mpi_domain_create_parts(pbf_world *world, MPI_Comm comm,
                                       const pbf_mpi_options *options, const uint32_t *key,
                                       int key_is_cell, pbf_mpi_domain **out, pbf_error *err);

/* The same for a world made of fluid blocks, built in parts: no process ever holds the whole
 * scene (pbf_mpi_domain_create needs every process to build all of it first: O(N) memory on
 * each). The world must hold no particle yet (its boxes added, the same on every process, as
 * the blocks). Each process creates the particles of a slab of grid cells along the grid's
 * longest axis, the slabs balanced by particle count, and their densities in a CPU world of its
 * own that also holds the cell plane on either side; the state is that of
 * pbf_world_add_fluid_block called for every block in turn in one process (ids, densities, the
 * memory order), bit for bit, and the run continues as after pbf_mpi_domain_create. Errors
 * name the block (fluid[i]); every process returns the same status. */
pbf_status pbf_mpi_domain_create_blocks(pbf_world *world, MPI_Comm comm,
                                        const pbf_mpi_options *options,
                                        const pbf_fluid_block *blocks, int nblocks,
                                        pbf_mpi_domain **out, pbf_error *err);

/* This process's part of the state between steps, for a checkpoint written by every process:
 * its particles (state.count of them; arrays owned by the world, valid until the next step) in
 * the process's memory order, and each one's key: the memory order of the whole state is every
 * process's part merged by key (pbf_mpi_domain_create_parts). */
typedef struct pbf_mpi_piece {
    pbf_snapshot state;
    const uint32_t *key;
    int key_is_cell; /* 1: the key is the grid cell of the last sort; 0 (before the first step):
                        the particle's place in the world the domain was made from */
} pbf_mpi_piece;
pbf_mpi_piece pbf_mpi_domain_piece(const pbf_mpi_domain *domain);

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
    pbf_mpi_decomposition decomposition;
    int axis;                  /* slabs: their axis; bisection: -1 */
    int rank_particles_min;    /* smallest and largest particle count of a process, at the end */
    int rank_particles_max;    /* of the last step (or at creation) */
    int box_lo[3], box_hi[3];  /* this process's grid cells: [lo, hi) per axis */
    int neighbours;            /* processes whose boxes lie within one cell of this one's */
    int64_t rebalances;        /* times the boxes were moved */
    double migrated_bytes;     /* bytes this process sent, summed over steps: migration and */
    double halo_bytes;         /* ghost copies after predict; halo updates after lambda, */
                               /* collide and velocity */
    double ghosts;             /* ghost particles this process received, summed over steps */
    double messages;           /* point-to-point messages it sent (migration counted once per
                                  destination; the collectives not counted), summed over steps */
    int64_t steps;             /* steps since creation */
    double device_bytes;       /* GPU backend: bytes the hooks moved between this process's
                                  device and the host (both ways; rows, halo entries and their
                                  indices, cells, ghost mask, the solves' measured rows),
                                  summed over steps; 0 on the CPU */
    double hook_seconds;       /* wall time this process spent in the decomposition's hooks
                                  (after the stages, and the ghost mask of the grid stage): its
                                  passes over the particles and its exchanges, waiting for
                                  other processes included; summed over steps */
    int capacity;              /* particles this process's arrays have room for now */
    int built_particles;       /* pbf_mpi_domain_create_blocks: particles this process created
                                  (its part and the cell plane on either side), else 0 */
} pbf_mpi_info;

pbf_mpi_info pbf_mpi_domain_info(const pbf_mpi_domain *domain);

#ifdef __cplusplus
}
#endif

#endif /* PBF_MPI_H */
