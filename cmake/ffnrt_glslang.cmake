# Finds glslang's C interface and its static archives and defines the
# imported target ffnrt::glslang (the compiler, its default resource limits,
# the SPIR-V back end and SPIRV-Tools, in link order, with Threads).
#
# Why not find_package(glslang): Debian 12's glslang-dev ships a CMake config
# whose exported targets include the glslangValidator and spirv-remap
# executables, which live in another package (glslang-tools, only
# "Suggested"). Without it, find_package(glslang) fails at configure time
# ("references the file /usr/bin/glslangValidator but this file does not
# exist") although every library ffnrt needs is installed. The archive names
# and the header are stable across glslang releases, so finding them
# directly depends on nothing but the libraries themselves. (libOGLCompiler
# and libOSDependent merged into libglslang in later glslang; they are
# linked when present.)
include_guard(GLOBAL)
find_package(Threads REQUIRED)

find_path(FFNRT_GLSLANG_INCLUDE_DIR glslang/Include/glslang_c_interface.h REQUIRED)
# SPIRV-Tools (a dependency of Debian's glslang-dev): its validator checks
# SPIR-V read back from the disk cache before a driver sees it.
set(_ffnrt_glslang_required glslang-default-resource-limits SPIRV SPIRV-Tools glslang MachineIndependent
    GenericCodeGen)
find_path(FFNRT_SPIRV_TOOLS_INCLUDE_DIR spirv-tools/libspirv.h REQUIRED)
# Link order: dependents before their dependencies (static archives).
set(_ffnrt_glslang_order glslang-default-resource-limits SPIRV SPIRV-Tools-opt SPIRV-Tools glslang
    MachineIndependent OSDependent OGLCompiler GenericCodeGen)
set(FFNRT_GLSLANG_LIBRARIES "")
set(FFNRT_GLSLANG_LINK_NAMES "") # the same as -l names, for pkg-config's Libs.private
foreach(name ${_ffnrt_glslang_order})
  string(MAKE_C_IDENTIFIER "FFNRT_GLSLANG_LIB_${name}" var)
  # Static archives first: the library must not need glslang at run time.
  find_library(${var} NAMES lib${name}.a ${name})
  if(${var})
    list(APPEND FFNRT_GLSLANG_LIBRARIES ${${var}})
    list(APPEND FFNRT_GLSLANG_LINK_NAMES -l${name})
  elseif(name IN_LIST _ffnrt_glslang_required)
    message(FATAL_ERROR "glslang: lib${name} not found (Debian: apt-get install glslang-dev)")
  endif()
endforeach()
# MachineIndependent and GenericCodeGen refer to each other in some releases.
list(APPEND FFNRT_GLSLANG_LIBRARIES ${FFNRT_GLSLANG_LIB_MachineIndependent} ${FFNRT_GLSLANG_LIB_GenericCodeGen})
list(APPEND FFNRT_GLSLANG_LINK_NAMES -lMachineIndependent -lGenericCodeGen)

if(NOT TARGET ffnrt::glslang)
  add_library(ffnrt::glslang INTERFACE IMPORTED)
  set_target_properties(ffnrt::glslang PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${FFNRT_GLSLANG_INCLUDE_DIR};${FFNRT_SPIRV_TOOLS_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${FFNRT_GLSLANG_LIBRARIES};Threads::Threads")
endif()
