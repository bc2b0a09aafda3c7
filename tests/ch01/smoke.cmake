# Smoke runs of the chapter-1 program (included by tests/CMakeAreas.cmake; label ch01).
if(NOT TARGET ch01_naive_kv_cache)
  return()
endif()
set(CH01 $<TARGET_FILE:ch01_naive_kv_cache>)
set(CH01_EXPECT_FAILURE bash "${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_failure.sh")
string(REPEAT "x" 40 CH01_LONG_PROMPT)  # 41 byte tokens with BOS > a 32-position context
# --check on the tiny model in every storage type: exits non-zero if a step leaves the tolerance
# or the two modes disagree on a token.
foreach(dtype fp32 fp16 bf16)
  add_test(NAME ch01.check_tiny_${dtype}
           COMMAND ${CH01} --model synthetic:tiny --steps 6 --check --dtype ${dtype}
                   --json "${CMAKE_CURRENT_BINARY_DIR}/ch01_check_tiny_${dtype}.json")
  set_tests_properties(ch01.check_tiny_${dtype} PROPERTIES
    PASS_REGULAR_EXPRESSION "check naive-cache vs CPU oracle.*: OK")
endforeach()
# Zero steps: the prompt comes back, nothing runs, and the memory tables still print.
add_test(NAME ch01.zero_steps COMMAND ${CH01} --model synthetic:tiny --steps 0 --check)
set_tests_properties(ch01.zero_steps PROPERTIES PASS_REGULAR_EXPRESSION "no forward pass ran")
# What scripts/tour.sh runs (the default model: stories260K when $NANOSERVE_DATA has it).
add_test(NAME ch01.tour COMMAND ${CH01} --tour)
# The calculator: Llama-2-7B's fp16 KV is 0.5 MiB per token and 2 GiB per 4k-token request.
add_test(NAME ch01.kv_memory COMMAND ${CH01} kv-memory --context 4096 --batch 16)
set_tests_properties(ch01.kv_memory PROPERTIES
  PASS_REGULAR_EXPRESSION "llama2-7b +32 +32 +128 +fp16 +512 KiB +2.00 GiB +32.00 GiB")
add_test(NAME ch01.prompt_longer_than_context
         COMMAND ${CH01_EXPECT_FAILURE} "the context holds 32" ${CH01} --model synthetic:tiny
                 --max-seq-len 32 --prompt "${CH01_LONG_PROMPT}")
add_test(NAME ch01.bad_dtype
         COMMAND ${CH01_EXPECT_FAILURE} "dtype" ${CH01} --dtype fp8)
# `nanoserve generate/eval --device gpu` run through the same engine.
add_test(NAME ch01.nanoserve_generate_gpu
         COMMAND nanoserve generate -m synthetic:tiny --device gpu --dtype fp16 -n 8 -t 0)
set_tests_properties(ch01.nanoserve_generate_gpu PROPERTIES
  PASS_REGULAR_EXPRESSION "kernels, fp16 weights, naive-cache")
add_test(NAME ch01.nanoserve_eval_gpu
         COMMAND nanoserve eval -m synthetic:tiny --device gpu --window 64
                 --text "${CMAKE_CURRENT_SOURCE_DIR}/cli/two_documents.txt")
set_tests_properties(ch01.check_tiny_fp32 ch01.check_tiny_fp16 ch01.check_tiny_bf16 ch01.tour
  ch01.zero_steps
  ch01.kv_memory ch01.prompt_longer_than_context ch01.bad_dtype ch01.nanoserve_generate_gpu
  ch01.nanoserve_eval_gpu
  PROPERTIES LABELS "ch01;${NANOSERVE_CHAPTER_TEST_LABELS}")
