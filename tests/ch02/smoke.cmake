# Smoke runs of the chapter-2 program (included by tests/CMakeAreas.cmake; label ch02).
if(NOT TARGET ch02_paged_kv_cache)
  return()
endif()
set(CH02 $<TARGET_FILE:ch02_paged_kv_cache>)
set(CH02_EXPECT_FAILURE bash "${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_failure.sh")
# The utilization table needs no forward pass; on synthetic:tiny (fp32: 1,024 bytes per
# position, 256-position regions) the mix is 968 positions: 968 / (8 × 256) = 47.3% naive, and
# 968 / 1008 = 96.0% in blocks of 16.
add_test(NAME ch02.utilization_tiny
         COMMAND ${CH02} utilization --model synthetic:tiny
                 --json "${CMAKE_CURRENT_BINARY_DIR}/ch02_utilization_tiny.json")
set_tests_properties(ch02.utilization_tiny PROPERTIES
  PASS_REGULAR_EXPRESSION "naive contiguous .* 47\\.3%.*paged, block 16 .* 96\\.0%")
# The scenarios that run the model, small: exit 0 means identical outputs in both modes.
add_test(NAME ch02.multiturn_tiny
         COMMAND ${CH02} multiturn --model synthetic:tiny --new-tokens 3
                 --chats "${CMAKE_CURRENT_SOURCE_DIR}/ch02/data/short_chats.txt")
set_tests_properties(ch02.multiturn_tiny PROPERTIES
  PASS_REGULAR_EXPRESSION "replies identical with and without prefix caching \\(6 turns\\): yes")
add_test(NAME ch02.parallel_sampling_tiny
         COMMAND ${CH02} parallel-sampling --model synthetic:tiny -n 3 --new-tokens 4)
set_tests_properties(ch02.parallel_sampling_tiny PROPERTIES
  PASS_REGULAR_EXPRESSION "identical shared and unshared \\(same seeds\\): yes")
# What scripts/tour.sh runs (the default model: stories260K when $NANOSERVE_DATA has it).
add_test(NAME ch02.tour COMMAND ${CH02} --tour)
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
set_tests_properties(ch02.utilization_tiny ch02.multiturn_tiny ch02.parallel_sampling_tiny
  ch02.tour ch02.bad_block_size ch02.unknown_flag ch02.missing_chat_script ch02.pool_too_small
  PROPERTIES LABELS "ch02;${NANOSERVE_CHAPTER_TEST_LABELS}")
