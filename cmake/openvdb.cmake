# OpenVDB level sets for `pbf mesh --format vdb` and `pbf run --mesh-format vdb`
# (app/io/vdb_writer.cpp), optional: built when PBF_OPENVDB is ON, a C++17 compiler is there and
# OpenVDB's header and library are found with the libraries its headers need (TBB, Imath);
# Debian 12: libopenvdb-dev (scripts/setup-debian.sh --with-openvdb). Included by the top-level
# CMakeLists.txt before app/. Sets PBF_HAVE_OPENVDB (ON/OFF) and, when ON, the interface target
# pbf_openvdb (linked only by the module pbf_vdb.so and tests/vdb_check.cpp); otherwise app/io/vdb.c
# refuses the format with a message.
#
# OpenVDB's own FindOpenVDB.cmake is not used: on Debian 12 it stops the configure with an
# error unless Boost's CMake packages of libboost-iostreams-dev are installed, which
# libopenvdb-dev does not pull in. The headers are found as SYSTEM headers, so their warnings
# stay out of pbf's -Wall -Wextra -Wpedantic (-Werror) builds. Only app/ uses C++; the library
# (src/) stays C.

set(PBF_HAVE_OPENVDB OFF)
set(_pbf_vdb_why "")
if(NOT PBF_OPENVDB)
  set(_pbf_vdb_why "-DPBF_OPENVDB=OFF")
else()
  include(CheckLanguage)
  check_language(CXX)
  if(NOT CMAKE_CXX_COMPILER)
    set(_pbf_vdb_why "no C++ compiler")
  else()
    find_path(PBF_OPENVDB_INCLUDE_DIR openvdb/openvdb.h)
    find_library(PBF_OPENVDB_LIBRARY openvdb)
    find_package(PkgConfig QUIET)
    if(PkgConfig_FOUND)
      pkg_check_modules(PBF_TBB QUIET IMPORTED_TARGET tbb)
      pkg_check_modules(PBF_IMATH QUIET IMPORTED_TARGET Imath)
    endif()
    if(NOT PBF_OPENVDB_INCLUDE_DIR OR NOT PBF_OPENVDB_LIBRARY)
      set(_pbf_vdb_why "openvdb/openvdb.h or libopenvdb not found")
    elseif(NOT TARGET PkgConfig::PBF_TBB OR NOT TARGET PkgConfig::PBF_IMATH)
      set(_pbf_vdb_why "OpenVDB found but not TBB or Imath (pkg-config tbb, Imath)")
    endif()
  endif()
endif()

if(NOT _pbf_vdb_why)
  enable_language(CXX)
  set(CMAKE_CXX_STANDARD 17)
  set(CMAKE_CXX_STANDARD_REQUIRED ON)
  set(CMAKE_CXX_EXTENSIONS OFF)
  # Link check with the smallest header (openvdb.h alone takes seconds to compile): the library
  # and the libraries it needs are usable.
  include(CheckCXXSourceCompiles)
  set(CMAKE_REQUIRED_INCLUDES ${PBF_OPENVDB_INCLUDE_DIR} ${PBF_IMATH_INCLUDE_DIRS}
      ${PBF_TBB_INCLUDE_DIRS})
  set(CMAKE_REQUIRED_LIBRARIES ${PBF_OPENVDB_LIBRARY} ${PBF_TBB_LINK_LIBRARIES}
      ${PBF_IMATH_LINK_LIBRARIES})
  set(CMAKE_REQUIRED_QUIET ON)
  check_cxx_source_compiles("#include <openvdb/version.h>
namespace openvdb { OPENVDB_USE_VERSION_NAMESPACE namespace OPENVDB_VERSION_NAME {
void initialize(); } }
int main() { openvdb::initialize(); return 0; }" PBF_OPENVDB_LINKS)
  unset(CMAKE_REQUIRED_INCLUDES)
  unset(CMAKE_REQUIRED_LIBRARIES)
  unset(CMAKE_REQUIRED_QUIET)
  if(NOT PBF_OPENVDB_LINKS)
    set(_pbf_vdb_why "a program using ${PBF_OPENVDB_LIBRARY} does not link (see CMakeError.log)")
  endif()
endif()

if(NOT _pbf_vdb_why)
  set(PBF_HAVE_OPENVDB ON)
  add_library(pbf_openvdb INTERFACE)
  target_include_directories(pbf_openvdb SYSTEM INTERFACE ${PBF_OPENVDB_INCLUDE_DIR})
  target_link_libraries(pbf_openvdb INTERFACE ${PBF_OPENVDB_LIBRARY} PkgConfig::PBF_TBB
                        PkgConfig::PBF_IMATH)
  # C++ warnings as for C (only the OpenVDB writer and its test are C++)
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-Wall;-Wextra;-Wpedantic>")
  if(PBF_WERROR)
    add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-Werror>")
  endif()
  file(STRINGS ${PBF_OPENVDB_INCLUDE_DIR}/openvdb/version.h _pbf_vdb_v
       REGEX "^#define OPENVDB_LIBRARY_(MAJOR|MINOR|PATCH)_VERSION_NUMBER ")
  string(REGEX REPLACE "[^0-9;]" "" _pbf_vdb_v "${_pbf_vdb_v}")
  string(REPLACE ";" "." _pbf_vdb_v "${_pbf_vdb_v}")
  message(STATUS "pbf OpenVDB: ON (${PBF_OPENVDB_LIBRARY} ${_pbf_vdb_v}): pbf mesh --format vdb "
                 "writes level sets")
else()
  message(STATUS "pbf OpenVDB: OFF, the vdb mesh format is skipped (${_pbf_vdb_why}; "
                 "Debian: bash scripts/setup-debian.sh --with-openvdb)")
endif()
