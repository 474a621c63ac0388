# Writes OUT with the git commit the bench's results name (git describe of
# SRC, "unknown" outside a checkout), at every build, rewriting it only when
# it changed so that nothing rebuilds for nothing.
execute_process(COMMAND git describe --always --dirty --abbrev=12
                WORKING_DIRECTORY ${SRC} OUTPUT_VARIABLE commit
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE result)
if(NOT result EQUAL 0 OR NOT commit)
  set(commit unknown)
endif()
set(text "#define FFNRT_BENCH_COMMIT \"${commit}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE ${OUT} "${text}")
endif()
