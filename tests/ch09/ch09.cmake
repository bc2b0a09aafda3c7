# Chapter 9's tests (included by tests/CMakeAreas.cmake; label ch09): the communicators under
# mpirun with 2 and 4 ranks on this machine, and the failure of one rank.

# NCCL on a GPU (cuda build with NCCL): one rank, no MPI — what scripts/gpu_check.sh runs.
if(TARGET nanoserve_nccl)
  add_executable(test_nccl "${CMAKE_CURRENT_SOURCE_DIR}/ch09/nccl/test_nccl.cpp")
  target_link_libraries(test_nccl PRIVATE nanoserve_nccl nanoserve_engine GTest::gtest
                        GTest::gtest_main)
  target_include_directories(test_nccl PRIVATE "${PROJECT_SOURCE_DIR}")
  nanoserve_project_flags(test_nccl)
  gtest_discover_tests(test_nccl WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}" DISCOVERY_MODE PRE_TEST
                       PROPERTIES LABELS "ch09;gpu")
endif()
# `nanoserve --tensor-parallel N` without MPI: no plugin (here forced through
# $NANOSERVE_MPI_PLUGIN; on a machine without Open MPI it is simply not built) and the CPU
# oracle both get one clear line, before any rank is started.
set(NS_EXPECT_FAILURE bash "${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_failure.sh")
add_test(NAME ch09.nanoserve_tp_needs_mpi
         COMMAND ${NS_EXPECT_FAILURE}
                 "--tensor-parallel 2 needs Open MPI: cannot load the MPI plugin /nonexistent/libnanoserve_mpi.so.*mpirun -np 2"
                 env NANOSERVE_MPI_PLUGIN=/nonexistent/libnanoserve_mpi.so $<TARGET_FILE:nanoserve>
                 generate -m synthetic:tiny --device gpu --tensor-parallel 2 -n 2)
add_test(NAME ch09.nanoserve_tp_needs_gpu
         COMMAND ${NS_EXPECT_FAILURE} "--tensor-parallel 2 .*needs --device gpu"
                 $<TARGET_FILE:nanoserve> generate -m synthetic:tiny --tensor-parallel 2 -n 2)
set_tests_properties(ch09.nanoserve_tp_needs_mpi ch09.nanoserve_tp_needs_gpu PROPERTIES
                     LABELS "ch09")
if(NOT TARGET nanoserve_mpi)
  message(STATUS "tests/ch09: no MPI, the distributed tests are not built")
  return()
endif()

set(ns_ch09_libs nanoserve_mpi nanoserve_harness)
if(TARGET ch09_lib)
  set(ns_ch09_libs ch09_lib nanoserve_mpi)
endif()

# nanoserve_mpi_test(NAME NP N COMMAND prog args... [EXPECT regex] [FAIL]): runs
# `mpirun -np N prog args` on this machine, bounded by a timeout. Oversubscribed (more ranks
# than the 2 cores of CI), as root when CI is root, shared-memory transport only, ranks that
# yield when idle. EXPECT: the output must match; FAIL: the run must fail (exit != 0).
set(NS_MPIRUN ${MPIEXEC_EXECUTABLE} --oversubscribe --allow-run-as-root --mca btl self,vader
    --mca btl_vader_single_copy_mechanism none --mca mpi_yield_when_idle 1 --bind-to none)
function(nanoserve_mpi_test name)
  cmake_parse_arguments(ARG "FAIL" "NP;TIMEOUT" "COMMAND;EXPECT;ENV" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 60)
  endif()
  set(runner "")
  if(ARG_EXPECT)  # the smoke runner: the regex must match AND the run must exit 0
    set(runner ${NS_SMOKE_RUN} --expect "${ARG_EXPECT}" --)
  endif()
  add_test(NAME ${name}
           COMMAND ${runner} ${NS_MPIRUN} ${MPIEXEC_NUMPROC_FLAG} ${ARG_NP} ${ARG_COMMAND}
           WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}")
  set_tests_properties(${name} PROPERTIES LABELS "ch09;mpi" TIMEOUT ${ARG_TIMEOUT}
                       PROCESSORS 2 ENVIRONMENT "${ARG_ENV}")
  if(ARG_FAIL)
    set_tests_properties(${name} PROPERTIES WILL_FAIL TRUE)
  endif()
