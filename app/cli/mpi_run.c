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
#include "run/run_driver.h"
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

/* Writes a frame, its stats line, its mesh (`mesh`: process 0's mesher meshes the frame gathered
 * on it) and (when due) a checkpoint: gathered on process 0 (mpi_output = gather), or each
 * process its piece and process 0 the index once every piece is there (pieces; a checkpoint is
 * still gathered). Collective; returns the exit status agreed by every process. */
static int write_frame(const mpi_ctx *c, pbf_mpi_domain *dom, pbf_world *world, pbfapp_output *out,
                       const char *dir, int pieces, int mesh, pbfapp_mesher *mesher, int frame,
                       double ms, int64_t clamps, int checkpoint, uint64_t hash, int64_t *last,
                       char *path, size_t path_size) {
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
    if (!pieces || mesh) st = pbf_mpi_gather(dom, 0, &s, &err);
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
        if (st == PBF_OK && mesher)
            st = pbfapp_mesher_frame(mesher, frame, s.x, s.y, s.z, s.count, &err);
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
                             "%s: written for another scene (its scene hash %016llx, this "
                             "run's %016llx)",
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

/* An MPI run from its scene to its summary: what it opened, for its frame sinks. */
typedef struct mpi_run_state {
    const mpi_ctx *c;
    const pbfapp_mpi_run_options *opt;
    pbfapp_scene scene;
    pbf_world *world;
    pbf_mpi_domain *dom;
    pbf_mpi_options mo;
    pbfapp_output *out;               /* process 0's */
    pbfapp_mesher *mesher;            /* --mesh: process 0's */
    int mesh;                         /* --mesh given (every process) */
    char asked[PBF_DEVICE_NAME_MAX];  /* the scene's device */
    int pieces;                       /* mpi_output = pieces */
    uint64_t hash;
    int start_frame;
    int resumed; /* continued from a checkpoint (--resume found one) */
    int64_t last_checkpoint;
    char checkpoint_path[4400];
    float dt;
    int bad_rank;        /* the process of a failed diagnosis */
    int64_t last_clamps; /* the speed-limit cuts of the last frame */
    char msg[1200];
} mpi_run_state;

/* The scene and this process's world: the world without its fluid, each process building only
 * its part of it (a fresh run: its domain created from the scene's blocks; a resumed one: later,
 * from the checkpoint). -1 or the exit status (agreed by every process). */
static int load_world(mpi_run_state *s, pbf_error *err) {
    const mpi_ctx *c = s->c;
    const pbfapp_mpi_run_options *opt = s->opt;
    char *msg = s->msg;
    const size_t msg_size = sizeof s->msg;
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
            snprintf(msg, msg_size, "--resume %s: not a directory (give the --out of a run)",
                     opt->resume);
            report(c, msg);
            return EXIT_USAGE;
        }
        snprintf(scene_copy, sizeof scene_copy, "%s/scene.json", opt->resume);
        scene_file = scene_copy;
    }
    pbfapp_scene *scene = &s->scene;
    pbf_status st = pbfapp_scene_load(scene_file, opt->overrides, opt->override_count, scene, err);
    int rc = agree(exit_for(st));
    if (rc) {
        snprintf(msg, msg_size, "%s%s", opt->resume ? "--resume: " : "", err->message);
        report(c, msg);
        pbfapp_scene_free(scene);
        return rc;
    }
    const pbfapp_run *run = &scene->run;
    if (run->mpi_output == PBFAPP_MPI_PIECES && run->format != PBFAPP_FORMAT_VTP) {
        snprintf(msg, msg_size,
                 "%.600s: mpi_output = \"pieces\" needs format = \"vtp\" (format = \"%s\"); "
                 "use mpi_output = \"gather\" for one file per frame",
                 scene_file, pbfapp_format_extension(run->format));
        report(c, msg);
        pbfapp_scene_free(scene);
        return EXIT_USAGE;
    }
    s->pieces = run->mpi_output == PBFAPP_MPI_PIECES;
    if (run->adaptive) {
        report(c, "adaptive = 1 (--adaptive) is not supported under mpirun yet");
        pbfapp_scene_free(scene);
        return EXIT_USAGE;
    }
    /* one device per process: "opencl" and "cuda" become this process's share of its node's
     * (scene.json keeps what the scene says) */
    char device[PBF_DEVICE_NAME_MAX];
    snprintf(s->asked, sizeof s->asked, "%s", scene->def.device);
    pbf_mpi_device(MPI_COMM_WORLD, s->asked, device, sizeof device);
    snprintf(scene->def.device, sizeof scene->def.device, "%s", device);
    /* the world without its fluid: each process builds only its part of it (or restores its
     * part of a checkpoint), never the whole scene */
    /* max_particles reserves rows at creation: the whole scene's on every process; a process's
     * rows grow with its share instead (the scene was checked against the limit when loaded) */
    const int max_particles = scene->def.max_particles;
    scene->def.max_particles = 0;
    st = pbfapp_scene_create_world_empty(scene, &s->world, err);
    scene->def.max_particles = max_particles;
    snprintf(scene->def.device, sizeof scene->def.device, "%s", s->asked);
    rc = agree(exit_for(st));
    s->mo = pbf_mpi_default_options();
    s->mo.imbalance = run->rank_imbalance;
    s->mo.decomposition = run->mpi_decomposition == 1 ? PBF_MPI_SLABS : PBF_MPI_BISECTION;
    /* --resume: from a checkpoint, from frame 0 when there is none yet, or nothing to do
     * (decided by process 0) */
    int plan = PBFAPP_RESUME_CHECKPOINT;
    if (rc == 0 && opt->resume) {
        if (c->root) plan = pbfapp_resume_plan(opt->out, run->frames, msg, msg_size, err);
        if (c->root && plan < 0) snprintf(msg, msg_size, "--resume: %s", err->message);
        if (c->root && plan == PBFAPP_RESUME_CHECKPOINT &&
            pbfapp_resume_locked(opt->out, scene, msg, msg_size) > 0)
            plan = -2;
        MPI_Bcast(&plan, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (plan == PBFAPP_RESUME_START_OVER) report(c, msg);
        if (plan == PBFAPP_RESUME_COMPLETE && c->root && !opt->quiet) printf("pbf: %s\n", msg);
        rc = plan == -1 ? EXIT_RUNTIME : plan == -2 ? EXIT_USAGE : 0;
        if (rc) report(c, msg);
        if (plan == PBFAPP_RESUME_COMPLETE || rc) {
            pbf_world_destroy(s->world);
            pbfapp_scene_free(scene);
            return rc;
        }
        s->resumed = plan == PBFAPP_RESUME_CHECKPOINT;
    }
    if (rc == 0 && !s->resumed) { /* before any output: a bad block leaves the directory */
        st = pbf_mpi_domain_create_blocks(s->world, MPI_COMM_WORLD, &s->mo, scene->blocks,
                                          scene->block_count, &s->dom, err);
        rc = exit_for(st); /* agreed inside */
    }
    if (rc) {
        if (st != PBF_OK && s->dom == NULL && !s->resumed)
            snprintf(msg, msg_size, "%s: %s", scene->path, err->message);
        else
            snprintf(msg, msg_size, "%s",
                     st != PBF_OK ? err->message : "creating the world failed on another process");
        report(c, msg);
        pbf_world_destroy(s->world);
        pbfapp_scene_free(scene);
        return rc;
    }
    s->hash = pbfapp_scene_hash(scene);
    return -1;
}

