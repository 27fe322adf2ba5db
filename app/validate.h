/*
 * `pbf validate`: the fidelity report. Builds the validation worlds with the library directly (no
 * scene files needed), runs them, measures, and writes docs/validation.md with tables and PNG
 * plots (gnuplot): a hydrostatic column, the Koshizuka & Oka (1996) dam break against the
 * experiment and Ritter's solution, convergence in resolution and solver iterations, the energy
 * budget, and the stability envelope (substeps x iterations). `--fast` runs only the coarse
 * resolution (the CI test, label `validation`) and exits 4 when a checked bound is missed.
 */
#ifndef PBFAPP_VALIDATE_H
#define PBFAPP_VALIDATE_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* `pbf validate [options]` (argv without "validate"). Exit status: 0 every check passed,
 * 1 runtime error (I/O, gnuplot missing or failing), 2 usage error, 4 a checked bound missed. */
int pbfapp_validate_command(int argc, char **argv);

/* The help text of `pbf validate --help`. */
void pbfapp_validate_print_help(FILE *f);

#ifdef __cplusplus
}
#endif

#endif /* PBFAPP_VALIDATE_H */
