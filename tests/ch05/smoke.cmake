# Smoke runs of the chapter-5 program and of `nanoserve quantize` (included by
# tests/CMakeAreas.cmake; label ch05, the nanoserve ones also cli), the runs through
# tests/smoke/smoke_run.py (nanoserve_smoke_test).
if(NOT TARGET ch05_quantization)
  return()
endif()
set(CH05 $<TARGET_FILE:ch05_quantization>)
set(NANOSERVE $<TARGET_FILE:nanoserve>)
set(CH05_LABELS "ch05;${NANOSERVE_CHAPTER_TEST_LABELS}")
set(CH05_CLI_LABELS "ch05;cli;${NANOSERVE_CHAPTER_TEST_LABELS}")
set(CH05_EXPECT_FAILURE bash "${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_failure.sh")
set(CH05_TWO_DOCS "${CMAKE_CURRENT_SOURCE_DIR}/cli/two_documents.txt")
set(CH05_NSQM "${CMAKE_CURRENT_BINARY_DIR}/ch05_tiny_gptq.nsqm")
set(CH05_MEMORY_RECORDS "memory:model,format,bits_per_weight,linear_bytes,total_bytes,computed")

# The program on the synthetic model, every method, with --check: exits non-zero (and prints
# FAILED) if a decode step through the quantized kernels leaves the tolerance of the oracle on
# the same weights. The JSON holds what scripts/plots/ch05.py reads.
nanoserve_smoke_test(ch05.check_tiny LABELS ${CH05_LABELS}
  EXPECT "same \\(dequantized\\) weights: OK"
  JSON FIELDS ${NS_REPORT_FIELDS} step_clock
  RECORDS "results:model,method,format,bits,act_order,bits_per_weight,linear_bytes,perplexity,bits_per_byte,kl,decode_tokens_per_s,checked,check_ok,max_abs_logit_diff"
          "outliers:model,input,layer,mean_ratio,peak_ratio"
          "awq:model,format,layer,alpha_qkv,alpha_wo,alpha_w13,alpha_w2,clipped_groups"
          ${CH05_MEMORY_RECORDS}
  COMMAND ${CH05} --model synthetic:tiny --formats int4-g32-asym --act-order
          --eval-docs 1 --kl-docs 1 --calib-docs 1 --decode-steps 2 --check)
# True W4A16 (issue 21): bf16 activations, embedding, norms and classifier with an fp16 KV cache
# under the quantized rows, checked against the oracle on the same rounded weights.
nanoserve_smoke_test(ch05.check_tiny_bf16 LABELS ${CH05_LABELS}
  EXPECT "kernels of the quantized rows: bf16 activations.*fp16 KV cache"
         "same \\(dequantized\\) weights: OK"
  COMMAND ${CH05} --model synthetic:tiny --methods rtn,gptq --formats int4-g32 --eval-docs 1
          --kl-docs 1 --calib-docs 1 --decode-steps 4 --check --dtype bf16 --kv-dtype fp16)
# The memory calculator. Llama-2-7B at INT4 g128 by hand: linears 32 x (4 x 8,650,752 +
# 3 x 23,248,896) = 3,339,190,272 B = 3.11 GiB; + fp16 embedding, classifier and norms
# 524,820,480 B = 3.60 GiB in all; fp16 is 2 x 6,738,415,616 B, 3.49x more; 4 + 16/128 bits/w.
nanoserve_smoke_test(ch05.memory LABELS ${CH05_LABELS}
  EXPECT "llama2-7b +int4-g128-sym +4.125 +3.11 GiB +3.60 GiB +3.49x"
  JSON FIELDS ${NS_REPORT_FIELDS} RECORDS ${CH05_MEMORY_RECORDS}
  COMMAND ${CH05} memory)
# The tour, compared with the tutorial's expected output.
nanoserve_expected_output_test(ch05_quantization)
add_test(NAME ch05.bad_format
         COMMAND ${CH05_EXPECT_FAILURE} "bits 3 is not 4 or 8" ${CH05} --model synthetic:tiny --formats int3-g128)
