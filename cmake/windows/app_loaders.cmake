# Import libraries for the Khronos loaders on Windows (mingw-w64), for the
# programs that play an app owning its own device: test_interop and the
# bring-your-own-device examples. They link vulkan-1.dll and OpenCL.dll
# directly, as an app would; the library never does (it loads them at run
# time). Debian's mingw-w64 has no import library for either, so dlltool
# makes one from the exports those programs call (the .def files here),
# naming the DLLs that GPU drivers install (and Wine provides).
#
# Sets FFNRT_APP_VULKAN_LIBRARY and OPENCL_LIBRARY to them.
find_program(FFNRT_DLLTOOL NAMES ${FFNRT_MINGW_TRIPLE}-dlltool x86_64-w64-mingw32-dlltool dlltool)
if(NOT FFNRT_DLLTOOL)
  message(STATUS "no dlltool: test_interop and the bring-your-own-device examples are not built")
  return()
endif()
set(_loaders ${CMAKE_BINARY_DIR}/app-loaders)
file(MAKE_DIRECTORY ${_loaders})
foreach(_dll vulkan-1 OpenCL)
  set(_def ${CMAKE_CURRENT_LIST_DIR}/${_dll}.def)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_def})
  execute_process(COMMAND ${FFNRT_DLLTOOL} --input-def ${_def} --output-lib ${_loaders}/lib${_dll}.a
                  RESULT_VARIABLE _made ERROR_VARIABLE _why)
  if(NOT _made EQUAL 0)
    message(FATAL_ERROR "dlltool could not make an import library from ${_def}: ${_why}")
  endif()
endforeach()
set(FFNRT_APP_VULKAN_LIBRARY ${_loaders}/libvulkan-1.a CACHE FILEPATH "the Vulkan loader an app links" FORCE)
set(OPENCL_LIBRARY ${_loaders}/libOpenCL.a CACHE FILEPATH "the OpenCL loader an app links" FORCE)
