# Writes OUT, a C header naming the commit the build was made from and whether the tree had
# uncommitted changes, at every build (not only at configure time); rewrites it only when that
# changes, so that an unchanged state recompiles nothing. `pbf validate` puts it in its report.
#
#   cmake -DSOURCE_DIR=DIR -DOUT=FILE [-DGIT=git] -P cmake/git_state.cmake
#
# PBF_GIT_COMMIT: the 12-digit commit, "" when the sources are not a git checkout.
# PBF_GIT_DIRTY: 1 tracked files differ from the commit, 0 they do not, -1 unknown.
set(commit "")
set(dirty -1)
if(GIT)
  execute_process(COMMAND ${GIT} rev-parse --short=12 HEAD
    WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE commit
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  if(rc EQUAL 0 AND commit)
    execute_process(COMMAND ${GIT} status --porcelain --untracked-files=no
      WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE changes ERROR_QUIET RESULT_VARIABLE rc)
    if(rc EQUAL 0)
      if(changes)
        set(dirty 1)
      else()
        set(dirty 0)
      endif()
    endif()
  else()
    set(commit "")
  endif()
endif()
set(content "/* Written at build time by cmake/git_state.cmake. */\n"
            "#define PBF_GIT_COMMIT \"${commit}\"\n"
            "#define PBF_GIT_DIRTY ${dirty}\n")
string(CONCAT content ${content})
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL content)
  file(WRITE "${OUT}" "${content}")
endif()
