/*
 * `pbf validate`: the command. See validate.h; the parts are listed in validate_internal.h. The
 * report is OUT.md beside the folder OUT (--out OUT); without --out OUT is a new folder
 * validation-YYYYMMDD-HHMMSS (validation_solvers-... with --solver) in the current directory,
 * refused if it or its report exists: the tracked docs/validation.md and
 * docs/validation_solvers.md are rewritten only when --out names them.
 */
#define _POSIX_C_SOURCE 200809L

#include "validate.h"
#include "validate_internal.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* Creates path and its parents; 1 when it is a folder. */
static int mkdir_p(const char *path) {
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) return 0;
    memcpy(buf, path, n + 1);
    for (size_t k = 1; k <= n; ++k) {
        if (buf[k] == '/' || buf[k] == '\0') {
            char c = buf[k];
            buf[k] = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
                fprintf(stderr, "pbf validate: %s: cannot create: %s\n", buf, strerror(errno));
                return 0;
            }
            buf[k] = c;
        }
    }
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

void pbfapp_validate_print_help(FILE *f) {
    fprintf(
        f, "usage: pbf validate [--out DIR] [--fast] [options]\n"
           "\n"
           "Validates pbf against physics and experiment and writes the report DIR.md with\n"
           "tables and PNG plots in DIR (default: a new folder validation-YYYYMMDD-HHMMSS\n"
           "here; `--out docs/validation` regenerates docs/validation.md):\n"
           "  1. a hydrostatic column settling: density error, free-surface height, residual\n"
           "     speed, density profile;\n"
           "  2. the dam break of Koshizuka & Oka (1996): surge front against that experiment,\n"
           "     Martin & Moyce's (1952) and Ritter's solution, residual column height;\n"
           "  3. convergence: three resolutions, 2/4/8/16 solver iterations;\n"
           "  4. energy (kinetic + potential) with and without vorticity confinement;\n"
           "  5. the stability envelope: substeps 1/2/4/8 x iterations 1/2/4/8;\n"
           "  6. column release: the top of the liquid at the wall after the dam break's\n"
           "     release, at three resolutions (it must fall, never rise);\n"
           "  7. walls and edges: the dam break in a tank L deep; no particle may climb a\n"
           "     side wall or a vertical edge above the liquid beside it.\n"
           "The worlds are built with the library (no scene file needed); DIR/scenes/NAME.json\n"
           "reproduces each with `pbf run`. Plots need gnuplot (Debian: gnuplot-nox); the\n"
           "scripts DIR/NAME.gp redraw them from the DIR/*.dat files.\n"
           "\n"
           "options:\n"
           "  --out DIR     output folder, created or updated; the report is DIR.md (default:\n"
           "                validation-YYYYMMDD-HHMMSS, validation_solvers-... with --solver,\n"
           "                from the start time, refused if it or its report exists)\n"
           "  --report FILE write the report here instead of DIR.md\n"
           "  --fast        only the coarse resolution (n = 18), the CI subset (ctest -L\n"
           "                validation): " FAST_RUN_TIME "; the full run takes\n"
           "                " FULL_RUN_TIME "\n"
           "  --jobs N      simulations run at once, each in its own process (default: the\n"
           "                number of CPUs); 1 runs them in this process\n"
           "  --threads N   OpenMP threads per simulation (default 1 with --jobs > 1, else 0 =\n"
           "                the OpenMP default); results do not depend on it\n"
           "  --no-plots    write the data and the gnuplot scripts, but do not run gnuplot\n"
           "  --cache DIR   keep every case's measurements in DIR and reuse those of the same\n"
           "                case on the next run (for editing the report; delete DIR after a\n"
           "                change to the library)\n"
           "  --resolution N  the cases of --fast at n = N (18, 36 or 72) instead; the\n"
           "                checks are printed for that resolution (CI checks n = 18)\n"
           "  --set KEY=VALUE  a world parameter for every case (as `pbf run --set`), e.g.\n"
           "                friction_dynamic=0.2; repeatable; the report's first line names\n"
           "                it; keys a case sets itself (particle_radius, solver_iterations,\n"
           "                domain_min/max, threads, solver) are refused\n"
           "  --solver NAME the per-method suite instead, for one pressure solver (a value of\n"
           "                the `solver` key: pbf, wcsph, pcisph, iisph, dfsph, sesph, ...) or\n"
           "                all: hydrostatic column, dam break,\n"
           "                energy, column release, wall time, stability envelope over time\n"
           "                steps; one table per method in DIR.md (`--out\n"
           "                docs/validation_solvers` regenerates docs/validation_solvers.md);\n"
           "                --fast: n = 18, no envelope (CI)\n"
           "  -q, --quiet   no progress lines, no progress bar (drawn only on a terminal)\n"
           "  -h, --help    this help\n"
           "\n"
           "Each check has two verdicts, printed on stderr and written to the report and to\n"
           "DIR/checks.json: its target met or missed, and its value within or outside the CI\n"
           "tolerance (the target, or a looser bound where the full run misses the target).\n"
           "The report names the commit pbf was built from and whether that tree had\n"
           "uncommitted changes.\n"
           "\n"
           "exit status: 0 every value within its CI tolerance (targets may be missed); 1 runtime\n"
           "  error (I/O, gnuplot); 2 usage; 4 a value outside its CI tolerance (stderr and the\n"
           "  report's section \"What CI checks\" say which).\n");
}