/* --resume: this process's part of the newest valid checkpoint, stats.jsonl cut to it and the
 * output opened for appending; a fresh run: the output opened (an unfinished run's directory
 * refused); scene.json; then the domain of a resumed run. -1 or the exit status. */
static int open_output(mpi_run_state *s, pbf_error *err) {
    const mpi_ctx *c = s->c;
    const pbfapp_mpi_run_options *opt = s->opt;
    const pbfapp_run *run = &s->scene.run;
    char *msg = s->msg;
    const size_t msg_size = sizeof s->msg;
    pbf_status st = PBF_OK;
    msg[0] = '\0';
    resume_part part;
    memset(&part, 0, sizeof part);
    if (s->resumed) {
        /* a checkpoint in pieces: each process reads some of them; version 1: every process
         * reads the whole state */
        st = resume_state(c, opt->out, s->hash, s->scene.particles, s->world, &part,
                          s->checkpoint_path, sizeof s->checkpoint_path, err);
        if (st == PBF_OK) s->start_frame = (int)part.frame;
        if (st != PBF_OK) snprintf(msg, msg_size, "--resume: %s", err->message);
        s->last_checkpoint = s->start_frame;
        if (st == PBF_OK && c->root) {
            pbfapp_checkpoint_prune(opt->out, 0);
            st = pbfapp_stats_truncate(opt->out, s->start_frame, err);
            if (st == PBF_ERR_INVALID_ARGUMENT) {
                fprintf(stderr, "pbf: warning: %s\n", err->message);
                st = PBF_OK;
            }
            if (st == PBF_OK) st = pbfapp_output_open_append(opt->out, run->format, &s->out, err);
            if (st != PBF_OK) snprintf(msg, msg_size, "%s", err->message);
        }
    } else if (c->root) {
        int64_t newest = -1;
        int old_frames = 0;
        if (pbfapp_unfinished_run(opt->out, &newest, &old_frames)) {
            snprintf(msg, msg_size,
                     "%s holds an unfinished run (checkpoint of frame %lld of %d): resume it with "
                     "`pbf run --resume %s`, or delete %s/checkpoint_*.pbfck to start over",
                     opt->out, (long long)newest, old_frames, opt->out, opt->out);
            st = PBF_ERR_INVALID_ARGUMENT;
        } else {
            st = pbfapp_output_open(opt->out, run->format, &s->out, err);
            if (st == PBF_OK) pbfapp_checkpoint_prune(opt->out, INT64_MAX);
            else snprintf(msg, msg_size, "%s", err->message);
        }
    }
    if (st == PBF_OK && c->root) {
        char scene_out[4200];
        snprintf(scene_out, sizeof scene_out, "%s/scene.json", opt->out);
        st = pbfapp_scene_write(&s->scene, scene_out, err);
        if (st != PBF_OK) snprintf(msg, msg_size, "%s", err->message);
    }
    int rc = agree(exit_for(st));
    if (rc == 0 && !s->dom) {
        st = part.pieces ? pbf_mpi_domain_create_parts(s->world, MPI_COMM_WORLD, &s->mo, part.key,
                                                       part.key_is_cell, &s->dom, err)
                         : pbf_mpi_domain_create(s->world, MPI_COMM_WORLD, &s->mo, &s->dom, err);
        rc = exit_for(st); /* agreed inside */
        if (rc) snprintf(msg, msg_size, "%s", err->message);
    }
    free(part.key);
    part.key = NULL;
    if (rc) {
        report_any(c, msg);
        pbfapp_output_close(s->out, NULL);
        pbf_mpi_domain_destroy(s->dom);
        pbf_world_destroy(s->world);
        pbfapp_scene_free(&s->scene);
        return rc;
    }
    return -1;
}

