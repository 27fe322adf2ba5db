# The CUDA backend (src/backends/cuda/cuda.cu): built when nvcc is found (on PATH, CUDACXX, or
# /usr/local/cuda/bin/nvcc). It compiles the same kernel source as the OpenCL backend
# (src/backends/gpu/pbf_kernels.cl and the methods' src/solvers/*/*.cl it includes through the
# list cmake/solvers.cmake generates: its folder PBF_GENERATED_DIR is on the include path) with
# the kernel math of src/sph/. Without a GPU the build still compiles and links it; its tests skip
# with the reason.
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
# The kernels sum over neighbours in the CPU backend's SIMD lanes (src/simd.h: 8 with AVX, else
# 4); the host C code decides that with its own flags (-march=native under PBF_NATIVE), so ask the
# C compiler the same question here and give nvcc the answer.
include(CheckCSourceCompiles)
set(CMAKE_REQUIRED_FLAGS "")
if(PBF_NATIVE)
  set(CMAKE_REQUIRED_FLAGS "-march=native")
endif()
check_c_source_compiles("#ifndef __AVX__\n#error no AVX\n#endif\nint main(void) { return 0; }"
                        PBF_HOST_HAS_AVX)
unset(CMAKE_REQUIRED_FLAGS)
if(PBF_HOST_HAS_AVX)
  set(PBF_CUDA_LANES 8)
else()
  set(PBF_CUDA_LANES 4)
endif()
# An object library of its own: the library's C options (-fno-math-errno, ...) are not nvcc's.
add_library(pbf_cuda OBJECT src/backends/cuda/cuda.cu)
target_include_directories(pbf_cuda PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src
                                            ${PBF_GENERATED_DIR})
target_compile_definitions(pbf_cuda PRIVATE PBF_HAVE_CUDA=1 PBF_LANES=${PBF_CUDA_LANES})
# no fused multiply-add, as -ffp-contract=off on the host, and IEEE division and square root: the
# CUDA results are then compared with the CPU's at the tolerance the tests state
# (-maxrregcount=80: the neighbour kernels keep their lanes' sums in registers, up to 142 per
# thread; capped at 80 more of them run at once, and PBF's step at 1M particles on an NVIDIA H200
# measured 17.6 ms against 19.6 uncapped)
target_compile_options(pbf_cuda PRIVATE
                       $<$<COMPILE_LANGUAGE:CUDA>:--fmad=false;-prec-div=true;-prec-sqrt=true;-ftz=false;-maxrregcount=80>)
set_target_properties(pbf_cuda PROPERTIES POSITION_INDEPENDENT_CODE ON
                      CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}")
# `pbf` was created before CUDA was enabled: give it the architectures too (it links the objects)
set_target_properties(pbf PROPERTIES CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}")
target_link_libraries(pbf_cuda PRIVATE CUDA::cudart_static)
target_sources(pbf PRIVATE $<TARGET_OBJECTS:pbf_cuda>)
target_compile_definitions(pbf PRIVATE PBF_HAVE_CUDA=1)
target_link_libraries(pbf PUBLIC CUDA::cudart_static)
set(PBF_HAVE_CUDA ON)
message(STATUS "CUDA backend: on (${CMAKE_CUDA_COMPILER}, architectures ${CMAKE_CUDA_ARCHITECTURES}, ${PBF_CUDA_LANES} lanes)")
