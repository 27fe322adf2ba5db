# The CUDA backend (src/backends/cuda/cuda.cu): built when nvcc is found (on PATH, CUDACXX, or
# /usr/local/cuda/bin/nvcc). It compiles the same kernel source as the OpenCL backend
# (src/backends/gpu/pbf_kernels.cl) with the kernel math of src/sph/. Without a GPU the build
# still compiles and links it; its tests skip with the reason.
if(NOT PBF_CUDA)
  message(STATUS "CUDA backend: off (-DPBF_CUDA=OFF)")
  return()
endif()
if(NOT EXISTS ${PROJECT_SOURCE_DIR}/src/backends/cuda/cuda.cu)
  return()
endif()
if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  message(STATUS "CUDA backend: skipped (nvcc not found)")
  return()
endif()
# NVIDIA H100/H200 (Hopper, sm_90) by default; -DCMAKE_CUDA_ARCHITECTURES=80;90 for more
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 90)
endif()
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)
target_sources(pbf PRIVATE src/backends/cuda/cuda.cu)
target_compile_definitions(pbf PRIVATE PBF_HAVE_CUDA=1)
# no fused multiply-add, as -ffp-contract=off on the host: the CUDA results are then compared with
# the CPU's at the tolerance the tests state
target_compile_options(pbf PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--fmad=false>)
target_link_libraries(pbf PUBLIC CUDA::cudart_static)
set(PBF_HAVE_CUDA ON)
message(STATUS "CUDA backend: on (${CMAKE_CUDA_COMPILER}, architectures ${CMAKE_CUDA_ARCHITECTURES})")