/* --mesh: process 0's mesher (app/render/mesh.c), for the frames gathered on it. -1 or the exit
 * status (agreed by every process). */
static int open_mesher(mpi_run_state *s, pbf_error *err) {
    const mpi_ctx *c = s->c;
    s->mesh = s->opt->mesh && s->opt->mesh->enabled;
    if (!s->mesh) return -1;
    pbf_status st = PBF_OK;
    if (c->root) st = pbfapp_mesher_open(&s->scene, s->opt->mesh, s->opt->out, &s->mesher, err);
    if (st != PBF_OK) {
        fprintf(stderr, "pbf: --mesh: %s\n", err->message);
        fflush(stderr);
    }
    int rc = agree(st == PBF_OK ? 0 : st == PBF_ERR_INVALID_ARGUMENT ? EXIT_USAGE : EXIT_RUNTIME);
    if (rc == 0) return -1;
    pbfapp_mesher_close(s->mesher);
    pbfapp_output_close(s->out, NULL);
    pbf_mpi_domain_destroy(s->dom);
    pbf_world_destroy(s->world);
    pbfapp_scene_free(&s->scene);
    return rc;
}

/* The header line of the run (and of a resumed one), on process 0. */
static void print_header(const mpi_run_state *s) {
    const pbfapp_mpi_run_options *opt = s->opt;
    const pbfapp_run *run = &s->scene.run;
    pbf_stats stats = pbf_world_stats(s->world);
    pbf_mpi_info info = pbf_mpi_domain_info(s->dom);
    if (s->resumed)
        printf("pbf: resuming %s from %s: frame %d of %d, t = %.4f s\n", opt->out,
               s->checkpoint_path, s->start_frame, run->frames, stats.time);
    char how[64];
    if (info.decomposition == PBF_MPI_SLABS)
        snprintf(how, sizeof how, "slabs along %c", "xyz"[info.axis]);
    else
        snprintf(how, sizeof how, "recursive coordinate bisection");
    printf("pbf: %s: %s%s%d particles on %d MPI processes (%s, %s), %d frames at "
           "%g fps (%g s), %d substeps of %.4g ms, writing %s files to %s/\n",
           s->scene.path, s->scene.name, s->scene.name[0] ? ": " : "", stats.particles,
           s->c->size, s->asked[0] ? s->asked : "cpu", how, run->frames, (double)run->fps,
           (double)run->frames / (double)run->fps, run->substeps, 1000.0 * (double)s->dt,
           s->pieces ? "vtp pieces + pvtp" : pbfapp_format_extension(run->format), opt->out);
    fflush(stdout);
}

