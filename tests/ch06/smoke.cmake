# Smoke runs of the chapter-6 program (included by tests/CMakeAreas.cmake; label ch06).
if(NOT TARGET ch06_speculative_decoding)
  return()
endif()
set(CH06 $<TARGET_FILE:ch06_speculative_decoding>)
set(CH06_EXPECT_FAILURE bash "${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_failure.sh")
# Every path once on the tiny model: a layer draft and prompt lookup through the kernels, the
# warning rows, the oracle table and the JSON file.
add_test(NAME ch06.tiny_all_paths
         COMMAND ${CH06} --model synthetic:tiny --drafts layers-1,ngram --gammas 2 --tokens 5
                 --oracle --json "${CMAKE_CURRENT_BINARY_DIR}/ch06_tiny.json")
set_tests_properties(ch06.tiny_all_paths PROPERTIES
  PASS_REGULAR_EXPRESSION "when it does not pay.*the same through the CPU oracle")
# What scripts/tour.sh runs (the default model: stories260K when $NANOSERVE_DATA has it).
add_test(NAME ch06.tour COMMAND ${CH06} --tour)
set_tests_properties(ch06.tour PROPERTIES
  PASS_REGULAR_EXPRESSION "speculative decoding through the kernels")
# Bad input: one clear error and a non-zero exit.
add_test(NAME ch06.unknown_draft
         COMMAND ${CH06_EXPECT_FAILURE} "draft 'int3-rtn': expected layers-K" ${CH06}
                 --model synthetic:tiny --drafts int3-rtn)
add_test(NAME ch06.draft_deeper_than_target
         COMMAND ${CH06_EXPECT_FAILURE} "k = 9 is outside \\[1, n_layers = 4\\]" ${CH06}
                 --model synthetic:tiny --drafts layers-9 --gammas 1 --tokens 2)
add_test(NAME ch06.bad_gamma
         COMMAND ${CH06_EXPECT_FAILURE} "--gammas: Value 0 not in range 1 to 63" ${CH06} --model synthetic:tiny
                 --gammas 0)
add_test(NAME ch06.unknown_flag
         COMMAND ${CH06_EXPECT_FAILURE} "not expected" ${CH06} --bogus)
set_tests_properties(ch06.tiny_all_paths ch06.tour ch06.unknown_draft
  ch06.draft_deeper_than_target ch06.bad_gamma ch06.unknown_flag
  PROPERTIES LABELS "ch06;${NANOSERVE_CHAPTER_TEST_LABELS}")