add_test(NAME ch05.bad_method
         COMMAND ${CH05_EXPECT_FAILURE} "'gptx' is not one of rtn, gptq, awq" ${CH05} --methods rtn,gptx)
set_tests_properties(ch05.bad_format ch05.bad_method PROPERTIES LABELS "${CH05_LABELS}")

# nanoserve quantize → an NSQM file → generate (kernels) and eval (oracle) on it.
nanoserve_smoke_test(cli.quantize_synthetic LABELS ${CH05_CLI_LABELS} EXPECT "scheme +int4-g32-asym"
  COMMAND ${NANOSERVE} quantize -m synthetic:tiny --method gptq --bits 4 --group 32 --asym
          --act-order --calib-text "${CH05_TWO_DOCS}" --calib-first 0 --calib-count 2
          --out "${CH05_NSQM}")
set_tests_properties(cli.quantize_synthetic PROPERTIES FIXTURES_SETUP ch05_nsqm)
nanoserve_smoke_test(cli.generate_nsqm_gpu LABELS ${CH05_CLI_LABELS}
  EXPECT "kernels, int4-g32-asym-act \\+ fp32 weights, naive-cache"
  COMMAND ${NANOSERVE} generate -m "${CH05_NSQM}" --device gpu -n 8 -t 0)
nanoserve_smoke_test(cli.eval_nsqm_cpu LABELS ${CH05_CLI_LABELS} EXPECT "dequantized weights.*perplexity"
  COMMAND ${NANOSERVE} eval -m "${CH05_NSQM}" --window 64 --text "${CH05_TWO_DOCS}")
set_tests_properties(cli.generate_nsqm_gpu cli.eval_nsqm_cpu PROPERTIES FIXTURES_REQUIRED ch05_nsqm)
# Bad input: one clear error, never a crash.
add_test(NAME cli.quantize_unknown_method
         COMMAND ${CH05_EXPECT_FAILURE} "'gptx' is not one of rtn, gptq, awq" ${NANOSERVE}
                 quantize -m synthetic:tiny --method gptx --out "${CMAKE_CURRENT_BINARY_DIR}/never.nsqm")
add_test(NAME cli.quantize_bits3
         COMMAND ${CH05_EXPECT_FAILURE} "bits 3 is not 4 or 8" ${NANOSERVE}
                 quantize -m synthetic:tiny --bits 3 --out "${CMAKE_CURRENT_BINARY_DIR}/never.nsqm")
add_test(NAME cli.quantize_act_order_needs_gptq
         COMMAND ${CH05_EXPECT_FAILURE} "act-order is a GPTQ option" ${NANOSERVE}
                 quantize -m synthetic:tiny --method awq --act-order --out "${CMAKE_CURRENT_BINARY_DIR}/never.nsqm")
add_test(NAME cli.generate_truncated_nsqm
         COMMAND ${CH05_EXPECT_FAILURE} "error: .*truncated.nsqm" bash -c
                 "head -c 3000 '${CH05_NSQM}' > '${CMAKE_CURRENT_BINARY_DIR}/truncated.nsqm' && exec '${NANOSERVE}' generate -m '${CMAKE_CURRENT_BINARY_DIR}/truncated.nsqm' -n 4")
add_test(NAME cli.generate_bad_version_nsqm
         COMMAND ${CH05_EXPECT_FAILURE} "header.version" bash -c
                 "{ printf 'NSQM\\x09\\x00\\x00\\x00'; head -c 72 /dev/zero; } > '${CMAKE_CURRENT_BINARY_DIR}/bad_version.nsqm' && exec '${NANOSERVE}' generate -m '${CMAKE_CURRENT_BINARY_DIR}/bad_version.nsqm' -n 4")
set_tests_properties(cli.generate_truncated_nsqm PROPERTIES FIXTURES_REQUIRED ch05_nsqm)