/* ---- the frame sinks of the run driver (app/run/run_driver.h) ------------------------------- */

/* One frame of collective steps, the state diagnosed over every process after each. */
static pbf_status mpi_step(void *ctx, pbfapp_run_driver *d, int frame, pbfapp_frame_report *rep,
                           double *speed_dt, pbf_error *err) {
    mpi_run_state *s = ctx;
    (void)frame;
    memset(rep, 0, sizeof *rep);
    rep->diag.ok = 1;
    rep->factor = 1;
    rep->substeps = d->substeps;
    s->bad_rank = -1;
    pbf_status st = PBF_OK;
    double t0 = pbfapp_now();
    for (int k = 0; k < d->substeps; ++k) {
        st = pbf_world_step(s->world, s->dt, err); /* fails only on a bad dt: on every process */
        if (st != PBF_OK) break;
        ++rep->steps;
        rep->speed_clamps += pbf_world_stats(s->world).speed_clamps; /* over every process */
        pbf_diagnosis dg = pbf_mpi_diagnose(s->dom, d->guard->density_limit, &s->bad_rank);
        if (!dg.ok) {
            rep->diag = dg;
            rep->step = pbf_world_stats(s->world).steps;
            rep->substep = k + 1;
            break;
        }
    }
    rep->step_seconds = pbfapp_now() - t0;
    *speed_dt = s->dt;
    return st;
}

static int mpi_stop(void *ctx) {
    (void)ctx;
    return agree(pbfapp_stop_requested());
}

static int mpi_frame(void *ctx, pbfapp_run_driver *d, const pbfapp_run_frame *f) {
    mpi_run_state *s = ctx;
    (void)d;
    if (f->report) s->last_clamps = f->report->speed_clamps;
    return write_frame(s->c, s->dom, s->world, s->out, s->opt->out, s->pieces, s->mesh, s->mesher,
                       f->frame, f->ms, s->last_clamps, f->checkpoint, s->hash, &s->last_checkpoint,
                       s->checkpoint_path, sizeof s->checkpoint_path);
}

/* SIGINT / SIGTERM on any process: the frame was finished everywhere; checkpoint it. */
static int mpi_stopped(void *ctx, pbfapp_run_driver *d, int sig) {
    mpi_run_state *s = ctx;
    int rc = 0;
    if (s->last_checkpoint != d->frames_done)
        rc = write_frame(s->c, s->dom, s->world, s->out, s->opt->out, s->pieces, 0, NULL,
                         d->frames_done, 0.0, s->last_clamps, 1, s->hash, &s->last_checkpoint,
                         s->checkpoint_path, sizeof s->checkpoint_path);
    if (rc == 0) {
        char line[4800];
        snprintf(line, sizeof line,
                 "stopped by %s after frame %d of %d; checkpoint %s; resume with: mpirun ... "
                 "pbf run --resume %s",
                 sig == SIGINT ? "SIGINT" : "SIGTERM", d->frames_done, d->frames,
                 s->checkpoint_path, s->opt->out);
        report(s->c, line);
        rc = 128 + sig;
    }
    return rc;
}

static void mpi_step_failed(void *ctx, int frame, const pbf_error *err) {
    mpi_run_state *s = ctx;
    snprintf(s->msg, sizeof s->msg, "frame %d: simulation step failed: %s", frame, err->message);
    report(s->c, s->msg);
}

static void mpi_unstable(void *ctx, pbfapp_run_driver *d, int frame, const pbfapp_frame_report *r,
                         const char *what) {
    mpi_run_state *s = ctx;
    (void)d;
    (void)frame;
    (void)r;
    snprintf(s->msg, sizeof s->msg, "%s (on MPI process %d of %d)", what, s->bad_rank, s->c->size);
    report(s->c, s->msg);
    char line[4800];
    if (s->last_checkpoint >= 0)
        snprintf(line, sizeof line,
                 "last good checkpoint: %s (frame %lld); after a fix resume with `pbf run "
                 "--resume %s`",
                 s->checkpoint_path, (long long)s->last_checkpoint, s->opt->out);
    else
        snprintf(line, sizeof line, "no checkpoint to resume from (--checkpoint-every N "
                                    "writes them); try more substeps or solver_iterations");
    report(s->c, line);
}

