# Smoke runs of the chapter-4 program (included by tests/CMakeAreas.cmake; label ch04).
if(NOT TARGET ch04_continuous_batching)
  return()
endif()
set(CH04 $<TARGET_FILE:ch04_continuous_batching>)
set(CH04_EXPECT_FAILURE bash "${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_failure.sh")
set(CH04_TINY --model synthetic:tiny -n 4 --prompt-len uniform:4:20 --output-len uniform:2:6
              --clock cpu)
# Continuous batching with a small pool and static batching alongside, JSON written.
add_test(NAME ch04.continuous_tiny
         COMMAND ${CH04} ${CH04_TINY} --num-blocks 8 --block-size 4 --max-num-batched-tokens 8
                 --compare-static 2 --json "${CMAKE_CURRENT_BINARY_DIR}/ch04_continuous_tiny.json")
set_tests_properties(ch04.continuous_tiny PROPERTIES PASS_REGULAR_EXPRESSION "static b=2")
add_test(NAME ch04.no_chunked_prefill
         COMMAND ${CH04} ${CH04_TINY} --no-chunked-prefill --max-model-len 32)
set_tests_properties(ch04.no_chunked_prefill PROPERTIES PASS_REGULAR_EXPRESSION "chunked prefill off")
add_test(NAME ch04.sweep_pool
         COMMAND ${CH04} sweep-pool ${CH04_TINY} --block-size 4 --pool-blocks 16,7)
set_tests_properties(ch04.sweep_pool PROPERTIES PASS_REGULAR_EXPRESSION "preemption as the KV pool shrinks")
add_test(NAME ch04.sweep_rate_cost_model
         COMMAND ${CH04} sweep-rate --model synthetic:tiny -n 8 --executor cost-model --rates 2,inf)
set_tests_properties(ch04.sweep_rate_cost_model PROPERTIES PASS_REGULAR_EXPRESSION "inf \\|")
add_test(NAME ch04.sched_bench COMMAND ${CH04} sched-bench --num-seqs 32 --tour)
set_tests_properties(ch04.sched_bench PROPERTIES PASS_REGULAR_EXPRESSION "schedule us")
# What scripts/tour.sh runs (the default model: stories260K when $NANOSERVE_DATA has it).
add_test(NAME ch04.tour COMMAND ${CH04} --tour)
add_test(NAME ch04.bad_rate
         COMMAND ${CH04_EXPECT_FAILURE} "--rates: 'fast'" ${CH04} sweep-rate --rates 1,fast)
add_test(NAME ch04.bad_num_blocks
         COMMAND ${CH04_EXPECT_FAILURE} "num-blocks" ${CH04} --num-blocks 0)
add_test(NAME ch04.bad_trace
         COMMAND ${CH04_EXPECT_FAILURE} "not found|does not exist|File does not exist" ${CH04}
                 --trace missing_trace.jsonl)
set_tests_properties(ch04.continuous_tiny ch04.no_chunked_prefill ch04.sweep_pool
  ch04.sweep_rate_cost_model ch04.sched_bench ch04.tour ch04.bad_rate ch04.bad_num_blocks
  ch04.bad_trace PROPERTIES LABELS "ch04;${NANOSERVE_CHAPTER_TEST_LABELS}")
# --rate inf is an offline batch; a non-positive rate is refused by the flag's range.
add_test(NAME ch04.rate_inf COMMAND ${CH04} ${CH04_TINY} --rate inf)
add_test(NAME ch04.bad_rate_zero
         COMMAND ${CH04_EXPECT_FAILURE} "--rate: '0' is not a number in \\(0, inf\\]" ${CH04}
                 --model synthetic:tiny --rate 0)
set_tests_properties(ch04.rate_inf ch04.bad_rate_zero
  PROPERTIES LABELS "ch04;${NANOSERVE_CHAPTER_TEST_LABELS}")
