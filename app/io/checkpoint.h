/*
 * Checkpoints: the complete state of a run in one file, so that a run killed at any moment can be
 * resumed and end bit-identical to an uninterrupted one (`pbf run --checkpoint-every N`,
 * `pbf run --resume DIR`).
 *
 * Files in the output directory DIR:
 *   scene.json               the effective scene (file + --set overrides; pbfapp_scene_write),
 *                            written at the start of every run; --resume DIR reads the scene
 *                            from it
 *   checkpoint_00040.pbfck   the state after frame 40 (the last two are kept)
 *
 * Checkpoint format, version 1. Every field is in the byte order of the machine that wrote it; the
 * marker tells a reader of the other byte order to refuse the file.
 *
 *   offset size
 *        0    8  magic "PBFCKPT\0"
 *        8    4  uint32 format version (1)
 *       12    4  uint32 byte-order marker 0x01020304
 *       16    4  uint32 header size in bytes (64)
 *       20    4  int32  particle count n
 *       24    8  int64  frame index (the frame file written last before the checkpoint)
 *       32    8  double simulated time, s
 *       40    8  int64  solver steps taken
 *       48    8  uint64 scene hash (pbfapp_scene_hash of the effective scene)
 *       56    8  uint64 reserved (0)
 *       64  4n   float  x[n], then y, z, vx, vy, vz, density (7 arrays of 4n bytes each)
 *   64+28n  4n   uint32 id[n]
 *   64+32n   8   uint64 checksum: FNV-1a 64 of every byte before it
 *
 * Version 3: version 1 with, after id[n], PBF's multipliers lambda[n] (float), which its warm
 * start carries from step to step (pbf_snapshot.lambda; lambda_warm_start != 0 and 3 or more
 * iterations a step); the checksum follows them (64+36n). Written only when the snapshot has them, so that every other run's
 * checkpoint stays version 1.
 *
 * The arrays are pbf_snapshot's, in the world's memory order (which is part of the state): one
 * array per component of each field of the library's table pbf_particle_fields(), in table order
 * (app/io/particle_fields.h), which today gives the layout above. A field added to that table
 * changes the layout: the format version must then be raised (tests/test_checkpoint.c checks
 * that version 1 still means 32 bytes per particle).
 * Every file is written atomically: NAME.tmp, write, fflush, fsync, rename, fsync of the directory.
 *
 * Checkpoints in pieces (`mpirun -np N pbf run`: every process writes its own particles, nothing
 * passes through one process): N piece files and one index, the index written last.
 *
 *   checkpoint_00040_00003.pbfpc   the particles of process 3 (of the N that wrote it)
 *   checkpoint_00040.pbfck         the index: format version 2 of the header above
 *
 * Index, version 2 (the same first 56 bytes as version 1; count = every piece's together):
 *        0   56  magic, version (2), marker, header size (64), count n, frame, time, steps,
 *                scene hash, as version 1
 *       56    4  int32  pieces P (1 .. PBFAPP_CHECKPOINT_MAX_PIECES)
 *       60    4  int32  key kind (below)
 *       64  16P  per piece: int32 count, uint32 0, uint64 the piece file's checksum
 *   64+16P    8  uint64 checksum: FNV-1a 64 of every byte before it
 *
 * Piece j of P:
 *        0    8  magic "PBFCKPC\0"
 *        8    4  uint32 piece format version (1)
 *       12    4  uint32 byte-order marker 0x01020304
 *       16    4  uint32 header size in bytes (64)
 *       20    4  int32  particle count m
 *       24    8  int64  frame index
 *       32    4  int32  j
 *       36    4  int32  P
 *       40    8  int64  solver steps taken
 *       48    8  uint64 scene hash
 *       56    4  int32  key kind
 *       60    4  uint32 reserved (0)
 *       64  32m  the columns, as version 1 (x[m], ..., id[m])
 *   64+32m   4m  uint32 key[m]
 *   64+36m    8  uint64 checksum: FNV-1a 64 of every byte before it
 *
 * Piece version 2: version 1 with PBF's multipliers lambda[m] (float) after the keys, the
 * checksum after them (64+40m), as checkpoint version 3 adds them to version 1.
 *
 * The key orders the particles: the state's memory order (that of a single-process run, part of
 * the state) is every piece's particles merged by ascending key, particles of equal key only ever
 * in one piece, in the piece's order. Key kind 1: the key is the grid cell of the particle at
 * the last step's sort (libpbf_mpi keeps each process's particles in that order, and every cell
 * on one process); kind 0: the key is the particle's place in the memory order itself (a
 * checkpoint written before the first step). A reader of any number of processes (or none)
 * takes the pieces in any grouping and merges by key (pbfapp_pieces_merge).
 *
 * Atomicity: every piece goes to NAME.tmp and is renamed; the index is written (atomically) only
 * once every process has renamed its piece, and the previous checkpoint (index first, then its
 * pieces) is deleted only after that. A process killed at any moment leaves the previous index
 * and its pieces intact; pieces without an index are leftovers (ignored, then deleted). The index
 * holds each piece's count and checksum, so a stale or damaged piece makes the reader fall back
 * to the previous checkpoint.
 */
