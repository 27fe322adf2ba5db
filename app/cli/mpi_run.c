/* `pbf run` over MPI processes (see mpi_run.h). */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>

#include "io/checkpoint.h"
#include "run/guard.h"
#include "cli/mpi_run.h"
#include "io/output.h"
#include "pbf/mpi.h"
#include "pbf/pbf.h"
#include "run/progress.h"
#include "io/scene.h"
#include "io/util.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
#define EXIT_UNSTABLE 3

int pbfapp_mpi_launched(void) {
    const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK",
                          "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; ++i)
        if (getenv(vars[i])) return 1;
    return 0;
}

typedef struct mpi_ctx {
    int rank, size;
    int root; /* rank == 0: writes files and prints */
} mpi_ctx;

/* The largest of every process's value (exit statuses: any failure wins). */
static int agree(int v) {
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return v;
}

static int exit_for(pbf_status st) {
    return st == PBF_OK ? 0 : st == PBF_ERR_INVALID_ARGUMENT || st == PBF_ERR_LIMIT ? EXIT_USAGE
                                                                                     : EXIT_RUNTIME;
}

/* Prints on process 0 only ("pbf: " + message). */
static void report(const mpi_ctx *c, const char *msg) {
    if (c->root) {
        fprintf(stderr, "pbf: %s\n", msg);
        fflush(stderr);
    }
}

/* Every process's message ("" for none) printed by process 0, in process order, as "pbf: MPI
 * process N: message": what a process other than 0 writes to stderr reaches the terminal only
 * through mpirun's forwarding, which may keep it after process 0's lines or lose it when the run
 * ends; process 0 prints what it receives. `root_too`: process 0's own message as well.
 * Collective. */
