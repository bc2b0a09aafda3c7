# Test areas beyond `common` (included by tests/CMakeLists.txt).

# kernels: tests/kernels/*.cpp -> test_kernels, label `kernels`; nanoserve_common provides the
# oracle every kernel is checked against. Files hold kernels, so in the
# cuda build they are compiled by nvcc and every test also carries the `gpu` label (each skips
# when no device is present); simulator-only tests are compiled out there.
if(NANOSERVE_BACKEND STREQUAL "cuda")
  file(GLOB NANOSERVE_KERNEL_TESTS CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/kernels/*.cpp")
  set_source_files_properties(${NANOSERVE_KERNEL_TESTS} PROPERTIES LANGUAGE CUDA)
  nanoserve_add_test_area(kernels LIBS nanoserve_kernels nanoserve_common LABELS gpu)
else()
  nanoserve_add_test_area(kernels LIBS nanoserve_kernels nanoserve_common)
  # The same tests once more with blocks and threads started in reverse order: a missing
  # __syncthreads that the forward schedule happens to hide shows up in one of the two runs.
  gtest_discover_tests(test_kernels
    WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
    DISCOVERY_MODE PRE_TEST
    TEST_SUFFIX ".reverse"
    PROPERTIES LABELS "kernels" ENVIRONMENT "NANOSERVE_SIM_ORDER=reverse")

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
foreach(chapter ch01 ch02 ch03 ch04 ch05 ch06)
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
    JSON RECORDS "*:kernel,version,dtype,shape,ms,min_ms,gbps,gflops,pct_of_copy_bw,backend,device,git_sha"
    COMMAND $<TARGET_FILE:bench_kernels> --quick)
endif()

# peer: nanoserve against other implementations run live (llama.cpp through the npm package
# node-llama-cpp, peers/); each test skips with a message when node or the packages are absent.
nanoserve_add_test_area(peer LIBS nanoserve_common)
