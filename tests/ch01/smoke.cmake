# Smoke runs of the chapter-1 program (included by tests/CMakeAreas.cmake; label ch01), each
# through tests/smoke/smoke_run.py (nanoserve_smoke_test: exit status, check lines, JSON).
if(NOT TARGET ch01_naive_kv_cache)
  return()
endif()
set(CH01 $<TARGET_FILE:ch01_naive_kv_cache>)
set(CH01_LABELS "ch01;${NANOSERVE_CHAPTER_TEST_LABELS}")
set(CH01_EXPECT_FAILURE bash "${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_failure.sh")
string(REPEAT "x" 40 CH01_LONG_PROMPT)  # 41 byte tokens with BOS > a 32-position context
# What the plots and the results table (scripts/plots/ch01.py) read from the JSON.
set(CH01_RECORDS "latency:mode,step,position,ms,rows,max_abs_logit_diff"
  "generation:mode,model,dtype,prompt_tokens,generated_tokens,tokens,check_ok"
  "utilization:request,prompt_tokens,output_tokens,cached_positions,reserved_bytes,used_bytes"
  "utilization_summary:max_seq_len,reserved_bytes,used_bytes,at_completion,time_average,reserved_over_time,used_over_time"
  "kv_per_token:model,bytes_per_token,bytes_per_request,max_seq_len"
  "kv_memory:model,n_layers,n_kv_heads,head_dim,bytes_per_element,bytes_per_token,bytes_per_request,bytes_per_batch")
# --check on the tiny model in every storage type: both modes must pass the oracle and agree on
# every token (the program exits non-zero and prints FAILED / NO otherwise).
foreach(dtype fp32 fp16 bf16)
  nanoserve_smoke_test(ch01.check_tiny_${dtype} LABELS ${CH01_LABELS}
    EXPECT "check no-cache +vs CPU oracle .*: OK" "check naive-cache vs CPU oracle .*: OK"
           "generated the same tokens: yes"
    JSON FIELDS ${NS_REPORT_FIELDS} step_clock RECORDS ${CH01_RECORDS}
    COMMAND ${CH01} --model synthetic:tiny --steps 6 --check --dtype ${dtype})
endforeach()
# A KV cache type of its own (--kv-dtype): bf16 weights and activations over an fp32 cache.
nanoserve_smoke_test(ch01.check_tiny_bf16_kv_fp32 LABELS ${CH01_LABELS}
  EXPECT "KV cache fp32 \\(activations bf16\\)" "check naive-cache vs CPU oracle .*: OK"
         "generated the same tokens: yes"
  COMMAND ${CH01} --model synthetic:tiny --steps 6 --check --dtype bf16 --kv-dtype fp32)
# Zero steps: the prompt comes back, nothing runs, and the memory tables still print.
nanoserve_smoke_test(ch01.zero_steps LABELS ${CH01_LABELS} EXPECT "no forward pass ran"
  COMMAND ${CH01} --model synthetic:tiny --steps 0 --check)
# What scripts/tour.sh runs, compared with the tutorial's expected output.
nanoserve_expected_output_test(ch01_naive_kv_cache)
# The calculator: Llama-2-7B's fp16 KV is 0.5 MiB per token and 2 GiB per 4k-token request.
nanoserve_smoke_test(ch01.kv_memory LABELS ${CH01_LABELS}
  EXPECT "llama2-7b +32 +32 +128 +fp16 +512 KiB +2.00 GiB +32.00 GiB"
  JSON FIELDS ${NS_REPORT_FIELDS}
  RECORDS "kv_memory:model,n_layers,n_kv_heads,head_dim,bytes_per_element,bytes_per_token,bytes_per_request,bytes_per_batch"
  COMMAND ${CH01} kv-memory --context 4096 --batch 16)
add_test(NAME ch01.prompt_longer_than_context
         COMMAND ${CH01_EXPECT_FAILURE} "the context holds 32" ${CH01} --model synthetic:tiny
                 --max-seq-len 32 --prompt "${CH01_LONG_PROMPT}")
add_test(NAME ch01.bad_dtype
         COMMAND ${CH01_EXPECT_FAILURE} "dtype" ${CH01} --dtype fp8)
set_tests_properties(ch01.prompt_longer_than_context ch01.bad_dtype PROPERTIES LABELS "${CH01_LABELS}")
# `nanoserve generate/eval --device gpu` run through the same engine.
nanoserve_smoke_test(ch01.nanoserve_generate_gpu LABELS ${CH01_LABELS}
  EXPECT "kernels, fp16 weights, naive-cache"
  COMMAND $<TARGET_FILE:nanoserve> generate -m synthetic:tiny --device gpu --dtype fp16 -n 8 -t 0)
nanoserve_smoke_test(ch01.nanoserve_generate_gpu_kv_dtype LABELS ${CH01_LABELS}
  EXPECT "kernels, bf16 weights, naive-cache"
  COMMAND $<TARGET_FILE:nanoserve> generate -m synthetic:tiny --device gpu --dtype bf16
          --kv-dtype fp16 -n 8 -t 0)
add_test(NAME ch01.nanoserve_kv_dtype_needs_gpu
         COMMAND ${CH01_EXPECT_FAILURE} "--kv-dtype fp16 needs --device gpu"
                 $<TARGET_FILE:nanoserve> generate -m synthetic:tiny --kv-dtype fp16 -n 2)
set_tests_properties(ch01.nanoserve_kv_dtype_needs_gpu PROPERTIES LABELS "${CH01_LABELS}")
nanoserve_smoke_test(ch01.nanoserve_eval_gpu LABELS ${CH01_LABELS} EXPECT "perplexity"
  COMMAND $<TARGET_FILE:nanoserve> eval -m synthetic:tiny --device gpu --window 64
          --text "${CMAKE_CURRENT_SOURCE_DIR}/cli/two_documents.txt")
# --cost-device: the roofline model of every step beside the simulated time (docs/roofline.md).
nanoserve_smoke_test(ch01.cost_device LABELS ${CH01_LABELS}
  EXPECT "modeled \\(roofline, H200\\), fp16: the same passes" "naive-cache +[0-9.]+ +[0-9.]+"
         "attention +[0-9]+ "
  JSON FIELDS ${NS_REPORT_FIELDS} cost_model
  RECORDS "modeled_latency:mode,step,position,rows,device,modeled_ms,ms"
  COMMAND ${CH01} --model synthetic:tiny --steps 4 --dtype fp16 --cost-device h200)