static int parse_int(const char *s, int lo, int hi, int *out) {
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || !end || *end || end == s || v < lo || v > hi) return 0;
    *out = (int)v;
    return 1;
}

/* The end of a validate run: the summary line (unless quiet), then the simulations freed. */
static int finish_run(int rc, int quiet, double t0, const char *report, spec *specs,
                      sim_result *res, int count) {
    if (!quiet) {
        char d[32];
        pbfapp_format_duration(d, sizeof d, pbfapp_now() - t0);
        fprintf(stderr, "pbf validate: %s in %s; report %s\n",
                rc == 0                   ? "done"
                : rc == EXIT_FAILED_CHECK ? "CHECKS FAILED"
                                          : "failed",
                d, report);
    }
    for (int i = 0; i < count; ++i) sim_free(&res[i]);
    free(specs);
    free(res);
    return rc;
}

/* Reads the options into o; -1 to go on, else the exit status (--help: 0, a usage error: 2). */
static int parse_options(validate_options *o, int argc, char **argv, int *out_given) {
    memset(o, 0, sizeof *o);
    o->out = NULL; /* a fresh folder: default_out */
    o->plots = 1;
    o->threads = -1;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    o->jobs = ncpu > 0 ? (int)(ncpu > 64 ? 64 : ncpu) : 1;
    *out_given = 0;
    for (int i = 0; i < argc; ++i) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            pbfapp_validate_print_help(stdout);
            return 0;
        } else if (strcmp(a, "--fast") == 0) {
            o->fast = 1;
        } else if (strcmp(a, "--no-plots") == 0) {
            o->plots = 0;
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            o->quiet = 1;
        } else if ((strcmp(a, "--out") == 0 || strcmp(a, "--report") == 0 ||
                    strcmp(a, "--cache") == 0 || strcmp(a, "--jobs") == 0 ||
                    strcmp(a, "--threads") == 0 || strcmp(a, "--solver") == 0 ||
                    strcmp(a, "--set") == 0 || strcmp(a, "--resolution") == 0)) {
            if (i + 1 >= argc || !argv[i + 1][0]) {
                fprintf(stderr, "pbf validate: %s needs a value (see `pbf validate --help`)\n", a);
                return EXIT_USAGE;
            }
            const char *v = argv[++i];
            if (strcmp(a, "--out") == 0) {
                o->out = v;
                *out_given = 1;
            } else if (strcmp(a, "--resolution") == 0) {
                if (!parse_int(v, 0, 1000, &o->resolution) ||
                    (o->resolution != N_COARSE && o->resolution != N_MEDIUM &&
                     o->resolution != N_FINE)) {
                    fprintf(stderr, "pbf validate: --resolution: \"%s\" is not 18, 36 or 72\n", v);
                    return EXIT_USAGE;
                }
                o->fast = 1;
            } else if (strcmp(a, "--set") == 0) {
                size_t used = strlen(o->set);
                if (used + strlen(v) + 2 > sizeof o->set || strchr(v, '\n')) {
                    fprintf(stderr, "pbf validate: --set %s: too many or too long overrides\n", v);
                    return EXIT_USAGE;
                }
                snprintf(o->set + used, sizeof o->set - used, "%s%s", used ? "\n" : "", v);
                pbf_world_def probe = pbf_default_world_def();
                pbf_error err;
                if (!apply_sets(&probe, o->set, &err)) {
                    fprintf(stderr, "pbf validate: %s\n", err.message);
                    return EXIT_USAGE;
                }
            } else if (strcmp(a, "--solver") == 0) {
                o->solver = v;
            } else if (strcmp(a, "--report") == 0) {
                o->report = v;
            } else if (strcmp(a, "--cache") == 0) {
                o->cache = v;
            } else if (strcmp(a, "--jobs") == 0 ? !parse_int(v, 1, 256, &o->jobs)
                                                : !parse_int(v, 0, 1024, &o->threads)) {
                fprintf(stderr, "pbf validate: %s: \"%s\" is not a whole number in range\n", a, v);
                return EXIT_USAGE;
            }
        } else {
            fprintf(stderr, "pbf validate: unknown option \"%s\" (see `pbf validate --help`)\n", a);
            return EXIT_USAGE;
        }
    }
    return -1;
}

