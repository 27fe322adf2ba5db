# The OpenCL backend against the CPU backend (tests/test_opencl.c): one step, a dam break, boxes
# and a moving wall, determinism, snapshots across backends, the non-finite guard, device errors;
# WCSPH, DFSPH, PCISPH, IISPH and PBF's tolerance stop against the CPU, step by step.
# Included by tests/CMakeLists.txt; registered when the backend is built (cmake/opencl.cmake);
# exits 77 (ctest: skipped, with the reason) where no OpenCL device can be opened.
if(PBF_HAVE_OPENCL)
  pbf_add_test(test_opencl LABELS unit opencl TIMEOUT 600)
  set_tests_properties(test_opencl PROPERTIES SKIP_RETURN_CODE 77)
endif()

# The kernel source as strict OpenCL C 1.2 (clang's OpenCL front end, -Werror=pedantic): the
# extensions PoCL accepts and a GPU driver's compiler may not (NVIDIA's refuses variadic macros).
# Skipped without clang.
if(PBF_HAVE_OPENCL)
  add_executable(opencl_source_dump opencl_source_dump.c
                 ${PROJECT_BINARY_DIR}/generated/pbf_kernels_cl.c)
  # the embedded copy is made by the library's target (cmake/opencl.cmake): build it first
  set_source_files_properties(${PROJECT_BINARY_DIR}/generated/pbf_kernels_cl.c PROPERTIES GENERATED TRUE)
  add_dependencies(opencl_source_dump pbf)
  find_program(PBF_CLANG NAMES clang clang-16 clang-15 clang-14)
  if(PBF_CLANG)
    add_test(NAME opencl_c_strict COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_opencl_c_strict.sh
                                          $<TARGET_FILE:opencl_source_dump> ${PBF_CLANG})
  else()
    add_test(NAME opencl_c_strict COMMAND sh -c "echo 'opencl_c_strict: no clang found'; exit 77")
  endif()
  set_tests_properties(opencl_c_strict PROPERTIES SKIP_RETURN_CODE 77)
  pbf_test_properties(opencl_c_strict LABELS unit opencl TIMEOUT 120)
endif()