endfunction()

# One process (MPI's singleton mode where MPI is needed): the engine pieces and the examples.
nanoserve_add_test_area(ch09 LIBS ${ns_ch09_libs} LABELS ${NANOSERVE_CHAPTER_TEST_LABELS})

file(GLOB ns_ch09_mpi_sources CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/ch09/mpi/test_*.cpp")
add_executable(test_ch09_mpi "${CMAKE_CURRENT_SOURCE_DIR}/ch09/mpi/mpi_test_main.cpp"
               ${ns_ch09_mpi_sources})
target_link_libraries(test_ch09_mpi PRIVATE ${ns_ch09_libs} GTest::gtest)
target_include_directories(test_ch09_mpi PRIVATE "${PROJECT_SOURCE_DIR}")
target_compile_definitions(test_ch09_mpi PRIVATE NANOSERVE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
nanoserve_project_flags(test_ch09_mpi)
foreach(np 2 4)
  nanoserve_mpi_test(ch09.mpi_np${np} NP ${np} COMMAND $<TARGET_FILE:test_ch09_mpi>)
endforeach()

# A rank that dies: mpirun ends the others and names the rank. A rank that hangs: the others'
# watchdog (2 s here) throws, prints the operation, and MPI_Abort ends the run. Both must fail
# well inside 30 s instead of hanging.
add_executable(dist_fault_probe "${CMAKE_CURRENT_SOURCE_DIR}/ch09/mpi/fault_probe.cpp")
target_link_libraries(dist_fault_probe PRIVATE nanoserve_mpi)
nanoserve_project_flags(dist_fault_probe)
set(NS_EXPECT_RUN_FAILS bash "${CMAKE_CURRENT_SOURCE_DIR}/ch09/mpi/expect_run_fails.sh" 30)
add_test(NAME ch09.mpi_rank_dies
         COMMAND ${NS_EXPECT_RUN_FAILS} "rank 1 with PID [0-9]+ on node .* exited on signal 9"
                 ${NS_MPIRUN} ${MPIEXEC_NUMPROC_FLAG} 4 $<TARGET_FILE:dist_fault_probe> die)
add_test(NAME ch09.mpi_rank_hangs
         COMMAND ${NS_EXPECT_RUN_FAILS} "rank 0: error: MPI all_reduce.*no answer within 2"
                 ${NS_MPIRUN} ${MPIEXEC_NUMPROC_FLAG} 2 -x NANOSERVE_COMM_TIMEOUT_S=2
                 $<TARGET_FILE:dist_fault_probe> hang)
nanoserve_mpi_test(ch09.mpi_no_fault NP 2 EXPECT "rank 0: 5 all-reduces done"
                   COMMAND $<TARGET_FILE:dist_fault_probe> ok)
set_tests_properties(ch09.mpi_rank_dies ch09.mpi_rank_hangs PROPERTIES LABELS "ch09;mpi"
                     TIMEOUT 45 PROCESSORS 2)

# `nanoserve generate/serve --tensor-parallel 2` under mpirun (the MPI plugin next to nanoserve):
# the one-device text on stories260K and the tiny model, the one-device completion from the
# server; a wrong number of ranks, heads that do not split, and a rank that fails mid-run end
# the run with a clear line instead of hanging.
if(NOT NANOSERVE_BACKEND STREQUAL "cuda")
  set(NS_TP_LAUNCH ${NS_MPIRUN} ${MPIEXEC_NUMPROC_FLAG} 2)
  set(NS_NANOSERVE $<TARGET_FILE:nanoserve>)
  foreach(model stories260K.bin synthetic:tiny)
    string(REGEX REPLACE "[.:].*" "" name "${model}")
    add_test(NAME ch09.nanoserve_generate_tp2_${name}
             COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/ch09/nanoserve_tp_text.sh" ${NS_NANOSERVE}
                     "${PROJECT_SOURCE_DIR}" ${model} ${NS_TP_LAUNCH})
    set_tests_properties(ch09.nanoserve_generate_tp2_${name} PROPERTIES LABELS "ch09;mpi"
                         TIMEOUT 90 PROCESSORS 2 SKIP_RETURN_CODE 77)
  endforeach()
  add_test(NAME ch09.nanoserve_serve_tp2
           COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/ch09/serve_tp.sh" ${NS_NANOSERVE}
                   "${PROJECT_SOURCE_DIR}" ${NS_TP_LAUNCH})
  set_tests_properties(ch09.nanoserve_serve_tp2 PROPERTIES LABELS "ch09;mpi;ch08" TIMEOUT 120
                       PROCESSORS 2 SKIP_RETURN_CODE 77)
  set(NS_TP_ARGS generate -m synthetic:tiny --device gpu -t 0)
  add_test(NAME ch09.nanoserve_tp_wrong_ranks
           COMMAND ${NS_EXPECT_RUN_FAILS} "--tensor-parallel 4 needs as many ranks: run under mpirun -np 4 \\(this run has 2\\)"
                   ${NS_TP_LAUNCH} ${NS_NANOSERVE} ${NS_TP_ARGS} -n 2 --tensor-parallel 4)
  add_test(NAME ch09.nanoserve_tp_heads_do_not_split
           COMMAND ${NS_EXPECT_RUN_FAILS} "rank [0-2]: error: .*n_heads = 8 is not a multiple of the tensor-parallel degree"
                   ${NS_MPIRUN} ${MPIEXEC_NUMPROC_FLAG} 3 ${NS_NANOSERVE} ${NS_TP_ARGS} -n 2
                   --tensor-parallel 3)
  # Rank 1 sized for 2 tokens, rank 0 generating 16: rank 1's cache refuses a pass, it says so
  # and ends the run (rank 0 is waiting in a collective).
  add_test(NAME ch09.nanoserve_tp_rank_fails
           COMMAND ${NS_EXPECT_RUN_FAILS} "nanoserve: rank 1: error: "
                   ${NS_TP_LAUNCH} sh -c "n=16; [ \"$OMPI_COMM_WORLD_RANK\" = 1 ] && n=2; exec \"$0\" \"$@\" -n $n"
                   ${NS_NANOSERVE} ${NS_TP_ARGS} --tensor-parallel 2)
  set_tests_properties(ch09.nanoserve_tp_wrong_ranks ch09.nanoserve_tp_heads_do_not_split
                       ch09.nanoserve_tp_rank_fails PROPERTIES LABELS "ch09;mpi" TIMEOUT 45
                       PROCESSORS 2)
endif()

# The chapter program (chapters/ch09_distributed): the tour against its expected output, the
# modeled comparison on another GPU and link, the real hand-off under mpirun, bad input.
if(NOT TARGET ch09_distributed)
  return()
endif()
set(CH09 $<TARGET_FILE:ch09_distributed>)
set(CH09_LABELS "ch09;${NANOSERVE_CHAPTER_TEST_LABELS}")
set(CH09_EXPECT_FAILURE bash "${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_failure.sh")
nanoserve_expected_output_test(ch09_distributed)
nanoserve_smoke_test(ch09.cost_device_link LABELS ${CH09_LABELS}
  EXPECT "modeled \\(roofline, H100 SXM\\)" "disaggregated 1P\\+1D, IB NDR 400G"
         "every setup produced the colocated run's tokens: yes"
  JSON FIELDS ${NS_REPORT_FIELDS} cost_model
  RECORDS "links:link,bandwidth_gbs,kv_bytes,kv_transfer_ms,source"
          "comparison:config,gpus,kv_bytes,handoffs"
  COMMAND ${CH09} --cost-device h100 --link ib400 --num-requests 8 --rate 4 --prompt-median 512)
if(NOT NANOSERVE_BACKEND STREQUAL "cuda")
  # The real hand-off: 1 prefill + 1 decode instance on the tiny model, a decode pool that runs
  # out (back-pressure), every request's tokens compared with the colocated engine's.
  add_test(NAME ch09.disaggregated_np2
           COMMAND ${NS_SMOKE_RUN} --expect "tokens equal to the colocated engine's: 6 of 6"
                   --expect "blocks left in use 0" --expect "decode deferred [1-9]"
                   -- ${NS_MPIRUN} ${MPIEXEC_NUMPROC_FLAG} 2 ${CH09} --disaggregated
                   --model synthetic:tiny)
  set_tests_properties(ch09.disaggregated_np2 PROPERTIES LABELS "${CH09_LABELS};mpi" TIMEOUT 120
                       PROCESSORS 2)
  # Tensor parallelism for real: the tiny model split across 2 ranks, rank 0 scheduling, every
  # request's tokens compared with the whole model's on one device (TP 4: ch09.mpi_np4).
  add_test(NAME ch09.tensor_parallel_np2
           COMMAND ${NS_SMOKE_RUN} --expect "tokens equal to the single-process engine's: 6 of 6"
                   --expect "rank 0 holds 4 of 8 q heads, 2 of 4 kv heads"
                   -- ${NS_MPIRUN} ${MPIEXEC_NUMPROC_FLAG} 2 ${CH09} --tensor-parallel 2
                   --model synthetic:tiny)
  set_tests_properties(ch09.tensor_parallel_np2 PROPERTIES LABELS "${CH09_LABELS};mpi" TIMEOUT 120
                       PROCESSORS 2)
  # Half types (issue 21): the hand-off moves an fp16 KV cache under bf16 activations, still
  # token for token the colocated run's; tensor parallelism in bf16 reports its agreement (each
  # rank rounds its partial sums before the all-reduce: equality is only required in fp32).
  add_test(NAME ch09.disaggregated_np2_half
           COMMAND ${NS_SMOKE_RUN} --expect "synthetic:tiny, bf16 \\(KV fp16\\)"
                   --expect "tokens equal to the colocated engine's: 6 of 6"
                   -- ${NS_MPIRUN} ${MPIEXEC_NUMPROC_FLAG} 2 ${CH09} --disaggregated
                   --model synthetic:tiny --dtype bf16 --kv-dtype fp16)
  add_test(NAME ch09.tensor_parallel_np2_bf16
           COMMAND ${NS_SMOKE_RUN} --expect "synthetic:tiny, bf16 \\(KV bf16\\)"
                   --expect "tokens equal to the single-process engine's: [0-6] of 6 \\(greedy, bf16"
                   -- ${NS_MPIRUN} ${MPIEXEC_NUMPROC_FLAG} 2 ${CH09} --tensor-parallel 2
                   --model synthetic:tiny --dtype bf16)
  set_tests_properties(ch09.disaggregated_np2_half ch09.tensor_parallel_np2_bf16 PROPERTIES
                       LABELS "${CH09_LABELS};mpi" TIMEOUT 120 PROCESSORS 2)
endif()
add_test(NAME ch09.tensor_parallel_needs_its_ranks
         COMMAND ${CH09_EXPECT_FAILURE} "--tensor-parallel 2 needs as many ranks: mpirun -np 2"
                 ${CH09} --tensor-parallel 2 --model synthetic:tiny)
add_test(NAME ch09.disaggregated_needs_two_ranks
         COMMAND ${CH09_EXPECT_FAILURE} "needs at least 2 ranks .*mpirun -np 2" ${CH09}
                 --disaggregated --model synthetic:tiny)
add_test(NAME ch09.tensor_parallel_or_disaggregated
         COMMAND ${CH09_EXPECT_FAILURE} "--disaggregated excludes --tensor-parallel" ${CH09}
                 --tensor-parallel 1 --disaggregated)
add_test(NAME ch09.unknown_link
         COMMAND ${CH09_EXPECT_FAILURE} "unknown link 'nvlink9' \\(known: nvlink4, pcie5, ib400\\)"
                 ${CH09} --link nvlink9)
add_test(NAME ch09.unknown_flag COMMAND ${CH09_EXPECT_FAILURE} "not expected" ${CH09} --bogus)
set_tests_properties(ch09.disaggregated_needs_two_ranks ch09.tensor_parallel_needs_its_ranks
                     ch09.tensor_parallel_or_disaggregated
                     ch09.unknown_link ch09.unknown_flag
                     PROPERTIES LABELS "${CH09_LABELS}")
