/*
 * `pbf view SCENE`: the live viewer (GLFW 3 window, OpenGL 3.3 core through libepoxy). It loads
 * the scene with the same loader as `pbf run`, simulates it live and draws the particles as
 * sphere sprites or as a screen-space fluid surface. Built only when GLFW and libepoxy are found.
 */
#ifndef PBFVIEW_VIEWER_H
#define PBFVIEW_VIEWER_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Runs `pbf view` with the arguments after "view"; `default_scene` is used when none is given.
 * Returns the exit status: 0 success, 2 usage or scene error, 1 runtime error (no display,
 * OpenGL 3.3 unavailable, window creation failed, screenshot not written, simulation failed). */
int pbfview_main(int argc, char **argv, const char *default_scene);

/* The usage text of `pbf view` (options and controls). */
void pbfview_print_help(FILE *f, const char *default_scene);

#ifdef __cplusplus
}
#endif

#endif /* PBFVIEW_VIEWER_H */
