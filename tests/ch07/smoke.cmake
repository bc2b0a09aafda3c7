# Smoke runs of the chapter-7 program (included by tests/CMakeAreas.cmake; label ch07), the runs
# through tests/smoke/smoke_run.py (nanoserve_smoke_test). The simulator runs every row of the
# stack through the kernels, so these use a few short requests on synthetic:tiny.
if(NOT TARGET ch07_full_stack)
  return()
endif()
set(CH07 $<TARGET_FILE:ch07_full_stack>)
set(CH07_LABELS "ch07;${NANOSERVE_CHAPTER_TEST_LABELS}")
set(CH07_EXPECT_FAILURE bash "${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_failure.sh")
set(CH07_TINY --model synthetic:tiny -n 3 --prefix-tokens 8 --user-len fixed:4 --output-len fixed:3
              --max-model-len 32)
# What a row of the stacked table carries in JSON (the README's table and a plot read these).
set(CH07_ROW "row,config,continuous,paged,quant,spec,output_tokens_per_s,ttft_p50_s,ttft_p99_s,weight_bytes,kv_tokens,kv_efficiency,evidence,passes,rows,modeled_bytes,simulated_cpu_s,measured_gpu,kl,tokens")
# The stacked table: every row (static → continuous → paged → INT4 RTN → speculation).
nanoserve_smoke_test(ch07.stack_tiny LABELS ${CH07_LABELS}
  EXPECT "the stacked gains: modeled \\(roofline, H100 SXM\\)" "counted by the simulator"
         "== measured on"
  JSON FIELDS ${NS_REPORT_FIELDS} model workload cost_model RECORDS "stack:${CH07_ROW}"
  COMMAND ${CH07} stack ${CH07_TINY} --kv-tokens 96 --quants int4-rtn --eval-docs 0 --cost-device h100)
# One run with every technique at once: samples forked, swapped, speculated, quantized.
nanoserve_smoke_test(ch07.every_technique LABELS ${CH07_LABELS}
  EXPECT "parallel samples: n = 2" "by swapping"
  COMMAND ${CH07} ${CH07_TINY} --kv-tokens 4096 --samples 2 --preemption swap --host-blocks 16
          --spec layers-2 --gamma 2 --quant int8-rtn --temperature 0.8)
# A KV cache of its own type (issue 21): bf16 weights and activations over an fp32 cache, the
# draft model's cache too.
nanoserve_smoke_test(ch07.kv_dtype LABELS ${CH07_LABELS}
  EXPECT "bf16 weights and activations, fp32 KV" "speculation: [0-9]+ of [0-9]+ drafts accepted"
  COMMAND ${CH07} ${CH07_TINY} --kv-tokens 4096 --dtype bf16 --kv-dtype fp32 --spec layers-2 --gamma 2)
# What scripts/tour.sh runs, compared with the tutorial's expected output.
nanoserve_expected_output_test(ch07_full_stack)
# Bad input: one clear error and a non-zero exit.
add_test(NAME ch07.bad_quant
         COMMAND ${CH07_EXPECT_FAILURE} "--quant 'int3-rtn': expected none, int8-rtn" ${CH07}
                 ${CH07_TINY} --quant int3-rtn)
add_test(NAME ch07.draft_deeper_than_target
         COMMAND ${CH07_EXPECT_FAILURE} "--spec layers-4: K must be in \\[1, 3\\]" ${CH07}
                 ${CH07_TINY} --spec layers-4)
add_test(NAME ch07.spec_needs_continuous
         COMMAND ${CH07_EXPECT_FAILURE} "speculative decoding needs continuous batching" ${CH07}
                 ${CH07_TINY} --no-continuous --spec ngram)
add_test(NAME ch07.memory_too_small
         COMMAND ${CH07_EXPECT_FAILURE} "leaves KV for [0-9]+ tokens after the weights" ${CH07}
                 ${CH07_TINY} --kv-tokens 16)
add_test(NAME ch07.unknown_flag
         COMMAND ${CH07_EXPECT_FAILURE} "not expected" ${CH07} --bogus)
set_tests_properties(ch07.bad_quant ch07.draft_deeper_than_target ch07.spec_needs_continuous
  ch07.memory_too_small ch07.unknown_flag PROPERTIES LABELS "${CH07_LABELS}")
