# Smoke runs of the chapter-6 program (included by tests/CMakeAreas.cmake; label ch06), the
# runs through tests/smoke/smoke_run.py (nanoserve_smoke_test).
if(NOT TARGET ch06_speculative_decoding)
  return()
endif()
set(CH06 $<TARGET_FILE:ch06_speculative_decoding>)
set(CH06_LABELS "ch06;${NANOSERVE_CHAPTER_TEST_LABELS}")
set(CH06_EXPECT_FAILURE bash "${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_failure.sh")
# What scripts/plots/ch06.py reads from a row (kernel and oracle rows alike).
set(CH06_ROW "case,draft,gamma,path,alpha,tokens_per_forward,c,c_bytes,verify_cost,measured_speedup,predicted_speedup,predicted_with_verify,predicted_at_bytes")
# Every path once on the tiny model: a layer draft and prompt lookup through the kernels, the
# warning rows, the oracle table and the JSON file.
nanoserve_smoke_test(ch06.tiny_all_paths LABELS ${CH06_LABELS}
  EXPECT "when it does not pay.*the same through the CPU oracle"
  JSON FIELDS ${NS_REPORT_FIELDS} model prompts
  RECORDS "sweep:${CH06_ROW}" "warning:${CH06_ROW},draft_weights,dequantized"
  COMMAND ${CH06} --model synthetic:tiny --drafts layers-1,ngram --gammas 2 --tokens 5 --oracle)
# What scripts/tour.sh runs, compared with the tutorial's expected output.
nanoserve_expected_output_test(ch06_speculative_decoding)
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
set_tests_properties(ch06.unknown_draft ch06.draft_deeper_than_target ch06.bad_gamma
  ch06.unknown_flag PROPERTIES LABELS "${CH06_LABELS}")
# --cost-device: the paper's prediction with α measured and c, verify from the roofline model.
nanoserve_smoke_test(ch06.cost_device LABELS ${CH06_LABELS}
  EXPECT "modeled \\(roofline, H200\\), fp32, context [0-9]+: alpha as measured"
  JSON FIELDS ${NS_REPORT_FIELDS} model prompts cost_model
  RECORDS "modeled:case,draft,gamma,alpha,c_modeled,verify_modeled,measured_speedup,predicted_speedup_modeled,device"
  COMMAND ${CH06} --model synthetic:tiny --drafts layers-1 --gammas 2 --tokens 3 --no-warnings
          --cost-device h200)
