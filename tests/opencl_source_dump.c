/* Prints the kernel source the OpenCL backend hands to clBuildProgram (the embedded copy of
 * src/backends/gpu/pbf_kernels.cl and its headers), for tests/run_opencl_c_strict.sh. */
#include <stddef.h>
#include <stdio.h>

extern const char *const pbf_opencl_kernel_lines[];
extern const size_t pbf_opencl_kernel_line_count;

int main(void) {
    for (size_t i = 0; i < pbf_opencl_kernel_line_count; ++i)
        if (fputs(pbf_opencl_kernel_lines[i], stdout) == EOF) return 1;
    return fflush(stdout) == 0 ? 0 : 1;
}
