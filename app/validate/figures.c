/* `pbf validate`: the data files (DIR/NAME.dat, one per case) and the figures, one row each
 * (FIGURES): its gnuplot script DIR/NAME.gp draws DIR/NAME.png from the .dat files. */
#define _POSIX_C_SOURCE 200809L

#include "validate_internal.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

FILE *open_in(const char *dir, const char *name, char *path, size_t size) {
    snprintf(path, size, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) fprintf(stderr, "pbf validate: %s: cannot create: %s\n", path, strerror(errno));
    return f;
}

int close_checked(FILE *f, const char *path) {
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "pbf validate: %s: write error: %s\n", path, strerror(errno));
        return 0;
    }
    return 1;
}

int write_data(const char *dir, const run_set *rs) {
    char path[4400], name[128];
    FILE *f;
    if (!write_experiment_data(dir)) return 0;
    for (int i = 0; i < rs->count; ++i) {
        const spec *sp = &rs->specs[i];
        const sim_result *r = &rs->res[i];
        if (!r->h.ok || sp->kind == CASE_STAB) continue;
        snprintf(name, sizeof name, "%s.dat", sp->name);
        if (!(f = open_in(dir, name, path, sizeof path))) return 0;
        if (sp->kind == CASE_HYDRO) {
            double vref = sqrt(GRAVITY * r->h.h0);
            fprintf(f,
                    "# %s: hydrostatic column, %d particles, H0 = %.6f m (volume height)\n"
                    "# t(s) err_avg(%%) err_max(%%) vmax(m/s) vmean(m/s) surface(m) "
                    "surface_err(%%) vmax/sqrt(gH0) vmean/sqrt(gH0) bottom(m)\n",
                    sp->name, r->h.particles, r->h.h0);
            for (int k = 0; k < r->h.nrec; ++k) {
                const frame_rec *q = &r->rec[k];
                fprintf(f, "%.6f %.6g %.6g %.6g %.6g %.7f %.6g %.6g %.6g %.7f\n", q->t, q->err_avg,
                        q->err_max, q->vmax, q->vmean, q->surface,
                        100.0 * (q->surface - r->h.h0) / r->h.h0, q->vmax / vref, q->vmean / vref,
                        q->bottom);
            }
            if (!close_checked(f, path)) return 0;
            snprintf(name, sizeof name, "%s_profile.dat", sp->name);
            if (!(f = open_in(dir, name, path, sizeof path))) return 0;
            fprintf(f,
                    "# %s: final state; mean density around heights one spacing apart "
                    "(hat weights of half-width one spacing)\n# y/H0 rho/rho0 weight\n",
                    sp->name);
            for (int k = 0; k < r->h.nbins; ++k)
                fprintf(f, "%.6f %.7f %.2f\n", r->bins[3 * k] / r->h.h0, r->bins[3 * k + 1],
                        r->bins[3 * k + 2]);
            if (!close_checked(f, path)) return 0;
            snprintf(name, sizeof name, "%s_ndens.dat", sp->name);
            if (!(f = open_in(dir, name, path, sizeof path))) return 0;
            fprintf(f,
                    "# %s: final state; horizontally averaged number density / bulk value\n"
                    "# y/H0 n/n_bulk\n",
                    sp->name);
            for (int k = 0; k < r->h.ncurve; ++k)
                fprintf(f, "%.6f %.6f\n", r->curve[2 * k] / r->h.h0, r->curve[2 * k + 1]);
            if (!close_checked(f, path)) return 0;
        } else {
            double e0 = r->rec[0].ekin + r->rec[0].epot, ts = t_scale();
            const double rad = 0.5 * KO_L / sp->n;
            fprintf(f,
                    "# %s: dam break, %d particles; L = %.3f m, T = t sqrt(2g/L), r = %.6f m\n"
                    "# t(s) T Z=front/L column/(2L) err_avg(%%) err_max(%%) vmax(m/s) "
                    "Ekin/E0 Epot/E0 E/E0 top_rise(r) column_rise(r) climb(r)\n",
                    sp->name, r->h.particles, KO_L, rad);
            for (int k = 0; k < r->h.nrec; ++k) {
                const frame_rec *q = &r->rec[k];
                fprintf(f, "%.6f %.5f %.6f %.6f %.6g %.6g %.6g %.8f %.8f %.8f %.4f %.4f %.4f\n",
                        q->t, q->t * ts, q->front / KO_L, q->column / (2.0 * KO_L), q->err_avg,
                        q->err_max, q->vmax, q->ekin / e0, q->epot / e0, (q->ekin + q->epot) / e0,
                        (q->wall_top - r->rec[0].wall_top) / rad,
                        (q->column - r->rec[0].column) / rad, q->climb / rad);
            }
            if (!close_checked(f, path)) return 0;
        }
    }
    return 1;
}

