# Smoke runs of the chapter-5 program and of `nanoserve quantize` (included by
# tests/CMakeAreas.cmake; label ch05, the nanoserve ones also cli).
if(NOT TARGET ch05_quantization)
  return()
endif()
set(CH05 $<TARGET_FILE:ch05_quantization>)
set(CH05_EXPECT_FAILURE bash "${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_failure.sh")
set(CH05_TWO_DOCS "${CMAKE_CURRENT_SOURCE_DIR}/cli/two_documents.txt")
set(CH05_NSQM "${CMAKE_CURRENT_BINARY_DIR}/ch05_tiny_gptq.nsqm")

# The program on the synthetic model, every method, with --check: exits non-zero if a decode
# step through the quantized kernels leaves the tolerance of the oracle on the same weights.
add_test(NAME ch05.check_tiny
         COMMAND ${CH05} --model synthetic:tiny --formats int4-g32-asym --act-order
                 --eval-docs 1 --kl-docs 1 --calib-docs 1 --decode-steps 2 --check
                 --json "${CMAKE_CURRENT_BINARY_DIR}/ch05_check_tiny.json")
set_tests_properties(ch05.check_tiny PROPERTIES PASS_REGULAR_EXPRESSION "same \\(dequantized\\) weights: OK")
# The memory calculator. Llama-2-7B at INT4 g128 by hand: linears 32 x (4 x 8,650,752 +
# 3 x 23,248,896) = 3,339,190,272 B = 3.11 GiB; + fp16 embedding, classifier and norms
# 524,820,480 B = 3.60 GiB in all; fp16 is 2 x 6,738,415,616 B, 3.49x more; 4 + 16/128 bits/w.
add_test(NAME ch05.memory COMMAND ${CH05} memory)
set_tests_properties(ch05.memory PROPERTIES
  PASS_REGULAR_EXPRESSION "llama2-7b +int4-g128-sym +4.125 +3.11 GiB +3.60 GiB +3.49x")
add_test(NAME ch05.bad_format
         COMMAND ${CH05_EXPECT_FAILURE} "bits 3 is not 4 or 8" ${CH05} --model synthetic:tiny --formats int3-g128)
add_test(NAME ch05.bad_method
         COMMAND ${CH05_EXPECT_FAILURE} "'gptx' is not one of rtn, gptq, awq" ${CH05} --methods rtn,gptx)

# nanoserve quantize → an NSQM file → generate (kernels) and eval (oracle) on it.
add_test(NAME cli.quantize_synthetic
         COMMAND nanoserve quantize -m synthetic:tiny --method gptq --bits 4 --group 32 --asym
                 --act-order --calib-text "${CH05_TWO_DOCS}" --calib-first 0 --calib-count 2
                 --out "${CH05_NSQM}")
set_tests_properties(cli.quantize_synthetic PROPERTIES FIXTURES_SETUP ch05_nsqm
  PASS_REGULAR_EXPRESSION "scheme +int4-g32-asym")
add_test(NAME cli.generate_nsqm_gpu
         COMMAND nanoserve generate -m "${CH05_NSQM}" --device gpu -n 8 -t 0)
set_tests_properties(cli.generate_nsqm_gpu PROPERTIES FIXTURES_REQUIRED ch05_nsqm
  PASS_REGULAR_EXPRESSION "kernels, int4-g32-asym-act \\+ fp32 weights, naive-cache")
add_test(NAME cli.eval_nsqm_cpu
         COMMAND nanoserve eval -m "${CH05_NSQM}" --window 64 --text "${CH05_TWO_DOCS}")
set_tests_properties(cli.eval_nsqm_cpu PROPERTIES FIXTURES_REQUIRED ch05_nsqm
  PASS_REGULAR_EXPRESSION "dequantized weights.*perplexity")
# Bad input: one clear error, never a crash.
add_test(NAME cli.quantize_unknown_method
         COMMAND ${CH05_EXPECT_FAILURE} "'gptx' is not one of rtn, gptq, awq" $<TARGET_FILE:nanoserve>
                 quantize -m synthetic:tiny --method gptx --out "${CMAKE_CURRENT_BINARY_DIR}/never.nsqm")
add_test(NAME cli.quantize_bits3
         COMMAND ${CH05_EXPECT_FAILURE} "bits 3 is not 4 or 8" $<TARGET_FILE:nanoserve>
                 quantize -m synthetic:tiny --bits 3 --out "${CMAKE_CURRENT_BINARY_DIR}/never.nsqm")
add_test(NAME cli.quantize_act_order_needs_gptq
         COMMAND ${CH05_EXPECT_FAILURE} "act-order is a GPTQ option" $<TARGET_FILE:nanoserve>
                 quantize -m synthetic:tiny --method awq --act-order --out "${CMAKE_CURRENT_BINARY_DIR}/never.nsqm")
add_test(NAME cli.generate_truncated_nsqm
         COMMAND ${CH05_EXPECT_FAILURE} "error: .*truncated.nsqm" bash -c
                 "head -c 3000 '${CH05_NSQM}' > '${CMAKE_CURRENT_BINARY_DIR}/truncated.nsqm' && exec '$<TARGET_FILE:nanoserve>' generate -m '${CMAKE_CURRENT_BINARY_DIR}/truncated.nsqm' -n 4")
add_test(NAME cli.generate_bad_version_nsqm
         COMMAND ${CH05_EXPECT_FAILURE} "header.version" bash -c
                 "{ printf 'NSQM\\x09\\x00\\x00\\x00'; head -c 72 /dev/zero; } > '${CMAKE_CURRENT_BINARY_DIR}/bad_version.nsqm' && exec '$<TARGET_FILE:nanoserve>' generate -m '${CMAKE_CURRENT_BINARY_DIR}/bad_version.nsqm' -n 4")
set_tests_properties(cli.generate_truncated_nsqm PROPERTIES FIXTURES_REQUIRED ch05_nsqm)

set_tests_properties(ch05.check_tiny ch05.memory ch05.bad_format ch05.bad_method
  PROPERTIES LABELS "ch05;${NANOSERVE_CHAPTER_TEST_LABELS}")
set_tests_properties(cli.quantize_synthetic cli.generate_nsqm_gpu cli.eval_nsqm_cpu
  cli.quantize_unknown_method cli.quantize_bits3 cli.quantize_act_order_needs_gptq
  cli.generate_truncated_nsqm cli.generate_bad_version_nsqm
  PROPERTIES LABELS "ch05;cli;${NANOSERVE_CHAPTER_TEST_LABELS}")
