/* Choosing a backend by device string, and the list of devices this machine has. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "pbf/params.h"

#if defined(PBF_HAVE_OPENCL)
pbf_status pbf_opencl_open(pbf_world *w, const char *spec, pbf_error *err);
int pbf_opencl_list(pbf_device_info *out, int max, char *note, size_t note_size);
int pbf_opencl_default_ids(char (*ids)[PBF_DEVICE_NAME_MAX], int max);
#endif
#if defined(PBF_HAVE_CUDA)
pbf_status pbf_cuda_open(pbf_world *w, const char *spec, pbf_error *err);
int pbf_cuda_list(pbf_device_info *out, int max, char *note, size_t note_size);
#endif

/* "opencl" -> "", "opencl:0.1" -> "0.1"; NULL if `device` is not `kind` or `kind:...` */
static const char *suffix(const char *device, const char *kind) {
    size_t n = strlen(kind);
    if (strncmp(device, kind, n) != 0) return NULL;
    if (device[n] == '\0') return device + n;
    if (device[n] == ':') return device + n + 1;
    return NULL;
}

/* The methods whose every stage the GPU backends run (their descriptors say so). */
static int gpu_runs(pbf_solver_kind solver) {
    const pbf_solver *m = pbf_solver_of(solver);
    return m && m->gpu; /* a method added later runs on the CPU until its kernels are written */
}

pbf_status pbf_backend_open(pbf_world *w, const char *device, pbf_error *err) {
    const char *d = device && device[0] ? device : "cpu";
    const char *spec;
    if (strcmp(d, "cpu") == 0) return pbf_cpu_open(w, err);
    /* The GPU backends run the solvers whose stages pbf_kernels.cl implements; any other is
     * refused by name until its kernels exist. */
    if (!gpu_runs(w->def.solver)) {
        size_t ns = 0;
        const pbf_solver_info *sv = pbf_solvers(&ns);
        const char *name = "?";
        char ported[128] = "";
        size_t used = 0;
        for (size_t i = 0; i < ns; ++i) {
            if (sv[i].kind == w->def.solver) name = sv[i].name;
            if (gpu_runs(sv[i].kind) && used < sizeof ported)
                used += (size_t)snprintf(ported + used, sizeof ported - used, "%s%s",
                                         used ? ", " : "", sv[i].name);
        }
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "world_def.solver = \"%s\": runs on device cpu only so far, not on \"%s\" "
                      "(the GPU backends run %s); use device cpu for it",
                      name, d, ported);
        return PBF_ERR_INVALID_ARGUMENT;
    }
    if ((spec = suffix(d, "opencl")) != NULL) {
#if defined(PBF_HAVE_OPENCL)
        return pbf_opencl_open(w, spec, err);
#else
        (void)spec;
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "device = \"%s\": this build has no OpenCL backend (configure "
                      "with the OpenCL headers and ICD loader installed: ocl-icd-opencl-dev)",
                      d);
        return PBF_ERR_INVALID_ARGUMENT;
#endif
    }
    if ((spec = suffix(d, "cuda")) != NULL) {
#if defined(PBF_HAVE_CUDA)
        return pbf_cuda_open(w, spec, err);
#else
        (void)spec;
        pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                      "device = \"%s\": this build has no CUDA backend (configure "
                      "where nvcc is found)",
                      d);
        return PBF_ERR_INVALID_ARGUMENT;
#endif
    }
    pbf_set_error(err, PBF_ERR_INVALID_ARGUMENT,
                  "device = \"%s\": unknown device; use cpu, opencl, "
                  "opencl:PLATFORM.DEVICE, cuda or cuda:N (`pbf devices` lists them)",
                  d);
    return PBF_ERR_INVALID_ARGUMENT;
}

static void append(char *note, size_t size, const char *text) {
    if (!note || size == 0) return;
    size_t used = strlen(note);
    if (used + 1 < size) snprintf(note + used, size - used, "%s%s", used ? "\n" : "", text);
}

int pbf_list_devices(pbf_device_info *out, int max, char *note, size_t note_size) {
    if (note && note_size) note[0] = '\0';
    int n = 0;
    pbf_device_info cpu;
    memset(&cpu, 0, sizeof cpu);
    snprintf(cpu.id, sizeof cpu.id, "cpu");
    snprintf(cpu.name, sizeof cpu.name, "host CPU (OpenMP)");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "model name", 10) == 0) {
                const char *c = strchr(line, ':');
                if (c) {
                    c += 1 + (c[1] == ' ');
                    snprintf(cpu.name, sizeof cpu.name, "%.*s", (int)strcspn(c, "\n"), c);
                }
                break;
            }
        }
        fclose(f);
    }
    snprintf(cpu.driver, sizeof cpu.driver, "OpenMP %d", _OPENMP);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    cpu.memory = pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    cpu.compute_units = cores > 0 ? (int)cores : 1;
    if (out && n < max) out[n] = cpu;
    n++;
#if defined(PBF_HAVE_OPENCL)
    n += pbf_opencl_list(out ? out + (n < max ? n : max) : NULL, max > n ? max - n : 0,
                         note, note_size);
#else
    append(note, note_size, "opencl: not built in (no OpenCL headers/ICD loader at configure time)");
#endif
#if defined(PBF_HAVE_CUDA)
    n += pbf_cuda_list(out ? out + (n < max ? n : max) : NULL, max > n ? max - n : 0, note,
                       note_size);
#else
    append(note, note_size, "cuda: not built in (nvcc not found at configure time)");
#endif
    return n;
}

void pbf_backend_note(char *note, size_t size, const char *text) { append(note, size, text); }

int pbf_backend_default_devices(const char *kind, char (*ids)[PBF_DEVICE_NAME_MAX], int max) {
#if defined(PBF_HAVE_OPENCL)
    if (strcmp(kind, "opencl") == 0) return pbf_opencl_default_ids(ids, max);
#endif
#if defined(PBF_HAVE_CUDA)
    if (strcmp(kind, "cuda") == 0) {
        int n = pbf_cuda_list(NULL, 0, NULL, 0);
        for (int k = 0; k < n && k < max; ++k) snprintf(ids[k], PBF_DEVICE_NAME_MAX, "cuda:%d", k);
        return n;
    }
#endif
    (void)kind;
    (void)ids;
    (void)max;
    return 0;
}
