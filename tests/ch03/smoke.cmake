# Smoke runs of the chapter-3 program (included by tests/CMakeAreas.cmake; label ch03), each
# through tests/smoke/smoke_run.py (nanoserve_smoke_test).
if(NOT TARGET ch03_static_batching)
  return()
endif()
set(CH03 $<TARGET_FILE:ch03_static_batching>)
set(CH03_LABELS "ch03;${NANOSERVE_CHAPTER_TEST_LABELS}")
set(CH03_EXPECT_FAILURE bash "${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_failure.sh")
set(CH03_RECORDS "static:batch_size,rate,wasted_rows_computed,${NS_SERVING_METRIC_FIELDS}")
# A tiny offline workload through batches of 1 and 3 on the synthetic model, JSON read back.
nanoserve_smoke_test(ch03.static_tiny LABELS ${CH03_LABELS} EXPECT "static b=3"
  JSON FIELDS ${NS_REPORT_FIELDS} model clock RECORDS ${CH03_RECORDS}
  COMMAND ${CH03} --model synthetic:tiny -n 4 --batch-sizes 1,3 --prompt-len uniform:4:12
          --output-len uniform:2:6 --clock cpu)
# A bundled trace (arrivals over time) with a partial-batch timeout.
nanoserve_smoke_test(ch03.static_trace LABELS ${CH03_LABELS} EXPECT "static b=32 +32 "
  JSON FIELDS ${NS_REPORT_FIELDS} model clock RECORDS ${CH03_RECORDS}
  COMMAND ${CH03} --model synthetic:tiny --trace "${PROJECT_SOURCE_DIR}/data/traces/fixed_offline.jsonl"
          --batch-sizes 32 --skip-wasted-rows --clock cpu --max-model-len 40)
# What scripts/tour.sh runs, compared with the tutorial's expected output.
nanoserve_expected_output_test(ch03_static_batching)
add_test(NAME ch03.bad_length_dist
         COMMAND ${CH03_EXPECT_FAILURE} "output_len: 'uniform:9' is not fixed:N" ${CH03}
                 --model synthetic:tiny --output-len uniform:9)
add_test(NAME ch03.bad_batch_size
         COMMAND ${CH03_EXPECT_FAILURE} "batch-sizes" ${CH03} --batch-sizes 0)
set_tests_properties(ch03.bad_length_dist ch03.bad_batch_size PROPERTIES LABELS "${CH03_LABELS}")
# --cost-device: Σ modeled pass time of every batch size beside the clock's.
nanoserve_smoke_test(ch03.cost_device LABELS ${CH03_LABELS}
  EXPECT "modeled \\(roofline, A100-80GB\\), fp32 weights and KV.*modeled t/s"
  JSON FIELDS ${NS_REPORT_FIELDS} model clock cost_model
  RECORDS "static:batch_size,modeled_s,modeled_output_tokens_per_s"
  COMMAND ${CH03} --model synthetic:tiny -n 3 --batch-sizes 3 --prompt-len uniform:4:8
          --output-len uniform:2:4 --clock cpu --cost-device a100)
