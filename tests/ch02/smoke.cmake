# Smoke runs of the chapter-2 program (included by tests/CMakeAreas.cmake; label ch02).
if(NOT TARGET ch02_paged_kv_cache)
  return()
endif()
set(CH02 $<TARGET_FILE:ch02_paged_kv_cache>)
set(CH02_LABELS "ch02;${NANOSERVE_CHAPTER_TEST_LABELS}")
set(CH02_EXPECT_FAILURE bash "${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_failure.sh")
set(CH02_FIELDS ${NS_REPORT_FIELDS} model clock)
# The utilization table needs no forward pass; on synthetic:tiny (fp32: 1,024 bytes per
# position, 256-position regions) the mix is 968 positions: 968 / (8 × 256) = 47.3% naive, and
# 968 / 1008 = 96.0% in blocks of 16.
nanoserve_smoke_test(ch02.utilization_tiny LABELS ${CH02_LABELS}
  EXPECT "naive contiguous .* 47\\.3%.*paged, block 16 .* 96\\.0%"
  JSON FIELDS ${CH02_FIELDS}
  RECORDS "utilization:cache,block_size,reserved_bytes,used_bytes,at_completion,time_average,fit_at_once"
          "block_size_sweep:block_size,reserved_bytes,at_completion,time_average,fit_at_once,table_entries"
  COMMAND ${CH02} utilization --model synthetic:tiny)
# The scenarios that run the model, small: both modes must give identical outputs (the program
# exits non-zero and prints NO otherwise).
# With --cost-device (docs/roofline.md) the turns are also modeled with prefix caching off and on.
nanoserve_smoke_test(ch02.multiturn_tiny LABELS ${CH02_LABELS}
  EXPECT "replies identical with and without prefix caching \\(6 turns\\): yes"
         "modeled \\(roofline, L4\\), fp32: prefix caching off [0-9.]+ ms, on [0-9.]+ ms"
  JSON FIELDS ${CH02_FIELDS} cost_model
  RECORDS "multiturn_summary:prefix_caching,turns,prefill_tokens_computed,prefill_tokens_skipped,hit_rate,rows_computed,cpu_seconds"
          "multiturn_turn:prefix_caching,session,turn,prompt_tokens,cached_tokens,computed_tokens,reply"
          "multiturn_check:identical,turns"
          "modeled_multiturn:device,modeled_off_s,modeled_on_s,cpu_seconds_off,cpu_seconds_on"
  COMMAND ${CH02} multiturn --model synthetic:tiny --new-tokens 3
          --chats "${CMAKE_CURRENT_SOURCE_DIR}/ch02/data/short_chats.txt" --cost-device l4)
nanoserve_smoke_test(ch02.parallel_sampling_tiny LABELS ${CH02_LABELS}
  EXPECT "identical shared and unshared \\(same seeds\\): yes"
  JSON FIELDS ${CH02_FIELDS}
  RECORDS "parallel_sampling:shared,n,prompt_blocks,peak_blocks,block_copies,prefill_rows,cpu_seconds,samples"
          "parallel_sampling_check:identical,distinct_samples"
  COMMAND ${CH02} parallel-sampling --model synthetic:tiny -n 3 --new-tokens 4)
# What scripts/tour.sh runs, compared with the tutorial's expected output.
nanoserve_expected_output_test(ch02_paged_kv_cache)
# Bad input: one clear message, non-zero exit.
add_test(NAME ch02.bad_block_size
         COMMAND ${CH02_EXPECT_FAILURE} "block-size" ${CH02} --block-size 0)
add_test(NAME ch02.unknown_flag
         COMMAND ${CH02_EXPECT_FAILURE} "not expected" ${CH02} multiturn --bogus)
add_test(NAME ch02.missing_chat_script
         COMMAND ${CH02_EXPECT_FAILURE} "missing.txt: file: cannot open" ${CH02} multiturn
                 --model synthetic:tiny --chats missing.txt)
add_test(NAME ch02.pool_too_small
         COMMAND ${CH02_EXPECT_FAILURE} "needs [0-9]+ free blocks but only" ${CH02}
                 parallel-sampling --model synthetic:tiny --num-blocks 4 -n 4 --new-tokens 2)
set_tests_properties(ch02.bad_block_size ch02.unknown_flag ch02.missing_chat_script
  ch02.pool_too_small PROPERTIES LABELS "${CH02_LABELS}")