#ifndef PBFAPP_CHECKPOINT_H
#define PBFAPP_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pbf/pbf.h"
#include "io/scene.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PBFAPP_CHECKPOINT_VERSION 1u
#define PBFAPP_CHECKPOINT_LAMBDA_VERSION 3u /* version 1 + PBF's multipliers */
#define PBFAPP_CHECKPOINT_HEADER_BYTES 64u
#define PBFAPP_CHECKPOINT_KEEP 2 /* checkpoints kept in the output directory */
#define PBFAPP_CHECKPOINT_INDEX_VERSION 2u /* the index of a checkpoint in pieces */
#define PBFAPP_CHECKPOINT_PIECE_VERSION 1u
#define PBFAPP_CHECKPOINT_PIECE_LAMBDA_VERSION 2u /* piece version 1 + PBF's multipliers */
#define PBFAPP_CHECKPOINT_MAX_PIECES 1000000
#define PBFAPP_KEY_ORDER 0 /* the key is the particle's place in the memory order */
#define PBFAPP_KEY_CELL 1  /* the key is its grid cell at the last sort */

/* FNV-1a 64 of `n` bytes, continuing from `h` (start with PBFAPP_FNV_OFFSET). */
#define PBFAPP_FNV_OFFSET 14695981039346656037ull
uint64_t pbfapp_fnv1a64(uint64_t h, const void *data, size_t n);

/* Hash of everything in a scene that determines the simulated state or the frame files: every
 * world parameter except `threads` and `device` (a checkpoint written on one device resumes on
 * any other), the run parameters fps, substeps and format, every fluid
 * block and box. Not included (they may change between a run and its resume): frames, threads,
 * device, guard_density_error, adaptive, checkpoint_every, name, description. */
uint64_t pbfapp_scene_hash(const pbfapp_scene *scene);

/* The parameters of the scene hash whose values differ between `was` (the scene a run's
 * checkpoints were written for: its DIR/scene.json) and `now` (the same after --set overrides):
 * "KEY (A in the checkpoints, B now)" for each, separated by ", ", into buf. Returns their number (0
 * when only the geometry differs, or nothing). */
int pbfapp_scene_hash_diff(const pbfapp_scene *was, const pbfapp_scene *now, char *buf,
                           size_t size);

/* The keys a resume may change (those outside the scene hash), as "threads, device, ... and
 * adaptive", into buf. */
void pbfapp_resume_free_keys(char *buf, size_t size);

/* Writes `length` bytes to `path` atomically (PATH.tmp, fsync, rename, fsync of the directory).
 * On failure nothing is left behind and the message names the file. */
pbf_status pbfapp_write_file_atomic(const char *path, const void *data, size_t length,
                                    pbf_error *err);

/* A checkpoint read back. The arrays point into `data` (owned) or are NULL when count is 0. */
typedef struct pbfapp_checkpoint {
    uint32_t version;
    int count;
    int64_t frame;
    double time;
    int64_t steps;
    uint64_t scene_hash;
    uint64_t checksum;
    pbf_snapshot snapshot; /* aliases `data` */
    unsigned char *data;   /* owned copy of the file (pbfapp_checkpoint_free) */
} pbfapp_checkpoint;

/* Bytes of a checkpoint of n particles. */
uint64_t pbfapp_checkpoint_size(int64_t count);
/* The size of a version 3 checkpoint (with the multipliers). */
uint64_t pbfapp_checkpoint_lambda_size(int64_t count);

