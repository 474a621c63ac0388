# The suites on the plain harness (FFNRT_TEST_HARNESS=plain, the default
# with mingw-w64): Criterion's API from tests/plain_criterion, each test in
# a process of its own as under Criterion. Only the suites that call
# nothing but C and ffnrt (and the lab's platform doors) build here
# (test_disk_cache's POSIX trust rules, FIFOs and links are POSIX-only
# within it); test_variants, which runs the compilers, stays with
# Criterion, and the platform layer's own checks run as the plain
# test_platform. test_interop, which links the drivers' loaders as an app
# does, comes after the two lists, where the loaders are, and
# test_host_alloc after it (Linux and Windows only).
# scripts/windows-check runs all of these under Wine; scripts/macos-check
# links the two lists for macOS (both read them from here); on Linux the
# same configuration checks the harness against Criterion's lists.
# test_stats, test_dispatch and test_disk_cache reach internal calls: the
# static library.
set(FFNRT_PLAIN_SUITES test_devices test_activations test_precisions test_gradients test_errors test_limits
    test_ffn test_ffn_quant test_threads test_train test_compare test_stats test_dispatch test_resources
    test_disk_cache)
foreach(suite ${FFNRT_PLAIN_SUITES})
  add_executable(${suite} ${suite}.c device_fixture.c)
  target_include_directories(${suite} PRIVATE ${CMAKE_SOURCE_DIR}/src)
  if(suite MATCHES "^test_(stats|dispatch|disk_cache)$")
    target_link_libraries(${suite} PRIVATE ffnrt_static)
  else()
    target_link_libraries(${suite} PRIVATE ffnrt)
  endif()
  target_link_libraries(${suite} PRIVATE ffnrt_reference plain_criterion Threads::Threads m)
  add_test(NAME ${suite} COMMAND ${suite} --jobs 2)
  set_tests_properties(${suite} PROPERTIES ENVIRONMENT "FFNRT_CACHE_DIR=${FFNRT_TEST_CACHE_DIR}")
endforeach()
target_link_libraries(test_compare PRIVATE ffnrt_compare)
add_dependencies(test_disk_cache disk_cache_writer)
target_compile_definitions(test_dispatch PRIVATE VK_NO_PROTOTYPES)
foreach(host test_quant test_math_host test_gguf)
  add_executable(${host} ${host}.c)
  target_link_libraries(${host} PRIVATE ffnrt ffnrt_reference plain_criterion m)
  add_test(NAME ${host} COMMAND ${host} --jobs 2)
endforeach()
target_compile_options(test_math_host PRIVATE -ffp-contract=off)
target_sources(test_gguf PRIVATE gguf_writer.c) # the files it reads, written by the test itself
# test_interop plays an app that links the loaders: built where they are
# (on Windows, the import libraries of cmake/windows/app_loaders.cmake).
# Apart from the lists above: macos-check links without the loaders.
if(FFNRT_APP_VULKAN_LIBRARY AND OPENCL_LIBRARY)
  add_executable(test_interop test_interop.c device_fixture.c)
  target_include_directories(test_interop PRIVATE ${OPENCL_INCLUDE_DIR} ${VULKAN_INCLUDE_DIR})
  target_link_libraries(test_interop PRIVATE ffnrt plain_criterion ${FFNRT_APP_VULKAN_LIBRARY} ${OPENCL_LIBRARY} m)
  add_test(NAME test_interop COMMAND test_interop --jobs 2)
  set_tests_properties(test_interop PROPERTIES ENVIRONMENT "FFNRT_CACHE_DIR=${FFNRT_TEST_CACHE_DIR}")
endif()

if(WIN32) # the dense sweeps sampled, as in the sanitizer build: under Wine they take a minute
  target_compile_definitions(test_math_host PRIVATE FFNRT_TEST_SAMPLED)
endif()

# Host allocation failure (tests/test_host_alloc.c): libffnrt's own
# allocations caught by the test's malloc on Linux (not under the
# sanitizers, whose malloc it would replace) and through ffnrt.dll's
# import table on Windows. Not on macOS, where the two-level namespace
# binds libffnrt to libSystem's malloc whatever the program defines.
if((WIN32 OR CMAKE_SYSTEM_NAME STREQUAL "Linux") AND NOT FFNRT_SANITIZE AND NOT FFNRT_SANITIZE_THREAD)
  add_executable(test_host_alloc test_host_alloc.c device_fixture.c)
  target_link_libraries(test_host_alloc PRIVATE ffnrt plain_criterion Threads::Threads m ${CMAKE_DL_LIBS})
  target_compile_options(test_host_alloc PRIVATE -fexceptions) # its operator new throws through C frames
  if(NOT WIN32)
    set_target_properties(test_host_alloc PROPERTIES ENABLE_EXPORTS ON) # its malloc serves libffnrt.so
  endif()
  add_test(NAME test_host_alloc COMMAND test_host_alloc --jobs 2)
endif()
