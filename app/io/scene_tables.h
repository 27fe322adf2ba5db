/*
 * The tables of the scene loader (app/io/scene.c), in app/io/scene_tables.c: the run parameters
 * (pbfapp_run_params, in scene.h) and the keys of the geometry objects, fluid blocks, boxes,
 * wall motions and the camera. Internal to app/io/.
 */
#ifndef PBFAPP_SCENE_TABLES_H
#define PBFAPP_SCENE_TABLES_H

#include <stddef.h>

#include "io/scene.h"
#include "pbf/params.h"

#define BLOCK_REQUIRED 0x3u /* min, max */
#define CAMERA_REQUIRED 0x3u /* position, target */

extern const pbf_param_info pbfapp_block_params[];
extern const size_t pbfapp_block_param_count;
extern const pbf_param_info pbfapp_box_params[];
extern const size_t pbfapp_box_param_count;
extern const pbf_param_info pbfapp_motion_params[];
extern const size_t pbfapp_motion_param_count;
/* The keys of a motion, bit i = pbfapp_motion_params[i]. */
enum {
    M_TYPE = 1u << 0,
    M_DIRECTION = 1u << 1,
    M_AMPLITUDE = 1u << 2,
    M_PERIOD = 1u << 3,
    M_PHASE = 1u << 4,
    M_SPEED = 1u << 5,
    M_START = 1u << 6,
    M_STOP = 1u << 7
};
/* Keys allowed and keys required for each motion type (bit i = pbfapp_motion_params[i]). */
extern const unsigned pbfapp_motion_allowed[3];
extern const unsigned pbfapp_motion_required[3];
extern const pbf_param_info pbfapp_camera_params[];
extern const size_t pbfapp_camera_param_count;

#endif /* PBFAPP_SCENE_TABLES_H */
