# Test areas beyond `common` (included by tests/CMakeLists.txt).

# kernels: tests/kernels/*.cpp -> test_kernels, label `kernels`; nanoserve_common provides the
# oracle every kernel is checked against. In the cuda build the files that define kernels of
# their own (`__global__`, `<<<`) or include device code (`.cuh`) are compiled by nvcc, the
# others (which only call the launchers of kernels/) by the host compiler, which is faster; every
# test also carries the `gpu` label (each skips when no device is present); simulator-only tests
# are compiled out there.
if(NANOSERVE_BACKEND STREQUAL "cuda")
  file(GLOB NANOSERVE_KERNEL_TESTS CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/kernels/*.cpp")
  foreach(test_source IN LISTS NANOSERVE_KERNEL_TESTS)
    file(READ "${test_source}" test_text)
    if(test_text MATCHES "__global__|<<<|\\.cuh\"")
      set_source_files_properties("${test_source}" PROPERTIES LANGUAGE CUDA)
    endif()
  endforeach()
  nanoserve_add_test_area(kernels LIBS nanoserve_kernels nanoserve_common LABELS gpu)
else()
  file(GLOB NANOSERVE_KERNEL_TESTS CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/kernels/*.cpp")
  set(ns_kernel_test_sources ${NANOSERVE_KERNEL_TESTS})
  if(NANOSERVE_RACECHECK_ALL AND NOT NANOSERVE_SANITIZE)
    # The race checker needs instrumented code only where kernels are: the test files that
    # define or instantiate kernels themselves (`__global__`, `<<<`, shared memory, in the file
    # or in a kernels/*.cuh or tests/kernels/*.h it includes) are compiled twice, plain and
    # instrumented; the others only call the launchers (whose kernels are instrumented in
    # nanoserve_kernels_racecheck) and are compiled once, into objects both binaries link. A
    # file that asks whether it is the instrumented build (`__SANITIZE_THREAD__`, e.g.
    # test_sample.cpp's smaller grids) is compiled twice too: compiled once, it would not know.
    set(ns_kernel_test_sources "")
    set(ns_kernel_host_tests "")
    foreach(test_source IN LISTS NANOSERVE_KERNEL_TESTS)
      nanoserve_source_matches("${test_source}" "__global__|<<<|__shared__|NS_DYNAMIC_SHARED|__SANITIZE_THREAD__"
                               has_device_code)
      if(has_device_code)
        list(APPEND ns_kernel_test_sources "${test_source}")
      else()
        list(APPEND ns_kernel_host_tests "${test_source}")
      endif()
    endforeach()
    add_library(test_kernels_host OBJECT ${ns_kernel_host_tests})
    target_link_libraries(test_kernels_host PRIVATE nanoserve_kernels nanoserve_common GTest::gtest)
    target_include_directories(test_kernels_host PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}")
    target_compile_definitions(test_kernels_host PRIVATE NANOSERVE_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
      NANOSERVE_TEST_DATA_DIR="${CMAKE_CURRENT_SOURCE_DIR}/data"
      NANOSERVE_TESTS_DIR="${CMAKE_CURRENT_SOURCE_DIR}")
    nanoserve_project_flags(test_kernels_host)
    nanoserve_test_code_flags(test_kernels_host)  # no kernels of their own: -O1 as other tests
    list(APPEND ns_kernel_test_sources $<TARGET_OBJECTS:test_kernels_host>)
  endif()
  nanoserve_add_test_area(kernels LIBS nanoserve_kernels nanoserve_common
                          SOURCES ${ns_kernel_test_sources})
  # The same tests once more with blocks and threads started in reverse order: a missing
  # __syncthreads that the forward schedule happens to hide shows up in one of the two runs.
  # With NANOSERVE_RACECHECK_ALL the second run is the race checker's (test_kernels_racecheck,
  # below, runs in reverse order), so each test still runs once in each order, not three times.
  if(NOT NANOSERVE_RACECHECK_ALL OR NANOSERVE_SANITIZE)
    gtest_discover_tests(test_kernels
      WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
      DISCOVERY_MODE PRE_TEST
      TEST_SUFFIX ".reverse"
      PROPERTIES LABELS "kernels" ENVIRONMENT "NANOSERVE_SIM_ORDER=reverse")
  endif()
  # The tensor-core tests (suites named *Wmma*) once more with the permuted element-to-lane
  # mapping (kernels/sim/README.md): a kernel that relies on the unspecified mapping gives
  # different results in one of the two runs. (A second ENVIRONMENT entry on the discovered
  # .reverse tests is lost by CMake 3.25's gtest_discover_tests, hence a test of its own.)
  add_test(NAME test_kernels.wmma_permuted_mapping
    COMMAND test_kernels --gtest_filter=*Wmma*
    WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}")
  set_tests_properties(test_kernels.wmma_permuted_mapping PROPERTIES
    LABELS "kernels" ENVIRONMENT "NANOSERVE_SIM_WMMA_MAPPING=permuted")

  # The shared-memory race checker (kernels/sim/racecheck.h): test binaries whose code is
  # compiled with -fsanitize=thread instrumentation (no libtsan). test_racecheck holds the
  # checker's own tests and the async-copy kernels; with -DNANOSERVE_RACECHECK_ALL=ON,
  # test_kernels_racecheck is every kernel test once more, every kernel that uses shared memory
  # instrumented (kernels/CMakeLists.txt).
  if(NOT NANOSERVE_SANITIZE)
    function(nanoserve_racecheck_test name)
      cmake_parse_arguments(ARG "" "ORDER" "SOURCES;LIBS" ${ARGN})
      if(NOT ARG_ORDER)
        set(ARG_ORDER forward)
      endif()
      add_executable(${name} ${ARG_SOURCES})
      target_link_libraries(${name} PRIVATE ${ARG_LIBS} nanoserve_common GTest::gtest
                            GTest::gtest_main)
      target_include_directories(${name} PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}")
      target_compile_definitions(${name} PRIVATE NANOSERVE_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
        NANOSERVE_TEST_DATA_DIR="${CMAKE_CURRENT_SOURCE_DIR}/data"
        NANOSERVE_TESTS_DIR="${CMAKE_CURRENT_SOURCE_DIR}")
      nanoserve_project_flags(${name})
      target_compile_options(${name} PRIVATE -fsanitize=thread -Wno-tsan)
      gtest_discover_tests(${name} WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
        DISCOVERY_MODE PRE_TEST TEST_SUFFIX ".racecheck"
        PROPERTIES LABELS "kernels" ENVIRONMENT "NANOSERVE_SIM_ORDER=${ARG_ORDER}")
    endfunction()
    nanoserve_racecheck_test(test_racecheck LIBS nanoserve_kernels
      SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/kernels/test_racecheck.cpp"
              "${CMAKE_CURRENT_SOURCE_DIR}/kernels/test_async_copy.cpp")
    if(TARGET nanoserve_kernels_racecheck)
      nanoserve_racecheck_test(test_kernels_racecheck LIBS nanoserve_kernels_racecheck
                               ORDER reverse SOURCES ${ns_kernel_test_sources})
    endif()
  endif()

  # Simulator micro-benchmarks (fiber switch, barrier, shuffle, naive GEMV); a quick smoke run
  # keeps them working.
  add_executable(sim_microbench "${CMAKE_CURRENT_SOURCE_DIR}/kernels/bench/sim_microbench.cpp")
  target_link_libraries(sim_microbench PRIVATE nanoserve_kernels)
  nanoserve_project_flags(sim_microbench)
  nanoserve_smoke_test(sim_microbench.smoke LABELS kernels COMMAND $<TARGET_FILE:sim_microbench> --quick)
endif()

# Chapters: tests/chNN/*.cpp -> test_chNN, label chNN (engine pieces + chapter code); they run
# kernels, so in the cuda build they also carry `gpu` (and skip without a device). A chapter's
# program smoke runs live in tests/chNN/smoke.cmake.
if(NANOSERVE_BACKEND STREQUAL "cuda")
  set(NANOSERVE_CHAPTER_TEST_LABELS gpu)
else()
  set(NANOSERVE_CHAPTER_TEST_LABELS "")
endif()
foreach(chapter ch01 ch02 ch03 ch04 ch05 ch06 ch07)
  # A chapter's tests link what only that chapter uses (chNN_lib, chapters/CMakeLists.txt).
  set(chapter_libs nanoserve_harness)
  if(TARGET ${chapter}_lib)
    set(chapter_libs ${chapter}_lib)
  endif()
  nanoserve_add_test_area(${chapter} LIBS ${chapter_libs} LABELS ${NANOSERVE_CHAPTER_TEST_LABELS})
  if(EXISTS "${CMAKE_CURRENT_SOURCE_DIR}/${chapter}/smoke.cmake")
    include("${CMAKE_CURRENT_SOURCE_DIR}/${chapter}/smoke.cmake")
  endif()
endforeach()

# Chapter 8 (serving): the engine's server seam (AsyncEngine), the HTTP server's pieces
# (apps/nanoserve/server/) and the benchmark client's (apps/bench_serving/); the end-to-end
# tests (server, cluster, benchmark) are in tests/ch08/server.cmake.
nanoserve_add_test_area(ch08 LIBS nanoserve_server nanoserve_harness nanoserve_bench_serving LABELS ${NANOSERVE_CHAPTER_TEST_LABELS})
include("${CMAKE_CURRENT_SOURCE_DIR}/ch08/server.cmake")

# bench_kernels (apps/bench_kernels): every benchmark case must run at --quick sizes and write its
# JSON, an array of rows that each carry their provenance (apps/bench_kernels/bench_report.h). On
# the cuda backend this needs a GPU, like the `gpu` tests.
if(TARGET bench_kernels)
  if(NANOSERVE_BACKEND STREQUAL "cuda")
    set(NS_BENCH_KERNELS_LABELS "kernels;gpu")
  else()
    set(NS_BENCH_KERNELS_LABELS "kernels")
  endif()
  nanoserve_smoke_test(bench_kernels.smoke LABELS ${NS_BENCH_KERNELS_LABELS}
    JSON RECORDS "*:kernel,version,dtype,shape,ms,min_ms,gbps,gflops,pct_of_copy_bw,backend,device,git_sha,git_dirty"
    COMMAND $<TARGET_FILE:bench_kernels> --quick)
endif()

# peer: nanoserve against other implementations run live (llama.cpp through the npm package
# node-llama-cpp, peers/); each test skips with a message when node or the packages are absent.
nanoserve_add_test_area(peer LIBS nanoserve_common)

# Chapter 9 (distributed): its own file, so that the chapters above stay as they are.
include("${CMAKE_CURRENT_SOURCE_DIR}/ch09/ch09.cmake")