/* Writes NAME.gp: `setup` lines, then `plot` + the plot clauses (NULL-terminated), skipping
 * clauses whose data file (the first quoted word) is not in `dir`. Returns 0 on error, -1 if
 * no clause is left (no figure). */
static int write_gp(const char *dir, const char *name, const char *size, const char *setup,
                    const char *const *clauses) {
    char path[4400], gp[128];
    int kept = 0;
    snprintf(gp, sizeof gp, "%s.gp", name);
    for (int k = 0; clauses[k]; ++k) {
        char file[256] = "";
        const char *q = clauses[k][0] == '\'' ? clauses[k] : NULL; /* a data file */
        const char *e = q ? strchr(q + 1, '\'') : NULL;
        if (q && e && (size_t)(e - q - 1) < sizeof file) {
            memcpy(file, q + 1, (size_t)(e - q - 1));
            file[e - q - 1] = '\0';
        }
        snprintf(path, sizeof path, "%s/%s", dir, file);
        struct stat sb;
        if (file[0] && strcmp(file, "+") != 0 && stat(path, &sb) == 0) ++kept;
    }
    if (kept == 0) return -1;
    FILE *f = open_in(dir, gp, path, sizeof path);
    if (!f) return 0;
    fprintf(f,
            "# %s.png from the .dat files of this folder; written by `pbf validate`.\n"
            "# Redraw: cd into this folder, then `gnuplot %s.gp`.\n"
            "set terminal pngcairo size %s noenhanced font \",11\"\n"
            "set output '%s.png'\n"
            "set grid\n"
            "set key box opaque\n"
            "%s\n",
            name, name, size, name, setup);
    int first = 1;
    for (int k = 0; clauses[k]; ++k) {
        char file[256] = "";
        const char *q = clauses[k][0] == '\'' ? clauses[k] : NULL; /* a data file */
        const char *e = q ? strchr(q + 1, '\'') : NULL;
        if (q && e && (size_t)(e - q - 1) < sizeof file) {
            memcpy(file, q + 1, (size_t)(e - q - 1));
            file[e - q - 1] = '\0';
        }
        char p2[4400];
        snprintf(p2, sizeof p2, "%s/%s", dir, file);
        struct stat sb;
        if (file[0] && strcmp(file, "+") != 0 && stat(p2, &sb) != 0) continue;
        fprintf(f, "%s%s", first ? "plot " : ", \\\n     ", clauses[k]);
        first = 0;
    }
    fputs("\n", f);
    if (strstr(setup, "set multiplot")) fputs("unset multiplot\n", f);
    return close_checked(f, path);
}

/* "plot A, B, ..." of the clauses whose data file (the first quoted word) is in dir, as write_gp
 * keeps them: the first panel of a multiplot figure, written into its setup lines. */
static void plot_command(const char *dir, const char *const *clauses, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; clauses[k]; ++k) {
        char file[256] = "", p2[4400];
        const char *q = clauses[k][0] == '\'' ? clauses[k] : NULL;
        const char *e = q ? strchr(q + 1, '\'') : NULL;
        if (q && e && (size_t)(e - q - 1) < sizeof file) {
            memcpy(file, q + 1, (size_t)(e - q - 1));
            file[e - q - 1] = '\0';
        }
        snprintf(p2, sizeof p2, "%s/%s", dir, file);
        struct stat sb;
        if (file[0] && stat(p2, &sb) != 0) continue;
        int n =
            snprintf(buf + used, size - used, "%s%s", used ? ", \\\n     " : "plot ", clauses[k]);
        if (n < 0 || (size_t)n >= size - used) break;
        used += (size_t)n;
    }
}