static void mpi_warning(void *ctx, const char *text) {
    const mpi_run_state *s = ctx;
    if (s->c->root) fprintf(stderr, "pbf: warning: %s\n", text);
}

/* The summary on process 0: the run's, then the traffic over every process (bytes sent per
 * particle and step). Collective. */
static void print_summary(const mpi_run_state *s, const pbfapp_run_driver *d, int rc,
                          double wall) {
    const mpi_ctx *c = s->c;
    pbf_mpi_info info = pbf_mpi_domain_info(s->dom);
    double bytes[5] = {info.migrated_bytes, info.halo_bytes, info.ghosts, info.messages,
                       info.device_bytes};
    MPI_Allreduce(MPI_IN_PLACE, bytes, 5, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    int max_nbr = info.neighbours;
    MPI_Allreduce(MPI_IN_PLACE, &max_nbr, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    double hook_s = info.hook_seconds; /* the most of any process */
    MPI_Allreduce(MPI_IN_PLACE, &hook_s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int room[2] = {info.capacity, info.built_particles}; /* the most of any process */
    MPI_Allreduce(MPI_IN_PLACE, room, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rc != 0 || s->opt->quiet || !c->root) return;
    const pbf_stats *stats = &d->stats;
    char wall_s[32];
    pbfapp_format_duration(wall_s, sizeof wall_s, wall);
    double ps = (double)stats->particles * (double)(info.steps > 0 ? info.steps : 1);
    printf("pbf: done: %d frames, %d particles, %.3f s simulated in %s wall; mean %.3f "
           "ms/step over %lld steps; final density error avg %.3f%% max %.3f%%; output in "
           "%s/\n",
           d->frames_done, stats->particles, stats->time, wall_s,
           d->steps > 0 ? 1000.0 * d->step_seconds / (double)d->steps : 0.0,
           (long long)d->steps, stats->density_error_avg, stats->density_error_max, s->opt->out);
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

static int run(const pbfapp_mpi_run_options *opt, const mpi_ctx *c) {
    pbf_error err;
    memset(&err, 0, sizeof err);
    mpi_run_state s;
    memset(&s, 0, sizeof s);
    s.c = c;
    s.opt = opt;
    s.last_checkpoint = -1;
    int rc = load_world(&s, &err);
    if (rc < 0) rc = open_output(&s, &err);
    if (rc < 0) rc = open_mesher(&s, &err);
    if (rc >= 0) return rc;
    const pbfapp_run *run = &s.scene.run;
    s.dt = (float)(1.0 / ((double)run->fps * (double)run->substeps));
    if (!opt->quiet && c->root) print_header(&s);
    pbfapp_stop_install();
    pbfapp_guard guard; /* for the density limit and the failure message */
    pbfapp_guard_init(&guard, run->guard_density_error, 0);
    pbfapp_progress progress;
    pbfapp_progress_init(&progress, stderr, run->frames, opt->quiet || !c->root, -1);
    double t_start = pbfapp_now();
    if (s.resumed && s.start_frame >= run->frames && !opt->quiet && c->root)
        printf("pbf: the run is complete (frame %d of %d); raise --frames to continue it\n",
               s.start_frame, run->frames);
    pbfapp_run_driver d;
    pbfapp_run_driver_init(&d, s.world, run, s.start_frame, s.resumed, &guard, &progress);
    d.sinks.ctx = &s;
    d.sinks.step = mpi_step;
    d.sinks.stop = mpi_stop;
    d.sinks.frame = mpi_frame;
    d.sinks.stopped = mpi_stopped;
    d.sinks.step_failed = mpi_step_failed;
    d.sinks.unstable = mpi_unstable;
    d.sinks.warning = mpi_warning;
    rc = pbfapp_run_frames(&d);
    pbfapp_guard_free(&guard);
    pbfapp_mesher_close(s.mesher);
    if (c->root) {
        pbf_status cst = pbfapp_output_close(s.out, &err);
        if (cst != PBF_OK && rc == 0) {
            fprintf(stderr, "pbf: %s\n", err.message);
            rc = EXIT_RUNTIME;
        }
    }
    rc = agree(rc);
    print_summary(&s, &d, rc, pbfapp_now() - t_start);
    pbf_mpi_domain_destroy(s.dom);
    pbf_world_destroy(s.world);
    pbfapp_scene_free(&s.scene);
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
