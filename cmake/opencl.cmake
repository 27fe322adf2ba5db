# The OpenCL backend (src/backends/opencl/), optional: built when the OpenCL headers and an ICD
# loader are found and PBF_OPENCL is ON (Debian: opencl-headers ocl-icd-opencl-dev; a device at
# run time needs an ICD, e.g. pocl-opencl-icd for the CPU). Included by the top-level
# CMakeLists.txt after the `pbf` library target is defined. Sets PBF_HAVE_OPENCL (ON/OFF) for
# tests/CMakeLists.txt and tests/opencl.cmake.
#
# The kernel source (src/backends/gpu/pbf_kernels.cl, with the methods' kernels it includes from
# src/solvers/*/*.cl through the generated list of cmake/solvers.cmake) and the headers it
# includes are embedded into the library as C strings at build time
# (src/backends/opencl/embed_kernels.cmake, which looks for an include next to the including file,
# then in src/ and in the build's generated/ folder), so the library needs no file of the source
# tree at run time.

if(NOT PBF_OPENCL)
  set(PBF_HAVE_OPENCL OFF)
  message(STATUS "pbf: OpenCL backend off (-DPBF_OPENCL=OFF)")
  return()
endif()
find_package(OpenCL QUIET)
if(OpenCL_FOUND)
  set(PBF_HAVE_OPENCL ON)
  set(_pbf_cl_dir ${PROJECT_SOURCE_DIR}/src/backends)
  set(_pbf_cl_embedded ${PROJECT_BINARY_DIR}/generated/pbf_kernels_cl.c)
  # every header the kernel source may include (the embedding follows its #include "..." lines)
  file(GLOB _pbf_cl_headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/sph/*.h
       ${_pbf_cl_dir}/gpu/*.h ${_pbf_cl_dir}/gpu/*.cl ${PROJECT_SOURCE_DIR}/src/solvers/*/*.cl
       ${PROJECT_SOURCE_DIR}/src/solvers/*/*_formulas.h
       ${PROJECT_SOURCE_DIR}/src/solvers/*/*_kernels.h)
  # the folders' lists (cmake/solvers.cmake)
  list(APPEND _pbf_cl_headers ${PBF_GENERATED_DIR}/pbf_solver_kernels.h
       ${PBF_GENERATED_DIR}/pbf_solver_kernels.cl)
  add_custom_command(
    OUTPUT ${_pbf_cl_embedded}
    COMMAND ${CMAKE_COMMAND} -DPBF_CL_INPUT=src/backends/gpu/pbf_kernels.cl
            -DPBF_CL_ROOT=${PROJECT_SOURCE_DIR} -DPBF_CL_OUTPUT=${_pbf_cl_embedded}
            "-DPBF_CL_INCLUDE_DIRS=${PROJECT_SOURCE_DIR}/src;${PBF_GENERATED_DIR}"
            -P ${_pbf_cl_dir}/opencl/embed_kernels.cmake
    DEPENDS ${_pbf_cl_headers} ${_pbf_cl_dir}/opencl/embed_kernels.cmake
    COMMENT "Embedding the OpenCL kernels (src/backends/gpu/pbf_kernels.cl)"
    VERBATIM)
  target_sources(pbf PRIVATE ${_pbf_cl_dir}/opencl/opencl.c ${_pbf_cl_embedded})
  target_compile_definitions(pbf PRIVATE PBF_HAVE_OPENCL=1)
  target_link_libraries(pbf PRIVATE OpenCL::OpenCL)
  message(STATUS "pbf: OpenCL backend enabled (${OpenCL_LIBRARIES}, OpenCL ${OpenCL_VERSION_STRING} headers)")
else()
  set(PBF_HAVE_OPENCL OFF)
  message(STATUS "pbf: OpenCL not found (headers and ICD loader: apt-get install opencl-headers "
                 "ocl-icd-opencl-dev): the OpenCL backend is skipped")
endif()