/* Serialises a snapshot into a malloc'ed buffer of pbfapp_checkpoint_size(count) bytes. */
pbf_status pbfapp_checkpoint_encode(const pbf_snapshot *s, int64_t frame, uint64_t scene_hash,
                                    unsigned char **out, size_t *length, pbf_error *err);

/* Checks and decodes a checkpoint held in memory (copied). `name` only names it in messages.
 * Checks, in order: size of the header, magic, version, byte order, header size, particle count
 * against the size, checksum, frame/time/steps, finite values, unique ids. Never reads outside
 * the buffer and allocates only after the size matched. Status PBF_ERR_INVALID_ARGUMENT for a
 * damaged or foreign file. */
pbf_status pbfapp_checkpoint_decode(const void *data, size_t length, const char *name,
                                    pbfapp_checkpoint *out, pbf_error *err);

/* Reads and decodes the file at `path` (regular file, size checked before reading). */
pbf_status pbfapp_checkpoint_read(const char *path, pbfapp_checkpoint *out, pbf_error *err);

void pbfapp_checkpoint_free(pbfapp_checkpoint *c);

/* "DIR/checkpoint_%05d.pbfck" into buf. */
void pbfapp_checkpoint_path(char *buf, size_t size, const char *dir, int64_t frame);

/* Writes the checkpoint of frame `frame` into dir atomically, then deletes the checkpoints of
 * frames older than `keep_from` (the previous checkpoint; -1 deletes none). Sets *written_path
 * (buf of `path_size`) to the file written. */
pbf_status pbfapp_checkpoint_save(const char *dir, const pbf_world *world, int64_t frame,
                                  uint64_t scene_hash, int64_t keep_from, char *written_path,
                                  size_t path_size, pbf_error *err);

/* Deletes the checkpoint files of `dir` with a frame < `before` (all: INT64_MAX; an index before
 * its pieces) and the leftovers of interrupted writes (checkpoint_*.tmp, frame_*.tmp,
 * stats.jsonl.tmp, scene.json.tmp, and pieces whose frame has no index: only call it when no
 * process is writing a checkpoint). Returns the number of files deleted. */
int pbfapp_checkpoint_prune(const char *dir, int64_t before);

/* Finds the newest valid checkpoint in `dir` for a scene of hash `scene_hash` and `particles`
 * particles. Damaged checkpoints, and those of another scene, are reported on `log` (one line
 * each, "pbf: ...") and skipped. Fails (PBF_ERR_INVALID_ARGUMENT) when none is usable, with a
 * message listing why each was refused. */
pbf_status pbfapp_checkpoint_find(const char *dir, uint64_t scene_hash, int64_t particles,
                                  FILE *log, pbfapp_checkpoint *out, char *found_path,
                                  size_t path_size, pbf_error *err);

/* 1 if `dir` holds an unfinished run: checkpoint files, the newest (by name) of a frame before
 * the `frames` of DIR/scene.json. Its frame and the run's frames go to *newest and *frames. A
 * fresh `pbf run` refuses such a directory rather than deleting the checkpoints. */
int pbfapp_unfinished_run(const char *dir, int64_t *newest, int *frames);

/* ---- checkpoints in pieces (format above; written by `mpirun -np N pbf run`) ---- */

/* Bytes of the index of P pieces. */
uint64_t pbfapp_checkpoint_index_size(int pieces);

/* "DIR/checkpoint_%05d_%05d.pbfpc" into buf. */
void pbfapp_checkpoint_piece_path(char *buf, size_t size, const char *dir, int64_t frame,
                                  int piece);

/* Writes piece `piece` of `pieces` (the particles of s with their keys) atomically; its checksum
 * (the file's last 8 bytes) goes to *checksum. */
pbf_status pbfapp_checkpoint_piece_write(const char *dir, const pbf_snapshot *s,
                                         const uint32_t *key, int key_kind, int64_t frame,
                                         uint64_t scene_hash, int piece, int pieces,
                                         uint64_t *checksum, pbf_error *err);

/* The index of a checkpoint in pieces. */
typedef struct pbfapp_checkpoint_index {
    int count; /* every piece's particles */
    int64_t frame;
    double time;
    int64_t steps;
    uint64_t scene_hash;
    int pieces;
    int key_kind;
    int *piece_count;       /* per piece */
    uint64_t *piece_sum;    /* per piece: its checksum */
} pbfapp_checkpoint_index;

