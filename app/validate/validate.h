/*
 * `pbf validate`: the fidelity report. Builds the validation worlds with the library directly (no
 * scene files needed), runs them, measures, and writes docs/validation.md with tables and PNG
 * plots (gnuplot): a hydrostatic column, the Koshizuka & Oka (1996) dam break against the
 * experiment and Ritter's solution, convergence in resolution and solver iterations, the energy
 * budget, and the stability envelope (substeps x iterations). `--fast` runs only the coarse
 * resolution (the CI test, label `validation`) and exits 4 when a value is outside its CI
 * tolerance.
 */
#ifndef PBFAPP_VALIDATE_H
#define PBFAPP_VALIDATE_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* `pbf validate [options]` (argv without "validate"). Exit status: 0 every value within its CI
 * tolerance (targets may still be missed: the report and stderr say which), 1 runtime error
 * (I/O, gnuplot missing or failing), 2 usage error, 4 a value outside its CI tolerance. */
int pbfapp_validate_command(int argc, char **argv);

/* The help text of `pbf validate --help`. */
void pbfapp_validate_print_help(FILE *f);

/* The verdict on a fidelity target: a measured value meets it (value >= target when ge, else
 * value <= target) or misses it (a non-finite value misses); NAN means not measured. */
typedef enum pbfapp_verdict {
    PBFAPP_VERDICT_NOT_RUN = 0,
    PBFAPP_VERDICT_MET = 1,
    PBFAPP_VERDICT_MISSED = 2
} pbfapp_verdict;
pbfapp_verdict pbfapp_validate_verdict(double value, double target, int ge);
const char *pbfapp_validate_verdict_name(pbfapp_verdict v); /* "met", "missed", "not run" */

/* The separate verdict of the CI test (`pbf validate --fast`): the value against the CI
 * tolerance, which is the target or, where the full run misses the target, a looser bound.
 * A value within a looser CI tolerance is still a missed target. NAN bound: not checked. */
typedef enum pbfapp_ci_verdict {
    PBFAPP_CI_NOT_CHECKED = 0,
    PBFAPP_CI_WITHIN = 1,
    PBFAPP_CI_OUTSIDE = 2 /* CI fails (exit 4) */
} pbfapp_ci_verdict;
pbfapp_ci_verdict pbfapp_validate_ci_verdict(double value, double ci_bound, int ge);
const char *pbfapp_validate_ci_verdict_name(pbfapp_ci_verdict v);

/* One check as the terminal shows it, e.g.
 *   missed  WHAT: n = 18: 0.785 % (target ≤ 0.5 %); within the looser CI tolerance ≤ 1 %
 *   met     WHAT: n = 18: 7.46 % (target ≤ 10 %)
 *   missed  WHAT: n = 18: 1.2 % (target ≤ 0.5 %); outside the CI tolerance ≤ 1 %: FAIL
 *   missed  WHAT: n = 18: no (target yes); the CI test requires yes: FAIL
 * unit: "%", "Z" (signed, no unit) or "" (a yes/no check: value and target >= 0.5 are "yes"). */
void pbfapp_validate_check_line(char *buf, size_t size, const char *what, const char *unit,
                                double value, double target, double ci_bound, int ge, int n);

#ifdef __cplusplus
}
#endif

#endif /* PBFAPP_VALIDATE_H */