# nanoserve quantize --out FILE.gguf: lossless Q4_0/Q8_0 generating the NSQM file's story
# (tests/cli/quantize_gguf_smoke.sh), and what GGUF cannot store refused before loading.
add_test(NAME cli.quantize_gguf_round_trip
         COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/cli/quantize_gguf_smoke.sh" ${NANOSERVE})
set_tests_properties(cli.quantize_gguf_round_trip PROPERTIES LABELS "${CH05_CLI_LABELS}" SKIP_RETURN_CODE 77)
add_test(NAME cli.quantize_gguf_group128
         COMMAND ${CH05_EXPECT_FAILURE} "scheme int4-g128-sym has no GGUF form: GGUF stores int4-g32-sym [(]as Q4_0[)]"
                 ${NANOSERVE} quantize -m synthetic:tiny --group 128 --out "${CMAKE_CURRENT_BINARY_DIR}/never.gguf")
add_test(NAME cli.quantize_gguf_asym
         COMMAND ${CH05_EXPECT_FAILURE} "scheme int8-g32-asym has no GGUF form"
                 ${NANOSERVE} quantize -m synthetic:tiny --bits 8 --asym --out "${CMAKE_CURRENT_BINARY_DIR}/never.gguf")
add_test(NAME cli.quantize_gguf_act_order
         COMMAND ${CH05_EXPECT_FAILURE} "--act-order scatters a group's columns"
                 ${NANOSERVE} quantize -m synthetic:tiny --method gptq --act-order --out "${CMAKE_CURRENT_BINARY_DIR}/never.gguf")
add_test(NAME cli.quantize_gguf_q4_k_needs_rtn
         COMMAND ${CH05_EXPECT_FAILURE} "--gguf-type q4_k runs ggml's own Q4_K quantizer .*not --method gptq"
                 ${NANOSERVE} quantize -m synthetic:tiny --method gptq --gguf-type q4_k --out "${CMAKE_CURRENT_BINARY_DIR}/never.gguf")
add_test(NAME cli.quantize_gguf_type_needs_gguf_out
         COMMAND ${CH05_EXPECT_FAILURE} "--gguf-type q8_0 needs an --out that ends in .gguf"
                 ${NANOSERVE} quantize -m synthetic:tiny --gguf-type q8_0 --out "${CMAKE_CURRENT_BINARY_DIR}/never.nsqm")
add_test(NAME cli.quantize_gguf_byte_tokenizer
         COMMAND ${CH05_EXPECT_FAILURE} "synthetic:tiny: its tokenizer .* has no GGUF form"
                 ${NANOSERVE} quantize -m synthetic:tiny --out "${CMAKE_CURRENT_BINARY_DIR}/never.gguf")
set_tests_properties(cli.quantize_gguf_group128 cli.quantize_gguf_asym cli.quantize_gguf_act_order
  cli.quantize_gguf_q4_k_needs_rtn cli.quantize_gguf_type_needs_gguf_out cli.quantize_gguf_byte_tokenizer
  PROPERTIES LABELS "${CH05_CLI_LABELS}")
set_tests_properties(cli.quantize_unknown_method cli.quantize_bits3 cli.quantize_act_order_needs_gptq
  cli.generate_truncated_nsqm cli.generate_bad_version_nsqm
  PROPERTIES LABELS "${CH05_CLI_LABELS}")
# --cost-device: modeled decode step per format, of the model and of Llama-2-7B, vs fp16.
nanoserve_smoke_test(ch05.cost_device LABELS ${CH05_LABELS}
  EXPECT "decode speed, modeled \\(roofline, H200\\)" "rtn int4-g32-asym +int4-g32-asym \\(fp16 act\\)"
  JSON FIELDS ${NS_REPORT_FIELDS} cost_model
  RECORDS "modeled_decode:model,method,format,modeled_as,device,step_modeled_s,speedup_vs_fp16_modeled,llama2_7b_step_modeled_s,llama2_7b_speedup_vs_fp16_modeled,measured_tokens_per_s"
  COMMAND ${CH05} --model synthetic:tiny --methods rtn --formats int4-g32-asym
          --eval-docs 1 --kl-docs 1 --calib-docs 1 --decode-steps 2 --cost-device h200)