static int figure(figure_list *fl, const char *dir, const char *name, const char *size,
                  const char *setup, const char *const *clauses) {
    int r = write_gp(dir, name, size, setup, clauses);
    if (r == 0) return 0;
    if (r > 0 && fl->count < MAX_FIGS) snprintf(fl->name[fl->count++], 64, "%s", name);
    return 1;
}

int has_figure(const figure_list *fl, const char *name) {
    for (int k = 0; k < fl->count; ++k)
        if (strcmp(fl->name[k], name) == 0) return 1;
    return 0;
}

typedef enum fig_kind {
    FIG_PLAIN,   /* the clauses as given */
    FIG_SHIFTED, /* and the reference run's front, shifted by its fitted dT (write_figures) */
    FIG_RELEASE  /* column release: two panels (column_release) */
} fig_kind;

/* A figure: NAME.png, its size, the gnuplot set-up lines and the plot clauses; a clause whose
 * data file is not there is left out, and a figure with none is not drawn. */
typedef struct figure_row {
    const char *name, *size, *setup;
    const char *clauses[10]; /* NULL-terminated */
    fig_kind kind;
} figure_row;

static const figure_row FIGURES[] = {
    {"hydro_density",
     "1000,600",
     "set title 'Hydrostatic column: density error over time (4 iterations)'\n"
     "set xlabel 't (s)'\nset ylabel 'density error (%)'\nset logscale y\n"
     "set key outside right",
     {
         "'hydro_n18_it4.dat' using 1:2 title 'avg, n = 18' with lines lw 2 lc 1",
         "'hydro_n36_it4.dat' using 1:2 title 'avg, n = 36' with lines lw 2 lc 2",
         "'hydro_n72_it4.dat' using 1:2 title 'avg, n = 72' with lines lw 2 lc 3",
         "'hydro_n18_it4.dat' using 1:3 title 'max, n = 18' with lines dt 2 lc 1",
         "'hydro_n36_it4.dat' using 1:3 title 'max, n = 36' with lines dt 2 lc 2",
         "'hydro_n72_it4.dat' using 1:3 title 'max, n = 72' with lines dt 2 lc 3",
         "0.5 title 'target avg 0.5 %' with lines lc rgb 'black' dt 3",
         "3.0 title 'target max 3 %' with lines lc rgb 'gray30' dt 4",
     },
     FIG_PLAIN},
    {"hydro_iterations",
     "1000,600",
     "set title 'Hydrostatic column: density error vs solver iterations (n = 36)'\n"
     "set xlabel 't (s)'\nset ylabel 'density error (%)'\nset logscale y\n"
     "set key outside right",
     {
         "'hydro_n36_it2.dat' using 1:2 title 'avg, 2 it' with lines lw 2 lc 1",
         "'hydro_n36_it4.dat' using 1:2 title 'avg, 4 it' with lines lw 2 lc 2",
         "'hydro_n36_it8.dat' using 1:2 title 'avg, 8 it' with lines lw 2 lc 3",
         "'hydro_n36_it16.dat' using 1:2 title 'avg, 16 it' with lines lw 2 lc 4",
         "'hydro_n36_it2.dat' using 1:3 title 'max, 2 it' with lines dt 2 lc 1",
         "'hydro_n36_it4.dat' using 1:3 title 'max, 4 it' with lines dt 2 lc 2",
         "'hydro_n36_it8.dat' using 1:3 title 'max, 8 it' with lines dt 2 lc 3",
         "'hydro_n36_it16.dat' using 1:3 title 'max, 16 it' with lines dt 2 lc 4",
     },
     FIG_PLAIN},
    {"hydro_profile",
     "900,700",
     "set title 'Hydrostatic column: settled density against height (final state)'\n"
     "set ylabel 'height y / H0 (H0: height of the initial volume)'\n"
     "set xlabel 'mean density of a layer / rest density'\n"
     "set yrange [0:1.15]\nset xrange [0.9:1.04]\nset samples 101\n"
     "set key bottom left",
     {
         "'hydro_n18_it4_profile.dat' using 2:1 title 'rho/rho0, n = 18' with linespoints "
         "pt 7 ps 0.6 lc 1",
         "'hydro_n36_it4_profile.dat' using 2:1 title 'rho/rho0, n = 36' with linespoints "
         "pt 7 ps 0.5 lc 2",
         "'hydro_n72_it4_profile.dat' using 2:1 title 'rho/rho0, n = 72' with linespoints "
         "pt 7 ps 0.4 lc 3",
         "'+' using (1):($0/100.0*1.2) title 'hydrostatic expectation (incompressible): "
         "rho0' with lines lw 2 lc rgb 'black' dt 2",
     },
     FIG_PLAIN},
    {"hydro_surface",
     "1000,600",
     "set title 'Hydrostatic column: free-surface height (4 iterations unless "
     "named)'\nset xlabel 't (s)'\n"
     "set ylabel 'surface height - H0, % of H0'\nset yrange [-3:3]\n"
     "set key outside right",
     {
         "'hydro_n18_it4.dat' using 1:7 title 'surface, n = 18' with lines lw 2 lc 1",
         "'hydro_n36_it4.dat' using 1:7 title 'surface, n = 36' with lines lw 2 lc 2",
         "'hydro_n72_it4.dat' using 1:7 title 'surface, n = 72' with lines lw 2 lc 3",
         "'hydro_n36_it8.dat' using 1:7 title 'surface, n = 36, 8 it' with lines dt 2 lc 4",
         "'hydro_n36_it16.dat' using 1:7 title 'surface, n = 36, 16 it' with lines dt 2 lc 5",
         "1 title 'target +-1 %' with lines lc rgb 'black' dt 3",
         "-1 notitle with lines lc rgb 'black' dt 3",
     },
     FIG_PLAIN},
    {"hydro_speed",
     "1000,600",
     "set title 'Hydrostatic column: residual speed (4 iterations)'\n"
     "set xlabel 't (s)'\nset ylabel 'speed / sqrt(g H0) (%)'\nset logscale y\n"
     "set key outside right",
     {
         "'hydro_n18_it4.dat' using 1:($8*100) title 'max, n = 18' with lines lc 1",
         "'hydro_n36_it4.dat' using 1:($8*100) title 'max, n = 36' with lines lc 2",
         "'hydro_n72_it4.dat' using 1:($8*100) title 'max, n = 72' with lines lc 3",
         "'hydro_n18_it4.dat' using 1:($9*100) title 'mean, n = 18' with lines lw 2 dt 2 lc 1",
         "'hydro_n36_it4.dat' using 1:($9*100) title 'mean, n = 36' with lines lw 2 dt 2 lc 2",
         "'hydro_n72_it4.dat' using 1:($9*100) title 'mean, n = 72' with lines lw 2 dt 2 lc 3",
         "1 title 'target 1 %' with lines lc rgb 'black' dt 3",
     },
     FIG_PLAIN},
    {"dam_front",
     "1000,650",
     "set title 'Dam break: surge front (4 iterations)'\n"
     "set xlabel 'T = t sqrt(2g/L)'\nset ylabel 'Z = front / L'\n"
     "set xrange [0:3.5]\nset yrange [0.9:5]\nset key top left",
     {
         "'ko_experiment.dat' using 1:2 title 'Koshizuka & Oka 1996 (experiment)' with "
         "points pt 5 ps 1.4 lc rgb 'black'",
         "'mm_experiment.dat' index 0 using 1:2 title 'Martin & Moyce 1952, a = 2.25 in' with "
         "points pt 7 ps 1.2 lc rgb 'gray30'",
         "'mm_experiment.dat' index 1 using 1:2 title 'Martin & Moyce 1952, a = 1.125 in' with "
         "points pt 6 ps 1.2 lc rgb 'gray30'",
         "1+2*x title 'Ritter (inviscid shallow water): Z = 1 + 2T' with lines lc rgb "
         "'gray40' dt 2",
         "'dam_n18_it4.dat' using 2:3 title 'pbf n = 18' with lines lw 2 lc 1",
         "'dam_n36_it4.dat' using 2:3 title 'pbf n = 36' with lines lw 2 lc 2",
         "'dam_n72_it4.dat' using 2:3 title 'pbf n = 72' with lines lw 2 lc 3",
     },
     FIG_SHIFTED},
    {"dam_front_iterations",
     "1000,650",
     "set title 'Dam break: surge front vs solver iterations (n = 36; dashed n = 18)'\n"
     "set xlabel 'T = t sqrt(2g/L)'\nset ylabel 'Z = front / L'\n"
     "set xrange [0:3.5]\nset yrange [0.9:5]\nset key top left",
     {
         "'ko_experiment.dat' using 1:2 title 'Koshizuka & Oka 1996 (experiment)' with "
         "points pt 5 ps 1.4 lc rgb 'black'",
         "'dam_n36_it2.dat' using 2:3 title '2 iterations' with lines lw 2 lc 1",
         "'dam_n36_it4.dat' using 2:3 title '4 iterations' with lines lw 2 lc 2",
         "'dam_n36_it8.dat' using 2:3 title '8 iterations' with lines lw 2 lc 3",
         "'dam_n36_it16.dat' using 2:3 title '16 iterations' with lines lw 2 lc 4",
         "'dam_n18_it2.dat' using 2:3 title '2 iterations (n = 18)' with lines lc 1 dt 2",
         "'dam_n18_it16.dat' using 2:3 title '16 iterations (n = 18)' with lines lc 4 dt 2",
     },
     FIG_PLAIN},
    {"dam_column",
     "1000,600",
     "set title 'Dam break: residual column height at the back wall'\n"
     "set xlabel 'T = t sqrt(2g/L)'\nset ylabel 'height / initial height 2L'\n"
     "set xrange [0:3.5]\nset yrange [0:1.05]\nset key top right",
     {
         "'dam_n18_it4.dat' using 2:4 title 'n = 18' with lines lw 2 lc 1",
         "'dam_n36_it4.dat' using 2:4 title 'n = 36' with lines lw 2 lc 2",
         "'dam_n72_it4.dat' using 2:4 title 'n = 72' with lines lw 2 lc 3",
     },
     FIG_PLAIN},
    {"column_release", "1400,600", NULL, {NULL}, FIG_RELEASE},
    {"edges",
     "900,600",
     "set title 'Walls and edges: highest particle at a side wall above the "
     "liquid beside it (dam break L deep)'\n"
     "set xlabel 'T = t sqrt(2g/L)'\nset ylabel 'climb (particle radii r)'\n"
     "set key top left",
     {
         "'edges_n18_it4.dat' using 2:13 title 'n = 18' with lines lw 2 lc 1",
         "'edges_n36_it4.dat' using 2:13 title 'n = 36' with lines lw 2 lc 2",
         "2 title 'target: at most 2 r' with lines lc rgb 'black' dt 3",
     },
     FIG_PLAIN},
    {"dam_density",
     "1000,600",
     "set title 'Dam break: average density error vs solver iterations'\n"
     "set xlabel 'T = t sqrt(2g/L)'\nset ylabel 'average density error (%)'\n"
     "set xrange [0:3.5]\nset logscale y\nset key outside right",
     {
         "'dam_n36_it2.dat' using 2:5 title 'avg, 2 it' with lines lw 2 lc 1",
         "'dam_n36_it4.dat' using 2:5 title 'avg, 4 it' with lines lw 2 lc 2",
         "'dam_n36_it8.dat' using 2:5 title 'avg, 8 it' with lines lw 2 lc 3",
         "'dam_n36_it16.dat' using 2:5 title 'avg, 16 it' with lines lw 2 lc 4",
         "'dam_n18_it2.dat' using 2:5 title 'avg, 2 it (n = 18)' with lines dt 2 lc 1",
         "'dam_n18_it4.dat' using 2:5 title 'avg, 4 it (n = 18)' with lines dt 2 lc 2",
         "'dam_n18_it8.dat' using 2:5 title 'avg, 8 it (n = 18)' with lines dt 2 lc 3",
         "'dam_n18_it16.dat' using 2:5 title 'avg, 16 it (n = 18)' with lines dt 2 lc 4",
     },
     FIG_PLAIN},
    {"energy",
     "1000,600",
     "set title 'Dam break: energy (kinetic + potential from the floor) / initial'\n"
     "set xlabel 't (s)'\nset ylabel 'E / E(0)'\nset yrange [0:1.05]\n"
     "set key outside right",
     {
         "'dam_n36_it4_vort0.dat' using 1:10 title 'E, vorticity 0 (n = 36)' with lines lw 2 "
         "lc 1",
         "'dam_n36_it4.dat' using 1:10 title 'E, vorticity 0.01 (n = 36)' with lines lw 2 lc 2",
         "'dam_n18_it4_vort0.dat' using 1:10 title 'E, vorticity 0 (n = 18)' with lines dt 2 "
         "lc 1",
         "'dam_n18_it4.dat' using 1:10 title 'E, vorticity 0.01 (n = 18)' with lines dt 2 lc 2",
         "'dam_n36_it4_vort0.dat' using 1:8 title 'kinetic, vorticity 0 (n = 36)' with lines "
         "lc 3",
         "'dam_n36_it4_vort0.dat' using 1:9 title 'potential, vorticity 0 (n = 36)' with "
         "lines lc 4",
     },
     FIG_PLAIN},
};