/* Writes the index of checkpoint `ix->frame` atomically (DIR/checkpoint_NNNNN.pbfck). */
pbf_status pbfapp_checkpoint_index_write(const char *dir, const pbfapp_checkpoint_index *ix,
                                         pbf_error *err);

/* Reads an index (the checks of pbfapp_checkpoint_read's header, its checksum, the counts
 * adding up). PBF_ERR_INVALID_ARGUMENT for a damaged file. A valid version 1 header (a
 * single-file checkpoint, not read further) gives PBF_OK with *is_single = 1 and *out empty. */
pbf_status pbfapp_checkpoint_index_read(const char *path, pbfapp_checkpoint_index *out,
                                        int *is_single, pbf_error *err);
void pbfapp_checkpoint_index_free(pbfapp_checkpoint_index *ix);

/* Particles with keys: pieces read, or several of them merged. The arrays point into data. */
typedef struct pbfapp_keyed {
    pbf_snapshot snapshot; /* count, the columns, time and steps */
    const uint32_t *key;
    unsigned char *data;
} pbfapp_keyed;
void pbfapp_keyed_free(pbfapp_keyed *k);

/* Reads piece `piece` of the checkpoint of index `ix` (whose file is index_path, in the
 * directory of the pieces): checks its header against the index (frame, scene hash, piece, count,
 * key kind), its checksum against the file's and the index's, finite values. */
pbf_status pbfapp_checkpoint_piece_read(const char *index_path,
                                        const pbfapp_checkpoint_index *ix, int piece,
                                        pbfapp_keyed *out, pbf_error *err);

/* Merges `n` keyed sets (each in ascending key order; a key in one set only) by key into *out,
 * which then holds every particle in the memory order. */
pbf_status pbfapp_keyed_merge(const pbfapp_keyed *in, int n, pbfapp_keyed *out, pbf_error *err);

/* A checkpoint in pieces read whole (its index at index_path): every piece merged by key into
 * the single-process state, checked as pbfapp_checkpoint_decode checks a version 1 file
 * (unique ids included); out->version is 2. Called by pbfapp_checkpoint_read. */
pbf_status pbfapp_checkpoint_read_pieces(const char *index_path, pbfapp_checkpoint *out,
                                         pbf_error *err);

/* The frames of the checkpoint files (checkpoint_NNNNN.pbfck) of dir, newest first, in a malloc'ed
 * array (*n of them; NULL when none). */
pbf_status pbfapp_checkpoint_frames(const char *dir, int64_t **frames, size_t *n, pbf_error *err);

/* Rewrites DIR/stats.jsonl atomically keeping its complete lines of frames 0, 1, ... up to
 * `frame` (the frames on disk when the checkpoint was taken), so that the resumed run appends
 * without duplicates. Returns PBF_ERR_INVALID_ARGUMENT, after rewriting, when lines of frames
 * 0..frame are missing (the caller may warn and go on). */
pbf_status pbfapp_stats_truncate(const char *dir, int64_t frame, pbf_error *err);

/* What `pbf run --resume DIR` does with a run of `frames` frames (after --frames): continue from
 * its newest checkpoint; start over from frame 0 when it has none yet (stopped before its first:
 * nothing is lost, and the frames come out as a fresh run's); nothing when it has none and
 * stats.jsonl lists every frame. The last two put one line for the user into msg. -1 (err set)
 * when DIR cannot be listed. */
#define PBFAPP_RESUME_CHECKPOINT 0
#define PBFAPP_RESUME_START_OVER 1
#define PBFAPP_RESUME_COMPLETE 2
int pbfapp_resume_plan(const char *dir, int frames, char *msg, size_t size, pbf_error *err);

/* --resume DIR with --set overrides: the number of keys of the scene hash that `now` (DIR/scene.json
 * with the overrides) changes, with a message into msg naming each key, its value in the
 * checkpoints' scene and the new one, and the keys a resume may change. 0 when none (or when
 * DIR/scene.json cannot be read: its loader says why elsewhere). */
int pbfapp_resume_locked(const char *dir, const pbfapp_scene *now, char *msg, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* PBFAPP_CHECKPOINT_H */
