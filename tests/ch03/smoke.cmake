# Smoke runs of the chapter-3 program (included by tests/CMakeAreas.cmake; label ch03).
if(NOT TARGET ch03_static_batching)
  return()
endif()
set(CH03 $<TARGET_FILE:ch03_static_batching>)
set(CH03_EXPECT_FAILURE bash "${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_failure.sh")
# A tiny offline workload through batches of 1 and 3 on the synthetic model, JSON written.
add_test(NAME ch03.static_tiny
         COMMAND ${CH03} --model synthetic:tiny -n 4 --batch-sizes 1,3 --prompt-len uniform:4:12
                 --output-len uniform:2:6 --clock cpu
                 --json "${CMAKE_CURRENT_BINARY_DIR}/ch03_static_tiny.json")
set_tests_properties(ch03.static_tiny PROPERTIES PASS_REGULAR_EXPRESSION "static b=3")
# A bundled trace (arrivals over time) with a partial-batch timeout.
add_test(NAME ch03.static_trace
         COMMAND ${CH03} --model synthetic:tiny --trace "${PROJECT_SOURCE_DIR}/data/traces/fixed_offline.jsonl"
                 --batch-sizes 32 --skip-wasted-rows --clock cpu --max-model-len 40)
set_tests_properties(ch03.static_trace PROPERTIES PASS_REGULAR_EXPRESSION "static b=32 +32 ")
# What scripts/tour.sh runs (the default model: stories260K when $NANOSERVE_DATA has it).
add_test(NAME ch03.tour COMMAND ${CH03} --tour)
add_test(NAME ch03.bad_length_dist
         COMMAND ${CH03_EXPECT_FAILURE} "output_len: 'uniform:9' is not fixed:N" ${CH03}
                 --model synthetic:tiny --output-len uniform:9)
add_test(NAME ch03.bad_batch_size
         COMMAND ${CH03_EXPECT_FAILURE} "batch-sizes" ${CH03} --batch-sizes 0)
set_tests_properties(ch03.static_tiny ch03.static_trace ch03.tour ch03.bad_length_dist
  ch03.bad_batch_size PROPERTIES LABELS "ch03;${NANOSERVE_CHAPTER_TEST_LABELS}")