#define MPI_MESSAGE_BYTES 704
static void report_gathered(const mpi_ctx *c, const char *msg, int root_too) {
    char mine[MPI_MESSAGE_BYTES];
    snprintf(mine, sizeof mine, "%s", msg);
    char *all = c->root ? calloc((size_t)c->size, sizeof mine) : NULL;
    MPI_Gather(mine, (int)sizeof mine, MPI_CHAR, all, (int)sizeof mine, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    if (!c->root) return;
    if (!all) { /* out of memory: process 0's own message at least */
        if (root_too && msg[0]) fprintf(stderr, "pbf: MPI process 0: %s\n", msg);
        fflush(stderr);
        return;
    }
    for (int r = root_too ? 0 : 1; r < c->size; ++r) {
        const char *m = all + (size_t)r * sizeof mine;
        if (m[0]) fprintf(stderr, "pbf: MPI process %d: %s\n", r, m);
    }
    fflush(stderr);
    free(all);
}

/* Prints process 0's message, or when it has none, those of the processes that have one. */
static void report_any(const mpi_ctx *c, const char *msg) {
    int root_has = msg[0] != '\0';
    MPI_Bcast(&root_has, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (root_has) {
        if (c->root) fprintf(stderr, "pbf: %s\n", msg);
        fflush(stderr);
        return;
    }
    report_gathered(c, msg, 0);
}

/* A checkpoint written by every process (app/io/checkpoint.h: pieces and an index): each process
 * writes its piece; once every piece is in place process 0 syncs stats.jsonl and writes the
 * index, the checkpoint's commit, then deletes the previous checkpoint. Collective; returns the
 * exit status agreed by every process. */
static int save_checkpoint(const mpi_ctx *c, pbf_mpi_domain *dom, pbfapp_output *out,
                           const char *dir, int64_t frame, uint64_t hash, int64_t *last,
                           char *path, size_t path_size) {
    pbf_error err;
    memset(&err, 0, sizeof err);
    pbf_mpi_piece pc = pbf_mpi_domain_piece(dom);
    const int kind = pc.key_is_cell ? PBFAPP_KEY_CELL : PBFAPP_KEY_ORDER;
    uint64_t sum = 0;
    pbf_status st = pbfapp_checkpoint_piece_write(dir, &pc.state, pc.key, kind, frame, hash,
                                                  c->rank, c->size, &sum, &err);
    int rc = agree(exit_for(st));
    if (rc) {
        char msg[MPI_MESSAGE_BYTES] = "";
        if (st != PBF_OK)
            snprintf(msg, sizeof msg, "checkpoint of frame %lld: %s", (long long)frame,
                     err.message);
        report_gathered(c, msg, 1);
        return rc;
    }
    pbfapp_checkpoint_index ix;
    memset(&ix, 0, sizeof ix);
    int fail = 0;
    if (c->root) {
        ix.piece_count = malloc((size_t)c->size * sizeof *ix.piece_count);
        ix.piece_sum = malloc((size_t)c->size * sizeof *ix.piece_sum);
        fail = !ix.piece_count || !ix.piece_sum;
    }
    if (agree(fail)) {
        pbfapp_checkpoint_index_free(&ix);
        if (c->root) fprintf(stderr, "pbf: checkpoint of frame %lld: out of memory\n", (long long)frame);
        return EXIT_RUNTIME;
    }
    int count = pc.state.count;
    MPI_Gather(&count, 1, MPI_INT, ix.piece_count, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Gather(&sum, 1, MPI_UINT64_T, ix.piece_sum, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (c->root) {
        ix.frame = frame;
        ix.time = pc.state.time;
        ix.steps = pc.state.steps;
        ix.scene_hash = hash;
        ix.pieces = c->size;
        ix.key_kind = kind;
        for (int r = 0; r < c->size; ++r) ix.count += ix.piece_count[r];
        st = pbfapp_output_sync(out, &err);
        if (st == PBF_OK) st = pbfapp_checkpoint_index_write(dir, &ix, &err);
        if (st == PBF_OK && *last >= 0 && *last < frame) pbfapp_checkpoint_prune(dir, *last);
        if (st != PBF_OK)
            fprintf(stderr, "pbf: checkpoint of frame %lld: %s\n", (long long)frame, err.message);
    }
    pbfapp_checkpoint_index_free(&ix);
    rc = agree(exit_for(st));
    if (rc == 0) {
        *last = frame;
        pbfapp_checkpoint_path(path, path_size, dir, frame);
    }
    return rc;
}

/* Writes a frame, its stats line and (when due) a checkpoint: gathered on process 0 (mpi_output
 * = gather), or each process its piece and process 0 the index once every piece is there
 * (pieces; a checkpoint is still gathered). Collective; returns the exit status agreed by every
 * process. */
static int write_frame(const mpi_ctx *c, pbf_mpi_domain *dom, pbf_world *world, pbfapp_output *out,
                       const char *dir, int pieces, int frame, double ms, int64_t clamps,
                       int checkpoint, uint64_t hash, int64_t *last, char *path,
                       size_t path_size) {
    pbf_error err;
    memset(&err, 0, sizeof err);
    pbf_snapshot s;
    memset(&s, 0, sizeof s);
    pbf_status st = PBF_OK;
    if (pieces) {
        pbf_particles mine = pbf_world_particles(world); /* this process's particles */
        st = pbfapp_write_piece(dir, frame, c->rank, pbf_world_stats(world).time, &mine, &err);
        int rc = agree(exit_for(st));
        if (rc) {
            char msg[MPI_MESSAGE_BYTES] = "";
            if (st != PBF_OK) snprintf(msg, sizeof msg, "frame %d: %s", frame, err.message);
            report_gathered(c, msg, 1);
            return rc;
        }
    }
    if (!pieces) st = pbf_mpi_gather(dom, 0, &s, &err);
    if (st == PBF_OK && c->root) {
        pbf_stats stats = pbf_world_stats(world);
        stats.speed_clamps = clamps; /* the frame's, every step */
        pbf_mpi_info info = pbf_mpi_domain_info(dom);
        char extra[160];
        snprintf(extra, sizeof extra,
                 ",\"ranks\":%d,\"rank_particles_min\":%d,\"rank_particles_max\":%d", info.ranks,
                 info.rank_particles_min, info.rank_particles_max);
        pbfapp_output_stats_extra(out, extra);
        pbf_particles p;
        memset(&p, 0, sizeof p);
        p.count = s.count;
        p.x = s.x;
        p.y = s.y;
        p.z = s.z;
        p.vx = s.vx;
        p.vy = s.vy;
        p.vz = s.vz;
        p.density = s.density;
        p.id = s.id;
        st = pieces ? pbfapp_output_pieces(out, frame, stats.time, c->size, &err)
                    : pbfapp_output_frame(out, frame, stats.time, &p, &err);
        if (st == PBF_OK) st = pbfapp_output_stats(out, frame, &stats, ms, &err);
    }
    int rc = exit_for(st);
    if (rc) {
        char msg[700];
        snprintf(msg, sizeof msg, "frame %d: %s", frame, err.message);
        if (c->root) fprintf(stderr, "pbf: %s\n", msg);
    }
    rc = agree(rc);
    if (rc == 0 && checkpoint) rc = save_checkpoint(c, dom, out, dir, frame, hash, last, path, path_size);
    return rc;
}

/* The part of a checkpoint this process restores: nothing yet, the whole state (a version 1
 * checkpoint, read by every process), or some of its pieces merged, with their keys. */
typedef struct resume_part {
    int pieces;       /* 1: a checkpoint in pieces (key, key_is_cell valid) */
    uint32_t *key;
    int key_is_cell;
    int64_t frame;
} resume_part;

/* The index of the checkpoint of `frame` read on process 0 and sent to every process; *single
 * = 1 for a version 1 checkpoint. The message of a refusal is process 0's. */
static pbf_status bcast_index(const mpi_ctx *c, const char *path, uint64_t hash, int64_t particles,
                              int64_t frame, pbfapp_checkpoint_index *ix, int *single,
                              pbf_error *err) {
    pbf_status st = PBF_OK;
    memset(ix, 0, sizeof *ix);
    *single = 0;
    if (c->root) {
        st = pbfapp_checkpoint_index_read(path, ix, single, err);
        if (st == PBF_OK && !*single && ix->frame != frame)
            st = pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                             "%s: holds frame %lld, not the frame of its name", path,
                             (long long)ix->frame);
        else if (st == PBF_OK && !*single && ix->scene_hash != hash)
            st = pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                             "%s: written for another scene (scene hash %016llx; the scene of this "
                             "run, after --set overrides, hashes to %016llx); refused",
                             path, (unsigned long long)ix->scene_hash, (unsigned long long)hash);
        else if (st == PBF_OK && !*single && ix->count != particles)
            st = pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                             "%s: holds %d particles, the scene has %lld; refused", path,
                             ix->count, (long long)particles);
    }
    long long head[8] = {(long long)st, *single, ix->count, ix->frame, ix->steps, ix->pieces,
                         ix->key_kind, 0};
    double time = ix->time;
    MPI_Bcast(head, 8, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    MPI_Bcast(&time, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    st = (pbf_status)head[0];
    *single = (int)head[1];
    if (st != PBF_OK || *single) {
        if (c->root) pbfapp_checkpoint_index_free(ix);
        return st;
    }
    if (!c->root) {
        ix->count = (int)head[2];
        ix->frame = head[3];
        ix->steps = head[4];
        ix->pieces = (int)head[5];
        ix->key_kind = (int)head[6];
        ix->time = time;
        ix->scene_hash = hash;
        ix->piece_count = malloc((size_t)ix->pieces * sizeof *ix->piece_count);
        ix->piece_sum = malloc((size_t)ix->pieces * sizeof *ix->piece_sum);
    }
    if (agree(!ix->piece_count || !ix->piece_sum)) {
        pbfapp_checkpoint_index_free(ix);
        return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    MPI_Bcast(ix->piece_count, ix->pieces, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(ix->piece_sum, ix->pieces, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    return PBF_OK;
}

/* This process's pieces of the checkpoint (a contiguous share of them), merged by key and
 * restored into the world. */
static pbf_status restore_pieces(const mpi_ctx *c, const char *path,
                                 const pbfapp_checkpoint_index *ix, pbf_world *world,
                                 resume_part *part, pbf_error *err) {
    const int j0 = (int)((int64_t)ix->pieces * c->rank / c->size),
              j1 = (int)((int64_t)ix->pieces * (c->rank + 1) / c->size);
    pbfapp_keyed *pc = calloc((size_t)(j1 - j0) + 1, sizeof *pc);
    if (!pc) return pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    pbf_status st = PBF_OK;
    for (int j = j0; j < j1 && st == PBF_OK; ++j)
        st = pbfapp_checkpoint_piece_read(path, ix, j, &pc[j - j0], err);
    pbfapp_keyed mine;
    memset(&mine, 0, sizeof mine);
    if (st == PBF_OK) st = pbfapp_keyed_merge(pc, j1 - j0, &mine, err);
    for (int j = j0; j < j1; ++j) pbfapp_keyed_free(&pc[j - j0]);
    free(pc);
    mine.snapshot.time = ix->time;
    mine.snapshot.steps = ix->steps;
    if (st == PBF_OK) st = pbf_world_restore(world, &mine.snapshot, err);
    if (st == PBF_OK) {
        size_t bytes = (size_t)mine.snapshot.count * sizeof *part->key;
        part->key = malloc(bytes + 1);
        if (!part->key) st = pbfapp_fail(err, PBF_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
        else if (bytes) memcpy(part->key, mine.key, bytes);
    }
    pbfapp_keyed_free(&mine);
    part->pieces = 1;
    part->key_is_cell = ix->key_kind == PBFAPP_KEY_CELL;
    part->frame = ix->frame;
    return st;
}

/* --resume under MPI: the newest checkpoint of dir that every process could read, restored into
 * the world (all of it, or this process's pieces). A damaged checkpoint is reported (process 0
 * for the index, the process that read a damaged piece for the piece) and the previous one
 * tried. Collective. */
static pbf_status resume_state(const mpi_ctx *c, const char *dir, uint64_t hash, int64_t particles,
                               pbf_world *world, resume_part *part, char *found, size_t found_size,
                               pbf_error *err) {
    memset(part, 0, sizeof *part);
    int64_t *frames = NULL;
    size_t n = 0;
    pbf_status st = pbfapp_checkpoint_frames(dir, &frames, &n, err);
    if (agree(st != PBF_OK)) {
        free(frames);
        if (st != PBF_OK) return st;
        return pbfapp_fail(err, PBF_ERR_IO, "%s: cannot list the checkpoints on a process", dir);
    }
    long long nn = (long long)n;
    MPI_Bcast(&nn, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (nn == 0 || (long long)n != nn) {
        free(frames);
        return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT,
                           "%s: no checkpoint to resume from (no checkpoint_*.pbfck files; a run "
                           "writes them with --checkpoint-every N, and when stopped by "
                           "SIGINT/SIGTERM)",
                           dir);
    }
    for (size_t i = 0; i < n; ++i) {
        char path[4400];
        pbfapp_checkpoint_path(path, sizeof path, dir, frames[i]);
        pbfapp_checkpoint_index ix;
        int single = 0;
        pbf_error e1;
        memset(&e1, 0, sizeof e1);
        st = bcast_index(c, path, hash, particles, frames[i], &ix, &single, &e1);
        if (st == PBF_OK && single) { /* version 1: every process reads the whole state */
            pbfapp_checkpoint ck;
            st = pbfapp_checkpoint_read(path, &ck, &e1);
            if (st == PBF_OK && (ck.frame != frames[i] || ck.scene_hash != hash ||
                                 ck.count != particles))
                st = pbfapp_fail(&e1, PBF_ERR_INVALID_ARGUMENT,
                                 "%s: not the frame of its name, or of another scene", path);
            if (st == PBF_OK) st = pbf_world_restore(world, &ck.snapshot, &e1);
            part->frame = ck.frame;
            pbfapp_checkpoint_free(&ck);
            if (agree(st != PBF_OK) && st == PBF_OK) st = PBF_ERR_INVALID_ARGUMENT;
        } else if (st == PBF_OK) {
            st = restore_pieces(c, path, &ix, world, part, &e1);
            pbfapp_checkpoint_index_free(&ix);
            if (agree(st != PBF_OK)) {
                report_gathered(c, st != PBF_OK && !c->root ? e1.message : "", 0);
                if (st == PBF_OK) st = pbfapp_fail(&e1, PBF_ERR_INVALID_ARGUMENT,
                                                   "%s: a piece could not be read", path);
                free(part->key);
                memset(part, 0, sizeof *part);
            }
        }
        if (st == PBF_OK) {
            if (found) snprintf(found, found_size, "%s", path);
            if (i > 0 && c->root) {
                fprintf(stderr, "pbf: using %s (frame %lld), the newest valid checkpoint\n", path,
                        (long long)frames[i]);
                fflush(stderr);
            }
            free(frames);
            return PBF_OK;
        }
        if (c->root) {
            fprintf(stderr, "pbf: %s%s\n", e1.message,
                    i + 1 < n ? "; trying the previous checkpoint" : "");
            fflush(stderr);
        }
    }
    free(frames);
    return pbfapp_fail(err, PBF_ERR_INVALID_ARGUMENT, "%s: no valid checkpoint to resume from", dir);
}

static int run(const pbfapp_mpi_run_options *opt, const mpi_ctx *c) {
    pbf_error err;
    memset(&err, 0, sizeof err);
    char msg[1200];
    if (opt->render) {
        report(c, "--render and --video are not supported under mpirun yet: render the frames "
                  "afterwards with `pbf render DIR`");
        return EXIT_USAGE;
    }
    char scene_copy[4200];
    const char *scene_file = opt->scene;
    if (opt->resume) {
        struct stat sb;
        if (stat(opt->resume, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            snprintf(msg, sizeof msg, "--resume %s: not a directory (give the --out of a run)",
                     opt->resume);
            report(c, msg);
            return EXIT_USAGE;
        }
        snprintf(scene_copy, sizeof scene_copy, "%s/scene.json", opt->resume);
        scene_file = scene_copy;
    }
    pbfapp_scene scene;
    pbf_status st = pbfapp_scene_load(scene_file, opt->overrides, opt->override_count, &scene, &err);
    int rc = agree(exit_for(st));
    if (rc) {
        snprintf(msg, sizeof msg, "%s%s", opt->resume ? "--resume: " : "", err.message);
        report(c, msg);
        pbfapp_scene_free(&scene);
        return rc;
    }
    const pbfapp_run *run = &scene.run;
    if (run->mpi_output == PBFAPP_MPI_PIECES && run->format != PBFAPP_FORMAT_VTP) {
        snprintf(msg, sizeof msg,
                 "%.600s: mpi_output = \"pieces\" needs format = \"vtp\" (format = \"%s\"); "
                 "use mpi_output = \"gather\" for one file per frame",
                 scene_file, pbfapp_format_extension(run->format));
        report(c, msg);
        pbfapp_scene_free(&scene);
        return EXIT_USAGE;
    }
    const int pieces = run->mpi_output == PBFAPP_MPI_PIECES;
    if (run->adaptive) {
        report(c, "adaptive = 1 (--adaptive) is not supported under mpirun yet");
        pbfapp_scene_free(&scene);
        return EXIT_USAGE;
    }
    pbf_world *world = NULL;
    /* one device per process: "opencl" and "cuda" become this process's share of its node's
     * (scene.json keeps what the scene says) */
    char device[PBF_DEVICE_NAME_MAX], asked[PBF_DEVICE_NAME_MAX];
    snprintf(asked, sizeof asked, "%s", scene.def.device);
    pbf_mpi_device(MPI_COMM_WORLD, asked, device, sizeof device);
    snprintf(scene.def.device, sizeof scene.def.device, "%s", device);
    /* the world without its fluid: each process builds only its part of it (or restores its
     * part of a checkpoint), never the whole scene */
    /* max_particles reserves rows at creation: the whole scene's on every process; a process's
     * rows grow with its share instead (the scene was checked against the limit when loaded) */
    const int max_particles = scene.def.max_particles;
    scene.def.max_particles = 0;
    st = pbfapp_scene_create_world_empty(&scene, &world, &err);
    scene.def.max_particles = max_particles;
    snprintf(scene.def.device, sizeof scene.def.device, "%s", asked);
    rc = agree(exit_for(st));
    pbf_mpi_options mo = pbf_mpi_default_options();
    mo.imbalance = run->rank_imbalance;
    mo.decomposition = run->mpi_decomposition == 1 ? PBF_MPI_SLABS : PBF_MPI_BISECTION;
    pbf_mpi_domain *dom = NULL;
    if (rc == 0 && !opt->resume) { /* before any output: a bad block leaves the directory */
        st = pbf_mpi_domain_create_blocks(world, MPI_COMM_WORLD, &mo, scene.blocks,
                                          scene.block_count, &dom, &err);
        rc = exit_for(st); /* agreed inside */
    }
    if (rc) {
        if (st != PBF_OK && dom == NULL && !opt->resume)
            snprintf(msg, sizeof msg, "%s: %s", scene.path, err.message);
        else
            snprintf(msg, sizeof msg, "%s",
                     st != PBF_OK ? err.message : "creating the world failed on another process");
        report(c, msg);
        pbf_world_destroy(world);
        pbfapp_scene_free(&scene);
        return rc;
    }
    const uint64_t hash = pbfapp_scene_hash(&scene);
    int start_frame = 0;
    int64_t last_checkpoint = -1;
    char checkpoint_path[4400] = "";
    pbfapp_output *out = NULL;
    msg[0] = '\0';
    resume_part part;
    memset(&part, 0, sizeof part);
    if (opt->resume) {
        /* a checkpoint in pieces: each process reads some of them; version 1: every process
         * reads the whole state */
        st = resume_state(c, opt->out, hash, scene.particles, world, &part, checkpoint_path,
                          sizeof checkpoint_path, &err);
        if (st == PBF_OK) start_frame = (int)part.frame;
        if (st != PBF_OK) snprintf(msg, sizeof msg, "--resume: %s", err.message);
        last_checkpoint = start_frame;
        if (st == PBF_OK && c->root) {
            pbfapp_checkpoint_prune(opt->out, 0);
            st = pbfapp_stats_truncate(opt->out, start_frame, &err);
            if (st == PBF_ERR_INVALID_ARGUMENT) {
                fprintf(stderr, "pbf: warning: %s\n", err.message);
                st = PBF_OK;
            }
            if (st == PBF_OK) st = pbfapp_output_open_append(opt->out, run->format, &out, &err);
            if (st != PBF_OK) snprintf(msg, sizeof msg, "%s", err.message);
        }
    } else if (c->root) {
        int64_t newest = -1;
        int old_frames = 0;
        if (pbfapp_unfinished_run(opt->out, &newest, &old_frames)) {
            snprintf(msg, sizeof msg,
                     "%s holds an unfinished run (checkpoint of frame %lld of %d): resume it with "
                     "`pbf run --resume %s`, or delete %s/checkpoint_*.pbfck to start over",
                     opt->out, (long long)newest, old_frames, opt->out, opt->out);
            st = PBF_ERR_INVALID_ARGUMENT;
        } else {
            st = pbfapp_output_open(opt->out, run->format, &out, &err);
            if (st == PBF_OK) pbfapp_checkpoint_prune(opt->out, INT64_MAX);
            else snprintf(msg, sizeof msg, "%s", err.message);
        }
    }
    if (st == PBF_OK && c->root) {
        char scene_out[4200];
        snprintf(scene_out, sizeof scene_out, "%s/scene.json", opt->out);
        st = pbfapp_scene_write(&scene, scene_out, &err);
        if (st != PBF_OK) snprintf(msg, sizeof msg, "%s", err.message);
    }
    rc = agree(exit_for(st));
    if (rc == 0 && !dom) {
        st = part.pieces ? pbf_mpi_domain_create_parts(world, MPI_COMM_WORLD, &mo, part.key,
                                                       part.key_is_cell, &dom, &err)
                         : pbf_mpi_domain_create(world, MPI_COMM_WORLD, &mo, &dom, &err);
        rc = exit_for(st); /* agreed inside */
        if (rc) snprintf(msg, sizeof msg, "%s", err.message);
    }
    free(part.key);
    part.key = NULL;
    if (rc) {
        report_any(c, msg);
        pbfapp_output_close(out, NULL);
        pbf_mpi_domain_destroy(dom);
        pbf_world_destroy(world);
        pbfapp_scene_free(&scene);
        return rc;
    }

    const float dt = (float)(1.0 / ((double)run->fps * (double)run->substeps));
    pbf_stats stats = pbf_world_stats(world);
    pbf_mpi_info info = pbf_mpi_domain_info(dom);
    if (!opt->quiet && c->root) {
        if (opt->resume)
            printf("pbf: resuming %s from %s: frame %d of %d, t = %.4f s\n", opt->out,
                   checkpoint_path, start_frame, run->frames, stats.time);
        char how[64];
        if (info.decomposition == PBF_MPI_SLABS)
            snprintf(how, sizeof how, "slabs along %c", "xyz"[info.axis]);
        else
            snprintf(how, sizeof how, "recursive coordinate bisection");
        printf("pbf: %s: %s%s%d particles on %d MPI processes (%s, %s), %d frames at "
               "%g fps (%g s), %d substeps of %.4g ms, writing %s files to %s/\n",
               scene.path, scene.name, scene.name[0] ? ": " : "", stats.particles, c->size,
               asked[0] ? asked : "cpu", how,
               run->frames, (double)run->fps, (double)run->frames / (double)run->fps,
               run->substeps, 1000.0 * (double)dt,
               pieces ? "vtp pieces + pvtp" : pbfapp_format_extension(run->format), opt->out);
        fflush(stdout);
    }
    pbfapp_stop_install();
    pbfapp_guard guard; /* for the density limit and the failure message */
    pbfapp_guard_init(&guard, run->guard_density_error, 0);
    pbfapp_progress progress;
    pbfapp_progress_init(&progress, stderr, run->frames, opt->quiet || !c->root, -1);
    double t_start = pbfapp_now(), step_seconds = 0.0;
    int64_t steps = 0;
    int frames_done = start_frame;
    int64_t last_clamps = 0; /* the speed-limit cuts of the last frame */
    if (!opt->resume)
        rc = write_frame(c, dom, world, out, opt->out, pieces, 0, 0.0, 0, run->checkpoint_every > 0, hash,
                         &last_checkpoint, checkpoint_path, sizeof checkpoint_path);
    else if (start_frame >= run->frames && !opt->quiet && c->root)
        printf("pbf: the run is complete (frame %d of %d); raise --frames to continue it\n",
               start_frame, run->frames);
    for (int frame = start_frame + 1; frame <= run->frames && rc == 0; ++frame) {
        if (agree(pbfapp_stop_requested())) break;
        pbfapp_frame_report rep;
        memset(&rep, 0, sizeof rep);
        rep.diag.ok = 1;
        rep.factor = 1;
        rep.substeps = run->substeps;
        int bad_rank = -1;
        double t0 = pbfapp_now();
        for (int s = 0; s < run->substeps; ++s) {
            st = pbf_world_step(world, dt, &err); /* fails only on a bad dt: on every process */
            if (st != PBF_OK) break;
            ++rep.steps;
            rep.speed_clamps += pbf_world_stats(world).speed_clamps; /* over every process */
            pbf_diagnosis d = pbf_mpi_diagnose(dom, guard.density_limit, &bad_rank);
            if (!d.ok) {
                rep.diag = d;
                rep.step = pbf_world_stats(world).steps;
                rep.substep = s + 1;
                break;
            }
        }
        rep.step_seconds = pbfapp_now() - t0;
        steps += rep.steps;
        step_seconds += rep.step_seconds;
        if (st != PBF_OK) {
            pbfapp_progress_finish(&progress);
            snprintf(msg, sizeof msg, "frame %d: simulation step failed: %s", frame, err.message);
            report(c, msg);
            rc = EXIT_RUNTIME;
            break;
        }
        if (!rep.diag.ok) {
            char what[700];
            pbfapp_guard_describe(&guard, &rep, frame, what, sizeof what);
            pbfapp_progress_finish(&progress);
            snprintf(msg, sizeof msg, "%s (on MPI process %d of %d)", what, bad_rank, c->size);
            report(c, msg);
            if (last_checkpoint >= 0)
                snprintf(msg, sizeof msg,
                         "last good checkpoint: %s (frame %lld); after a fix resume with `pbf run "
                         "--resume %s`",
                         checkpoint_path, (long long)last_checkpoint, opt->out);
            else
                snprintf(msg, sizeof msg, "no checkpoint to resume from (--checkpoint-every N "
                                          "writes them); try more substeps or solver_iterations");
            report(c, msg);
            rc = EXIT_UNSTABLE;
            break;
        }
        double ms = 1000.0 * rep.step_seconds;
        char warning[700];
        if (pbfapp_guard_speed_warning(&guard, world, frame, &rep, dt, warning, sizeof warning) &&
            c->root) {
            pbfapp_progress_finish(&progress);
            fprintf(stderr, "pbf: warning: %s\n", warning);
        }
        int ck = run->checkpoint_every > 0 &&
                 (frame % run->checkpoint_every == 0 || frame == run->frames);
        last_clamps = rep.speed_clamps;
        rc = write_frame(c, dom, world, out, opt->out, pieces, frame, ms, last_clamps, ck, hash,
                         &last_checkpoint, checkpoint_path, sizeof checkpoint_path);
        if (rc) {
            pbfapp_progress_finish(&progress);
            break;
        }
        frames_done = frame;
        stats = pbf_world_stats(world);
        pbfapp_progress_update(&progress, frame, &stats,
                               rep.steps > 0 ? ms / (double)rep.steps : 0.0);
    }
    pbfapp_progress_finish(&progress);
    int sig = agree(pbfapp_stop_requested());
    if (rc == 0 && sig) {
        /* SIGINT / SIGTERM on any process: the frame was finished everywhere; checkpoint it */
        if (last_checkpoint != frames_done)
            rc = write_frame(c, dom, world, out, opt->out, pieces, frames_done, 0.0, last_clamps, 1, hash,
                             &last_checkpoint, checkpoint_path, sizeof checkpoint_path);
        if (rc == 0) {
            snprintf(msg, sizeof msg,
                     "stopped by %s after frame %d of %d; checkpoint %s; resume with: mpirun ... "
                     "pbf run --resume %s",
                     sig == SIGINT ? "SIGINT" : "SIGTERM", frames_done, run->frames,
                     checkpoint_path, opt->out);
            report(c, msg);
            rc = 128 + sig;
        }
    }
    pbfapp_guard_free(&guard);
    if (c->root) {
        pbf_status cst = pbfapp_output_close(out, &err);
        if (cst != PBF_OK && rc == 0) {
            fprintf(stderr, "pbf: %s\n", err.message);
            rc = EXIT_RUNTIME;
        }
    }
    rc = agree(rc);
    /* traffic over every process: bytes sent per particle and step */
    info = pbf_mpi_domain_info(dom);
    double bytes[5] = {info.migrated_bytes, info.halo_bytes, info.ghosts, info.messages,
                       info.device_bytes};
    MPI_Allreduce(MPI_IN_PLACE, bytes, 5, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    int max_nbr = info.neighbours;
    MPI_Allreduce(MPI_IN_PLACE, &max_nbr, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    double hook_s = info.hook_seconds; /* the most of any process */
    MPI_Allreduce(MPI_IN_PLACE, &hook_s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int room[2] = {info.capacity, info.built_particles}; /* the most of any process */
    MPI_Allreduce(MPI_IN_PLACE, room, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    double wall = pbfapp_now() - t_start;
    if (rc == 0 && !opt->quiet && c->root) {
        char wall_s[32];
        pbfapp_format_duration(wall_s, sizeof wall_s, wall);
        double ps = (double)stats.particles * (double)(info.steps > 0 ? info.steps : 1);
        printf("pbf: done: %d frames, %d particles, %.3f s simulated in %s wall; mean %.3f "
               "ms/step over %lld steps; final density error avg %.3f%% max %.3f%%; output in "
               "%s/\n",
               frames_done, stats.particles, stats.time, wall_s,
               steps > 0 ? 1000.0 * step_seconds / (double)steps : 0.0, (long long)steps,
               stats.density_error_avg, stats.density_error_max, opt->out);
        double pst = (double)c->size * (double)(info.steps > 0 ? info.steps : 1);
        printf("pbf: MPI: %d processes (%s), particles per process %d..%d, %lld rebalances, up "
               "to %d neighbours; per process and step %.0f ghosts, %.1f messages; sent per "
               "particle and step: %.2f B migration and ghosts, %.2f B halo updates",
               c->size, pbf_mpi_decomposition_name(info.decomposition), info.rank_particles_min,
               info.rank_particles_max, (long long)info.rebalances, max_nbr, bytes[2] / pst,
               bytes[3] / pst, bytes[0] / ps, bytes[1] / ps);
        if (bytes[4] > 0.0) printf("; %.1f B between device and host", bytes[4] / ps);
        printf("; decomposition %.2f ms per step (its passes and exchanges, waits included; the "
               "most of a process)",
               info.steps > 0 ? 1000.0 * hook_s / (double)info.steps : 0.0);
        printf("; memory: room for at most %d particles on a process", room[0]);
        if (room[1] > 0) printf(", %d built there at the start", room[1]);
        printf("\n");
    }
    pbf_mpi_domain_destroy(dom);
    pbf_world_destroy(world);
    pbfapp_scene_free(&scene);
    return rc;
}

int pbfapp_mpi_run(const pbfapp_mpi_run_options *opt) {
    int provided = 0, inited = 0;
    MPI_Initialized(&inited);
    if (!inited) MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
    mpi_ctx c;
    MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c.size);
    c.root = c.rank == 0;
    int rc = run(opt, &c);
    fflush(stdout);
    fflush(stderr);
    if (!inited) MPI_Finalize();
    return rc;
}