/* The Position Based Fluids suite (no --solver): docs/validation.md. */
static int validate_pbf(validate_options *o, int argc, char **argv) {
    /* the folder and the report path: DIR.md beside DIR */
    char out[4096], report[4200], work[4200], scenes[4200];
    size_t n = strlen(o->out);
    if (n >= sizeof out - 16) {
        fprintf(stderr, "pbf validate: --out: path too long\n");
        return EXIT_USAGE;
    }
    memcpy(out, o->out, n + 1);
    while (n > 1 && out[n - 1] == '/') out[--n] = '\0';
    const char *base = strrchr(out, '/');
    base = base ? base + 1 : out;
    if (o->report)
        snprintf(report, sizeof report, "%s", o->report);
    else if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0 || strcmp(out, "/") == 0)
        snprintf(report, sizeof report, "%s/validation.md", out);
    else
        snprintf(report, sizeof report, "%s.md", out);
    snprintf(work, sizeof work, "%s/.work", out);
    snprintf(scenes, sizeof scenes, "%s/scenes", out);
    if (!mkdir_p(out) || !mkdir_p(scenes) || !mkdir_p(work) || (o->cache && !mkdir_p(o->cache)))
        return EXIT_RUNTIME;

    spec *specs = calloc(MAX_SPECS, sizeof *specs);
    sim_result *res = calloc(MAX_SPECS, sizeof *res);
    if (!specs || !res) {
        free(specs);
        free(res);
        fputs("pbf validate: out of memory\n", stderr);
        return EXIT_RUNTIME;
    }
    int count = make_specs(specs, o->fast, o->resolution ? o->resolution : N_COARSE);
    for (int i = 0; i < count; ++i) memcpy(specs[i].set, o->set, sizeof o->set);
    double t0 = pbfapp_now();
    if (!o->quiet)
        fprintf(stderr,
                "pbf validate: %d simulations (%s), %d at once, %d thread%s each; output "
                "in %s/, report %s\n",
                count, o->fast ? "--fast: n = 18 only" : "full", o->jobs, o->threads,
                o->threads == 1 ? "" : "s", out, report);
    int rc = 0;
    run_set rs = {specs, res, count};
    if (!write_scenes(scenes, specs, count) || run_all(o, work, specs, count, res) != 0)
        rc = EXIT_RUNTIME;
    rmdir(work);
    for (int i = 0; i < count && rc == 0; ++i)
        if (!res[i].h.ok) {
            fprintf(stderr, "pbf validate: %s\n", res[i].h.message);
            rc = EXIT_RUNTIME;
        }
    figure_list fl;
    memset(&fl, 0, sizeof fl);
    int ref_n = 0;
    double ref_shift = 0.0;
    for (int k = 1; k >= 0 && rc == 0; --k) { /* the reference run: n = 36, else n = 18 */
        const sim_result *r = get(&rs, "dam_n%d_it%d", RES[k], 4);
        if (r && !ref_n) {
            double e;
            ref_shift = best_shift(r, SHIFT_MAX, &e);
            ref_n = RES[k];
        }
    }
    if (rc == 0 && (!write_data(out, &rs) || !write_figures(out, &fl, ref_n, ref_shift)))
        rc = EXIT_RUNTIME;
    for (int k = 0; rc == 0 && o->plots && k < fl.count; ++k)
        if (!run_gnuplot(out, fl.name[k])) rc = EXIT_RUNTIME;
    if (rc == 0) {
        if (!write_report(o, report, &rs, &fl, argc, argv, pbfapp_now() - t0) ||
            !write_checks_json(out, o, &rs))
            rc = EXIT_RUNTIME;
        else if (evaluate_checks(&rs, !o->quiet, stderr,
                                 o->resolution ? o->resolution : N_COARSE) != 0)
            rc = EXIT_FAILED_CHECK;
    }
    return finish_run(rc, o->quiet, t0, report, specs, res, count);
}

