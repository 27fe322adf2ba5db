/*
 * Frame writers and the per-frame statistics log.
 *
 * Every frame file is written as NAME.tmp, flushed, fsync'ed and renamed to NAME (then the
 * directory is fsync'ed), so a reader (or a crash) never sees a half-written frame; a failed
 * write (disk full, file size limit) removes NAME.tmp, leaves the earlier files as they were and
 * names the file in the message. Particles are written in `id` order, so row k of
 * every frame is the same particle.
 *
 *   frame_00000.vtp  VTK XML PolyData, raw appended binary: Points (Float32 x3), Verts, and
 *                    PointData velocity (Float32 x3), density (Float32), id (UInt32);
 *                    FieldData TimeValue (simulated time, read by ParaView)
 *   frame_00000.ply  binary little-endian PLY, one "vertex" element per particle: float x y z
 *                    vx vy vz density, uint id; comment "pbf VERSION time T"
 *   frame_00000.csv  text: header x,y,z,vx,vy,vz,density,id, one particle per line
 *   frame_00000.geo  Houdini classic ASCII geometry (PGEOMETRY V5): points P with the point
 *                    attributes v (vector), density (float), id (int); no primitives
 *   frame_00000.bgeo the same in Houdini's classic binary layout (Bgeo V5, big endian)
 *   stats.jsonl      one JSON object per frame: frame, time, particles, density_error_avg,
 *                    density_error_max, max_speed, nonfinite, escaped, ms; under mpirun
 *                    also ranks, rank_particles_min, rank_particles_max
 *   frame_00000.pvtp under mpirun with mpi_output = pieces: the index of the frame's pieces
 *                    frame_00000_RRRRR.vtp, one per process (see pbfapp_output_pieces)
 *   frames.pvd       (vtp) ParaView collection of the frames with their simulated times
 *   frames.EXT.series (ply, csv) ParaView's file series index of the frames with their times
 *
 * The index is rewritten atomically after each frame, so a run killed at any moment leaves one
 * listing the complete frames; its times are those of stats.jsonl.
 *
 * A run owns its output directory: pbfapp_output_claim deletes the frame files (any format),
 * images (frame_NNNNN.png), meshes (mesh_NNNNN.ply/.obj) and indexes of an earlier run, and
 * never another file.
 */
#ifndef PBFAPP_OUTPUT_H
#define PBFAPP_OUTPUT_H

#include <stdint.h>

#include "pbf/pbf.h"
#include "io/scene.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pbfapp_output pbfapp_output;

/* Creates `dir` (and missing parents) if needed and checks that files can be created in it:
 * the output directory of `pbf mesh --out` and `pbf render --out`. A directory that cannot be
 * used (a file of that name, a file on the way, not writable, cannot be created) is refused with
 * PBF_ERR_INVALID_ARGUMENT naming the path (a usage error: exit status 2); PBF_ERR_IO only when
 * the disk or the system fails (no space, I/O error). */
pbf_status pbfapp_output_dir_make(const char *dir, pbf_error *err);

/* Creates `dir` as pbfapp_output_dir_make, refuses a directory holding frame files that no run
 * wrote (PBF_ERR_INVALID_ARGUMENT) and opens (truncates) stats.jsonl. */
pbf_status pbfapp_output_open(const char *dir, pbfapp_format format, pbfapp_output **out,
                              pbf_error *err);

/* Same for a resumed run: appends to stats.jsonl (see pbfapp_stats_truncate) instead of
 * truncating it. */
pbf_status pbfapp_output_open_append(const char *dir, pbfapp_format format, pbfapp_output **out,
                                     pbf_error *err);