/* column release: the top at the back wall (left), the front (right), T <= 2 */
static int column_release(const char *dir, figure_list *fl) {
    const char *top[] = {
        "'dam_n18_it4.dat' using 2:11 title 'top at the wall, n = 18' with lines lw 2 lc 1",
        "'dam_n36_it4.dat' using 2:11 title 'top at the wall, n = 36' with lines lw 2 lc 2",
        "'dam_n72_it4.dat' using 2:11 title 'top at the wall, n = 72' with lines lw 2 lc 3",
        "'dam_n18_it4.dat' using 2:12 title 'column (no lone particles), n = 18' with lines "
        "dt 2 lc 1",
        "'dam_n36_it4.dat' using 2:12 title 'column (no lone particles), n = 36' with lines "
        "dt 2 lc 2",
        "'dam_n72_it4.dat' using 2:12 title 'column (no lone particles), n = 72' with lines "
        "dt 2 lc 3",
        "0.5 title 'target: at most +0.5 r' with lines lc rgb 'black' dt 3",
        NULL};
    char first[2048], setup[3072];
    plot_command(dir, top, first, sizeof first);
    snprintf(setup, sizeof setup,
             "set multiplot layout 1,2 title 'Column release: the column at the back wall "
             "after the release (4 iterations)'\n"
             "set title 'height at the back wall - initial height'\n"
             "set xlabel 'T = t sqrt(2g/L)'\nset ylabel 'rise (particle radii r)'\n"
             "set xrange [0:%.1f]\nset yrange [-6:2]\nset key bottom left\n%s\n"
             "set title 'surge front'\nset ylabel 'Z = front / L'\nset yrange [0.9:5]\n"
             "set key top left",
             RELEASE_T, first);
    const char *c[] = {
        "'ko_experiment.dat' using 1:2 title 'Koshizuka & Oka 1996' with points pt 5 ps 1.2 "
        "lc rgb 'black'",
        "1+2*x title 'Ritter: Z = 1 + 2T' with lines lc rgb 'gray40' dt 2",
        "'dam_n18_it4.dat' using 2:3 title 'n = 18' with lines lw 2 lc 1",
        "'dam_n36_it4.dat' using 2:3 title 'n = 36' with lines lw 2 lc 2",
        "'dam_n72_it4.dat' using 2:3 title 'n = 72' with lines lw 2 lc 3",
        NULL};
    if (first[0] && !figure(fl, dir, "column_release", "1400,600", setup, c)) return 0;
    return 1;
}

int write_figures(const char *dir, figure_list *fl, int ref_n, double ref_shift) {
    fl->count = 0;
    char shifted[256];
    snprintf(shifted, sizeof shifted,
             "'dam_n%d_it4.dat' using ($2+%.3f):3 title 'pbf n = %d, shifted by dT = %+.3f' "
             "with lines dt 2 lw 2 lc rgb 'black'",
             ref_n, ref_shift, ref_n, ref_shift);
    for (size_t i = 0; i < sizeof FIGURES / sizeof FIGURES[0]; ++i) {
        const figure_row *g = &FIGURES[i];
        if (g->kind == FIG_RELEASE) {
            if (!column_release(dir, fl)) return 0;
            continue;
        }
        const char *c[12];
        int k = 0;
        for (; g->clauses[k]; ++k) c[k] = g->clauses[k];
        c[k++] = g->kind == FIG_SHIFTED && ref_n > 0 ? shifted : NULL;
        c[k] = NULL;
        if (!figure(fl, dir, g->name, g->size, g->setup, c)) return 0;
    }
    return 1;
}
