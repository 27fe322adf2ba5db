# The OpenCL backend against the CPU backend (tests/test_opencl.c): one step, a dam break, boxes
# and a moving wall, determinism, snapshots across backends, the non-finite guard, device errors;
# WCSPH, DFSPH, PCISPH, IISPH and PBF's tolerance stop against the CPU, step by step.
# Included by tests/CMakeLists.txt; registered when the backend is built (cmake/opencl.cmake);
# exits 77 (ctest: skipped, with the reason) where no OpenCL device can be opened.
if(PBF_HAVE_OPENCL)
  pbf_add_test(test_opencl LABELS unit opencl TIMEOUT 600)
  set_tests_properties(test_opencl PROPERTIES SKIP_RETURN_CODE 77)
endif()