/* Makes the directory this run's: deletes the frame files frame_NNNNN.{vtp,ply,csv,geo,bgeo} (and
 * under MPI frame_NNNNN.pvtp and the pieces frame_NNNNN_RRRRR.vtp), the
 * images frame_NNNNN.png (and the .tmp of any of them) of frames after `keep_last`, and the
 * series indexes (all of them for a fresh run, keep_last = -1; those of other formats on a
 * resume). A resumed run (keep_last = its checkpoint's frame) then rebuilds its index from
 * stats.jsonl (already cut back to keep_last). Call it once everything that can refuse the run
 * has passed, before the first frame. *removed (may be NULL) counts the files deleted. A fresh
 * pbfapp_output_open refuses a directory holding such files without scene.json or stats.jsonl
 * (files no run wrote). */
pbf_status pbfapp_output_claim(pbfapp_output *o, int keep_last, int *removed, pbf_error *err);

/* Flushes and fsyncs stats.jsonl (before a checkpoint, so it holds every frame the checkpoint
 * counts as written). */
pbf_status pbfapp_output_sync(pbfapp_output *o, pbf_error *err);

/* Writes frame `frame` (file frame_%05d.EXT) of the particles at simulated time `time`, then
 * adds it to the series index. */
pbf_status pbfapp_output_frame(pbfapp_output *o, int frame, double time, const pbf_particles *p,
                               pbf_error *err);

/* Under MPI (scene key mpi_output = pieces): every process writes its particles as the piece
 * DIR/frame_NNNNN_RRRRR.vtp (RRRRR its rank; in id order, as a frame), then process 0, once every
 * piece is complete, the index DIR/frame_NNNNN.pvtp (VTK's parallel PolyData: ParaView and
 * vtkXMLPPolyDataReader read the pieces as one data set) naming `pieces` pieces, and lists it in
 * frames.pvd. vtp only. */
pbf_status pbfapp_write_piece(const char *dir, int frame, int piece, double time,
                              const pbf_particles *p, pbf_error *err);
pbf_status pbfapp_output_pieces(pbfapp_output *o, int frame, double time, int pieces,
                                pbf_error *err);

/* Appends one line to stats.jsonl and flushes it. `ms` is the wall-clock time of the frame;
 * s->speed_clamps is written as the frame's count (the caller sums its steps'). On a failed write
 * the file is cut back to its last complete line and the message names it. */
pbf_status pbfapp_output_stats(pbfapp_output *o, int frame, const pbf_stats *s, double ms,
                               pbf_error *err);

/* JSON members appended to every following stats.jsonl line, e.g. `,"ranks":4` (NULL or "":
 * none; at most 255 bytes). A run over MPI records its processes' particle counts this way. */
void pbfapp_output_stats_extra(pbfapp_output *o, const char *members);

/* Path of the last frame file written ("" before the first). */
const char *pbfapp_output_last_path(const pbfapp_output *o);

/* Closes stats.jsonl (reporting a failed close) and frees the writer. NULL is allowed. */
pbf_status pbfapp_output_close(pbfapp_output *o, pbf_error *err);

/* Stand-alone writers (used by the above and by the tests). `order` is the memory index of the
 * particle with id 0, 1, ...: make it with pbfapp_id_order. Each writes PATH.tmp and renames it
 * to PATH. */
pbf_status pbfapp_write_vtp(const char *path, const pbf_particles *p, const uint32_t *order,
                            double time, pbf_error *err);
pbf_status pbfapp_write_ply(const char *path, const pbf_particles *p, const uint32_t *order,
                            double time, pbf_error *err);
pbf_status pbfapp_write_csv(const char *path, const pbf_particles *p, const uint32_t *order,
                            pbf_error *err);
pbf_status pbfapp_write_geo(const char *path, const pbf_particles *p, const uint32_t *order,
                            pbf_error *err);
pbf_status pbfapp_write_bgeo(const char *path, const pbf_particles *p, const uint32_t *order,
                             pbf_error *err);

/* Fills order[k] (p->count entries) with the memory index of the k-th particle in id order.
 * Uses the inverse permutation when ids are 0..count-1, else sorts by id. */
pbf_status pbfapp_id_order(const pbf_particles *p, uint32_t *order, pbf_error *err);

#ifdef __cplusplus
}
#endif

#endif /* PBFAPP_OUTPUT_H */
