/*
 * Reading back the frame files that `pbf run` writes (app/io/output.c): .vtp (our own layout: raw
 * appended little-endian arrays velocity, density, id, Points), .ply (binary little-endian with
 * the properties x y z vx vy vz density id), .csv (header x,y,z,vx,vy,vz,density,id, or without
 * the id column as earlier versions wrote it), .geo and .bgeo (Houdini classic geometry with the
 * point attributes v, density, id), .pvtp (the index of a frame written in pieces under MPI:
 * its pieces, concatenated). Used by `pbf render DIR` and `pbf mesh DIR`. Files written by other programs are
 * rejected with a message naming the file. A file cut short is refused with the count its header
 * gives and the count it holds; a .csv, which has no count, against the frame's line in the
 * run's stats.jsonl beside it (and a last row without its line break), a .pvtp against it too.
 */
#ifndef PBFAPP_FRAME_READ_H
#define PBFAPP_FRAME_READ_H

#include <stdint.h>

#include "pbf/pbf.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pbfapp_frame_data {
    int count;
    float *x, *y, *z, *vx, *vy, *vz, *density;
    uint32_t *id; /* a .csv of an earlier version has no ids: 0, 1, ... */
    double time;  /* simulated time, s (from the file; see has_time) */
    int has_time; /* 0 for .csv, .geo and .bgeo, which do not store it */
} pbfapp_frame_data;

/* Reads PATH (format by its extension) into f (which it frees first; zero it before the first
 * call). */
pbf_status pbfapp_read_frame(const char *path, pbfapp_frame_data *f, pbf_error *err);
void pbfapp_frame_data_free(pbfapp_frame_data *f);

/* A read-only pbf_particles view of the data. */
pbf_particles pbfapp_frame_particles(const pbfapp_frame_data *f);

#ifdef __cplusplus
}
#endif

#endif /* PBFAPP_FRAME_READ_H */
