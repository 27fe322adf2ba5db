# Embeds the GPU kernel source into the library, for the OpenCL backend (cmake/opencl.cmake runs
# this at build time):
#
#   cmake -DPBF_CL_INPUT=src/backends/gpu/pbf_kernels.cl -DPBF_CL_ROOT=<source dir>
#         "-DPBF_CL_INCLUDE_DIRS=<source dir>/src;<build dir>/generated"
#         -DPBF_CL_OUTPUT=<build dir>/generated/pbf_kernels_cl.c -P embed_kernels.cmake
#
# An OpenCL compiler sees only the strings it is given, never the files of the source tree, so
# every `#include "..."` of the kernel source is replaced by the text of the included file
# (recursively, each occurrence: kernel_formulas.h is meant to be included more than once), with
# #line directives so that build logs name the original files and lines. A name is looked for as
# a C compiler looks for it: relative to the including file, then in each folder of
# PBF_CL_INCLUDE_DIRS in order (optional; the build's generated/ folder holds the list of the
# methods' kernels, cmake/solvers.cmake, whose own includes are relative to src/). #line names a
# file of the source tree relative to PBF_CL_ROOT, any other by the last part of its search folder
# (generated/pbf_solver_kernels.cl). `#include <...>` lines are kept (the headers use them only
# outside OpenCL C). The result is a C array of string literals, one per line (no literal over the
# 4095 characters C requires compilers to support): the host hands them all to
# clCreateProgramWithSource.
#
# CMake lists split at ';' and treat '[', ']' and '\' specially, so those characters are swapped
# for control characters while the text is handled as a list of lines, and swapped back per line.

string(ASCII 1 _semi)
string(ASCII 2 _lbr)
string(ASCII 3 _rbr)
string(ASCII 4 _bsl)

# The file an `#include "name"` of a file in `dir` means (as above) into ${out_var}, and the name
# #line gives it into ${rel_var}; fails when there is none.
function(pbf_cl_find name dir from out_var rel_var)
  set(found "")
  foreach(d IN ITEMS "${dir}" ${PBF_CL_INCLUDE_DIRS})
    get_filename_component(inc "${name}" ABSOLUTE BASE_DIR "${d}")
    if(EXISTS "${inc}" AND NOT IS_DIRECTORY "${inc}")
      set(found "${inc}")
      set(base "${d}")
      break()
    endif()
  endforeach()
  if(NOT found)
    message(FATAL_ERROR "embed_kernels: ${from}: cannot find \"${name}\" (next to it, nor in "
                        "PBF_CL_INCLUDE_DIRS: ${PBF_CL_INCLUDE_DIRS})")
  endif()
  get_filename_component(root "${PBF_CL_ROOT}" ABSOLUTE)
  string(FIND "${found}" "${root}/" at)
  if(at EQUAL 0)
    file(RELATIVE_PATH rel "${root}" "${found}")
  else()
    get_filename_component(base "${base}" ABSOLUTE)
    get_filename_component(base_name "${base}" NAME)
    file(RELATIVE_PATH rel "${base}" "${found}")
    set(rel "${base_name}/${rel}")
  endif()
  set(${out_var} "${found}" PARENT_SCOPE)
  set(${rel_var} "${rel}" PARENT_SCOPE)
endfunction()

# Appends the C string literals of `file` (relative name `rel` for #line) to ${out_var}.
function(pbf_cl_inline file rel depth out_var)
  if(depth GREATER 16)
    message(FATAL_ERROR "embed_kernels: #include nesting deeper than 16 at ${file}")
  endif()
  if(NOT EXISTS "${file}")
    message(FATAL_ERROR "embed_kernels: cannot read ${file}")
  endif()
  file(READ "${file}" text)
  get_filename_component(dir "${file}" DIRECTORY)
  string(REPLACE "\r" "" text "${text}")
  string(REPLACE "\\" "${_bsl}" text "${text}")
  string(REPLACE ";" "${_semi}" text "${text}")
  string(REPLACE "[" "${_lbr}" text "${text}")
  string(REPLACE "]" "${_rbr}" text "${text}")
  string(REGEX REPLACE "\n$" "" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(out "${${out_var}}")
  string(APPEND out "\"#line 1 \\\"${rel}\\\"\\n\",\n")
  set(number 0)
  foreach(line IN LISTS lines)
    math(EXPR number "${number} + 1")
    if(line MATCHES "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\"")
      set(name "${CMAKE_MATCH_1}")
      pbf_cl_find("${name}" "${dir}" "${rel}:${number}" inc inc_rel)
      math(EXPR deeper "${depth} + 1")
      pbf_cl_inline("${inc}" "${inc_rel}" ${deeper} out)
      math(EXPR next "${number} + 1")
      string(APPEND out "\"#line ${next} \\\"${rel}\\\"\\n\",\n")
      continue()
    endif()
    string(REPLACE "${_bsl}" "\\\\" line "${line}")
    string(REPLACE "\"" "\\\"" line "${line}")
    string(REPLACE "?" "\\?" line "${line}") # no trigraphs
    string(REPLACE "${_semi}" ";" line "${line}")
    string(REPLACE "${_lbr}" "[" line "${line}")
    string(REPLACE "${_rbr}" "]" line "${line}")
    string(APPEND out "\"${line}\\n\",\n")
  endforeach()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

if(NOT PBF_CL_INPUT OR NOT PBF_CL_OUTPUT OR NOT PBF_CL_ROOT)
  message(FATAL_ERROR "embed_kernels: set PBF_CL_INPUT, PBF_CL_ROOT and PBF_CL_OUTPUT")
endif()
get_filename_component(_input "${PBF_CL_INPUT}" ABSOLUTE BASE_DIR "${PBF_CL_ROOT}")
file(RELATIVE_PATH _input_rel "${PBF_CL_ROOT}" "${_input}")
set(_body "")
pbf_cl_inline("${_input}" "${_input_rel}" 0 _body)
string(REGEX MATCHALL "\n" _newlines "${_body}")
list(LENGTH _newlines _count)

set(_c "/* Generated by src/backends/opencl/embed_kernels.cmake from ${_input_rel} and the headers it
 * includes: do not edit. */
#include <stddef.h>

extern const char *const pbf_opencl_kernel_lines[];
extern const size_t pbf_opencl_kernel_line_count;

const char *const pbf_opencl_kernel_lines[] = {
${_body}};
const size_t pbf_opencl_kernel_line_count = ${_count};
")
# rewrite only on change, so that the library is not rebuilt for nothing
if(EXISTS "${PBF_CL_OUTPUT}")
  file(READ "${PBF_CL_OUTPUT}" _old)
  if(_old STREQUAL _c)
    return()
  endif()
endif()
file(WRITE "${PBF_CL_OUTPUT}" "${_c}")
