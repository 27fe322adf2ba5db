/*
 * `pbf bench`: standard performance cases that need no scene file (the dam break geometry of the
 * SPlisHSPlasH peer at three resolutions, or a cube of N particles), timed over a fixed number of
 * steps at fixed dt and iterations, with no output I/O, on the device of --device (default the
 * CPU). Reports ms per step, the per-stage breakdown of pbf_world_timings, particle-steps per
 * second, peak resident memory, the memory the world holds on its device (pbf_world_memory), the
 * speed-up from 1 to N threads, the final density error and, on the CPU, each stage's share of
 * this machine's measured memory bandwidth and peak flops (bench_limits.h), as a table and as
 * JSON (bench/README.md).
 */
#ifndef PBFAPP_BENCH_H
#define PBFAPP_BENCH_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* `pbf bench [options]` (argv without "bench"). Returns the exit status: 0, 1 runtime error,
 * 2 usage error. */
int pbfapp_bench_command(int argc, char **argv);

/* The help text of `pbf bench --help`. */
void pbfapp_bench_print_help(FILE *f);

#ifdef __cplusplus
}
#endif

#endif /* PBFAPP_BENCH_H */