/* The per-method suite (--solver NAME|all): docs/validation_solvers.md. */
static int validate_methods(validate_options *o, int argc, char **argv) {
    int order[METHOD_MAX], solvers[METHOD_MAX], ns = 0;
    const int nm = method_order(order);
    if (strcmp(o->solver, "all") == 0) {
        for (int k = 0; k < nm; ++k) solvers[ns++] = order[k];
    } else {
        for (int k = 0; k < nm; ++k)
            if (strcmp(o->solver, method_name(order[k])) == 0) solvers[ns++] = order[k];
        if (ns == 0) {
            char names[512] = "";
            for (int k = 0; k < nm; ++k)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s, ",
                         method_name(order[k]));
            fprintf(stderr, "pbf validate: --solver: \"%s\" is not a solver (%sor all)\n",
                    o->solver, names);
            return EXIT_USAGE;
        }
    }
    char out[4096], report[4200], work[4200], scenes[4200];
    size_t n = strlen(o->out);
    if (n >= sizeof out - 16) {
        fprintf(stderr, "pbf validate: --out: path too long\n");
        return EXIT_USAGE;
    }
    memcpy(out, o->out, n + 1);
    while (n > 1 && out[n - 1] == '/') out[--n] = '\0';
    if (o->report)
        snprintf(report, sizeof report, "%s", o->report);
    else
        snprintf(report, sizeof report, "%s.md", out);
    snprintf(work, sizeof work, "%s/.work", out);
    snprintf(scenes, sizeof scenes, "%s/scenes", out);
    if (!mkdir_p(out) || !mkdir_p(scenes) || !mkdir_p(work) || (o->cache && !mkdir_p(o->cache)))
        return EXIT_RUNTIME;
    spec *specs = calloc(METHOD_MAX_SPECS, sizeof *specs);
    sim_result *res = calloc(METHOD_MAX_SPECS, sizeof *res);
    if (!specs || !res) {
        free(specs);
        free(res);
        fputs("pbf validate: out of memory\n", stderr);
        return EXIT_RUNTIME;
    }
    int count = make_method_specs(specs, solvers, ns, o->fast);
    for (int i = 0; i < count; ++i) memcpy(specs[i].set, o->set, sizeof o->set);
    double t0 = pbfapp_now();
    if (!o->quiet)
        fprintf(stderr,
                "pbf validate: --solver %s: %d simulations (%s), %d at once, %d thread%s each; "
                "report %s\n",
                o->solver, count, o->fast ? "--fast: n = 18, no envelope" : "n = 18, 36", o->jobs,
                o->threads, o->threads == 1 ? "" : "s", report);
    int rc = 0;
    run_set rs = {specs, res, count};
    if (!write_scenes(scenes, specs, count) || run_all(o, work, specs, count, res) != 0)
        rc = EXIT_RUNTIME;
    rmdir(work);
    for (int i = 0; i < count && rc == 0; ++i)
        if (!res[i].h.ok) {
            fprintf(stderr, "pbf validate: %s\n", res[i].h.message);
            rc = EXIT_RUNTIME;
        }
    if (rc == 0 && !write_data(out, &rs)) rc = EXIT_RUNTIME;
    if (rc == 0) {
        if (!write_method_report(o, report, &rs, solvers, ns, argc, argv, pbfapp_now() - t0))
            rc = EXIT_RUNTIME;
        else if (method_failures(&rs, solvers, ns, !o->quiet, stderr) != 0)
            rc = EXIT_FAILED_CHECK;
    }
    return finish_run(rc, o->quiet, t0, report, specs, res, count);
}

/* Without --out: PREFIX-YYYYMMDD-HHMMSS (local time) in the current directory, new: refused (exit
 * 2) when that folder or its report PREFIX-....md already exists, so that no earlier run, and no
 * tracked report, is overwritten. -1 when buf holds the name. */
static int default_out(char *buf, size_t size, const char *prefix) {
    time_t now = time(NULL);
    struct tm tm;
    char stamp[32], report[160];
    if (!localtime_r(&now, &tm) || !strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm)) {
        fputs("pbf validate: cannot read the clock for the output folder's name; give --out\n",
              stderr);
        return EXIT_RUNTIME;
    }
    snprintf(buf, size, "%s-%s", prefix, stamp);
    snprintf(report, sizeof report, "%s.md", buf);
    struct stat sb;
    const char *taken = lstat(buf, &sb) == 0 ? buf : lstat(report, &sb) == 0 ? report : NULL;
    if (taken) {
        fprintf(stderr,
                "pbf validate: %s already exists and is not overwritten; give --out DIR to "
                "write (or update) DIR and DIR.md\n",
                taken);
        return EXIT_USAGE;
    }
    return -1;
}

int pbfapp_validate_command(int argc, char **argv) {
    validate_options o;
    int out_given;
    int rc = parse_options(&o, argc, argv, &out_given);
    if (rc >= 0) return rc;
    if (o.threads < 0) o.threads = o.jobs > 1 ? 1 : 0;
    char fresh[128];
    if (!out_given) {
        rc = default_out(fresh, sizeof fresh, o.solver ? "validation_solvers" : "validation");
        if (rc >= 0) return rc;
        o.out = fresh;
    }
    if (o.solver) return validate_methods(&o, argc, argv);
    return validate_pbf(&o, argc, argv);
}
