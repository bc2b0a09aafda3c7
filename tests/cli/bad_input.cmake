# Issue 19's bad inputs, one test per exact example, grouped by cause (included by
# tests/CMakeLists.txt; label `cli` plus the program's area). Each refusal is checked on its exit
# code AND its message (expect_failure.sh); each run that must go on is checked on exit 0 AND
# what it says (expect_output.sh); run_with.sh makes the scratch inputs (FIFOs, directories,
# deeply nested JSON, a patched GGUF) and the conditions (a full disk, a memory limit, a
# timeout so that a hang fails instead of blocking CI). The library-level cases are in
# tests/common/test_bad_input_*.cpp and tests/ch0[24]/test_bad_input_*.cpp.
set(BI_DIR "${CMAKE_CURRENT_SOURCE_DIR}/cli")
set(BI_FAIL bash "${BI_DIR}/expect_failure.sh")
set(BI_OK bash "${BI_DIR}/expect_output.sh")
set(BI_RUN bash "${BI_DIR}/run_with.sh")
set(BI_NS $<TARGET_FILE:nanoserve>)
set(BI_CH02 $<TARGET_FILE:ch02_paged_kv_cache>)
set(BI_CH03 $<TARGET_FILE:ch03_static_batching>)
set(BI_CH04 $<TARGET_FILE:ch04_continuous_batching>)
set(BI_BD $<TARGET_FILE:bench_decode>)
set(BI_BK $<TARGET_FILE:bench_kernels>)
# Tests under `ulimit -v` run on the simulator only: the CUDA runtime and AddressSanitizer
# (its shadow memory) reserve far more address space than any limit a test could set.
if(NANOSERVE_BACKEND STREQUAL "sim" AND NOT NANOSERVE_SANITIZE)
  set(BI_MEMORY_LIMITS ON)
else()
  set(BI_MEMORY_LIMITS OFF)
endif()

# bad_input_test(NAME area COMMAND...): one test, labelled cli and `area`.
function(bad_input_test name area)
  add_test(NAME bad_input.${name} COMMAND ${ARGN})
  set_tests_properties(bad_input.${name} PROPERTIES LABELS "cli;${area}" SKIP_RETURN_CODE 77)
endfunction()

# ── 1. Deeply nested JSON: refused with the file and line, never a stack overflow ───────────
bad_input_test(deep_trace_ch03 ch03 ${BI_FAIL} "deep.jsonl:1: json: arrays and objects nest deeper than 64"
               ${BI_RUN} -- ${BI_CH03} -m synthetic:tiny --trace @DEEP_TRACE@)
bad_input_test(deep_trace_ch04 ch04 ${BI_FAIL} "deep.jsonl:1: json: arrays and objects nest deeper than 64"
               ${BI_RUN} -- ${BI_CH04} -m synthetic:tiny --trace @DEEP_TRACE@)
bad_input_test(deep_config_json common ${BI_FAIL} "config.json:1: json: arrays and objects nest deeper"
               ${BI_RUN} -- ${BI_NS} generate -m @DEEP_HF_DIR@)
bad_input_test(deep_tokenizer_json common ${BI_FAIL} "tokenizer.json:1: json: arrays and objects nest deeper"
               ${BI_RUN} -- ${BI_NS} generate -m synthetic:tiny -z @DEEP_TOKENIZER@)

# ── 2. Sizes from files and flags checked against stated limits before allocation ───────────
bad_input_test(gguf_context_2p21 common ${BI_FAIL} "llama.context_length: 2097152 is outside \\[1, 1048576\\]"
               ${BI_RUN} -- ${BI_NS} generate -m @GGUF_CTX_2097152@)
# A context at the limit: the KV cache holds the run (prompt + steps), not 2^20 positions
# (1.3 GB for stories260K), on the oracle and on the kernels.
if(BI_MEMORY_LIMITS)
  bad_input_test(gguf_context_sized_by_run_cpu common ${BI_OK} "."
                 ${BI_RUN} --ulimit-kb 700000 -- ${BI_NS} generate -m @GGUF_CTX_1048576@ -n 8 -t 0)
  bad_input_test(gguf_context_sized_by_run_gpu common ${BI_OK} "."
                 ${BI_RUN} --ulimit-kb 700000 -- ${BI_NS} generate -m @GGUF_CTX_1048576@ -n 8 -t 0
                 --device gpu)
endif()
bad_input_test(num_requests_1e9 ch03 ${BI_FAIL} "--num-requests: Value 1e9 not in range 1 to 100000"
               ${BI_CH03} -m synthetic:tiny --num-requests 1e9)
bad_input_test(num_blocks_device_memory ch04 ${BI_FAIL}
               "KV pool of 1048576 blocks .* needs .* of device memory, but only .* is free"
               ${BI_CH04} -m synthetic:tiny --num-blocks 1048576 --block-size 4096)

# ── 3. Write failures: exit non-zero with the path and strerror ─────────────────────────────
bad_input_test(json_dev_full common ${BI_FAIL} "/dev/full: cannot write: No space left on device"
               ${BI_NS} generate -m synthetic:tiny -n 2 --json /dev/full)
bad_input_test(stdout_dev_full_info common ${BI_FAIL} "stdout: write failed: No space left on device"
               ${BI_RUN} --stdout /dev/full -- ${BI_NS} info -m synthetic:tiny)
bad_input_test(stdout_dev_full_generate common ${BI_FAIL} "stdout: write failed: No space left on device"
               ${BI_RUN} --stdout /dev/full -- ${BI_NS} generate -m synthetic:tiny -n 4)
bad_input_test(stdout_dev_full_help common ${BI_FAIL} "stdout: write failed"
               ${BI_RUN} --stdout /dev/full -- ${BI_NS} --help)
bad_input_test(json_dev_full_ch03 ch03 ${BI_FAIL} "/dev/full: cannot write: No space left on device"
               ${BI_CH03} -m synthetic:tiny -n 2 --prompt-len fixed:4 --output-len fixed:2 -b 2
               --clock cpu --json /dev/full)
bad_input_test(stdout_dev_full_bench_kernels kernels ${BI_FAIL} "stdout: write failed"
               ${BI_RUN} --stdout /dev/full -- ${BI_BK} --list)

# ── 4. Silent acceptance: refuse what cannot be evaluated, say what was rejected ────────────
bad_input_test(eval_empty_text common ${BI_FAIL} "documents: none to evaluate: the file \\(0 bytes\\) is empty"
               ${BI_RUN} -- ${BI_NS} eval -m synthetic:tiny --window 64 --text @EMPTY@)
bad_input_test(eval_only_delimiters common ${BI_FAIL} "documents: none to evaluate: .* only delimiters"
               ${BI_RUN} -- ${BI_NS} eval -m synthetic:tiny --window 64 --text @DELIMITERS@)
bad_input_test(eval_directory common ${BI_FAIL} "is a directory, not a regular file \\(the text file must be one\\)"
               ${BI_RUN} -- ${BI_NS} eval -m synthetic:tiny --window 64 --text @DIR@)
bad_input_test(prompt_longer_than_context_ch03 ch03 ${BI_FAIL}
               "rejected 4 of 4 requests \\(first: request 0, prompt of 300 tokens is longer than the context"
               ${BI_CH03} -m synthetic:tiny -n 4 --prompt-len fixed:300 --clock cpu)
bad_input_test(num_blocks_1_ch03 ch03 ${BI_FAIL} "rejected 4 of 4 requests .* but the whole pool has 1"
               ${BI_CH03} -m synthetic:tiny -n 4 --num-blocks 1 --clock cpu)
bad_input_test(max_model_len_1_ch03 ch03 ${BI_FAIL} "rejected 4 of 4 requests .*max_model_len = 1"
               ${BI_CH03} -m synthetic:tiny -n 4 --max-model-len 1 --clock cpu)
bad_input_test(some_rejected_ch04 ch04 ${BI_OK} "continuous: rejected 3 of 4 requests \\(first: request 1"
               ${BI_CH04} -m synthetic:tiny --executor cost-model --num-blocks 1 -n 4)
bad_input_test(seed_beyond_2p64 common ${BI_FAIL} "--seed: '18446744073709551616' is not a seed"
               ${BI_NS} generate -m synthetic:tiny --seed 18446744073709551616)
bad_input_test(seed_negative common ${BI_FAIL} "--seed: '-1' is not a seed"
               ${BI_NS} generate -m synthetic:tiny --seed -1)
bad_input_test(seed_negative_ch03 ch03 ${BI_FAIL} "--seed: '-1' is not a seed" ${BI_CH03} --seed -1)

# ── 5. Hangs: virtual clocks skip idle time, the wall clock refuses long waits, no FIFO ─────
bad_input_test(rate_tiny ch04 ${BI_FAIL} "request 1 would arrive at .* past the limit of 1e7 s"
               ${BI_RUN} --timeout 20 -- ${BI_CH04} -m synthetic:tiny -n 2 --rate 1e-9)
bad_input_test(rate_small_wall_clock ch04 ${BI_FAIL} "--clock wall would wait that long in real time"
               ${BI_RUN} --timeout 20 -- ${BI_CH04} -m synthetic:tiny -n 2 --rate 0.0001)
bad_input_test(far_arrival_cost_model ch04 ${BI_OK} "continuous"
               ${BI_RUN} --timeout 20 -- ${BI_CH04} -m synthetic:tiny --executor cost-model --trace @FAR_TRACE@)
bad_input_test(far_arrival_cpu_clock ch03 ${BI_OK} "static b=2"
               ${BI_RUN} --timeout 30 -- ${BI_CH03} -m synthetic:tiny --clock cpu -b 2 --trace @FAR_TRACE@)
bad_input_test(fifo_model common ${BI_FAIL} "is a FIFO \\(named pipe\\), not a regular file \\(the model file"
               ${BI_RUN} --timeout 10 -- ${BI_NS} generate -m @FIFO@)
bad_input_test(fifo_tokenizer common ${BI_FAIL} "is a FIFO \\(named pipe\\), not a regular file \\(the tokenizer"
               ${BI_RUN} --timeout 10 -- ${BI_NS} generate -m synthetic:tiny -z @FIFO@)
bad_input_test(fifo_text common ${BI_FAIL} "is a FIFO"
               ${BI_RUN} --timeout 10 -- ${BI_NS} eval -m synthetic:tiny --window 64 --text @FIFO@)
bad_input_test(fifo_chat_script ch02 ${BI_FAIL} "is a FIFO \\(named pipe\\), not a regular file \\(the chat script"
               ${BI_RUN} --timeout 10 -- ${BI_CH02} multiturn --chats @FIFO@)
bad_input_test(fifo_trace ch03 ${BI_FAIL} "is a FIFO \\(named pipe\\), not a regular file \\(the trace"
               ${BI_RUN} --timeout 10 -- ${BI_CH03} -m synthetic:tiny --trace @FIFO@)

# ── 6. Memory follows the work, numbers have ranges, conflicting flags are errors ───────────
if(BI_MEMORY_LIMITS)  # 16 GB of address space: the simulated device's memory
  bad_input_test(bench_decode_defaults_memory cli ${BI_FAIL}
                 "--model synthetic:llama2-7b in (fp32|bf16) \\(weights\\).* needs .* of device memory, but only .* is free"
                 ${BI_RUN} --ulimit-kb 16000000 -- ${BI_BD})
endif()
bad_input_test(bench_decode_kv_dtype_unknown cli ${BI_FAIL} "--kv-dtype: fp8 not in \\{fp32,fp16,bf16\\}"
               ${BI_BD} --model synthetic:tiny --kv-dtype fp8)
bad_input_test(bench_decode_block_size_0 cli ${BI_FAIL} "--block-size: Value 0 not in range 1 to 4096"
               ${BI_BD} --model synthetic:tiny --block-size 0)
bad_input_test(bench_decode_block_size_negative cli ${BI_FAIL} "--block-size: Value -16 not in range"
               ${BI_BD} --model synthetic:tiny --block-size -16)
bad_input_test(bench_decode_batch_huge cli ${BI_FAIL} "--batch: Value 2147483647 not in range 1 to 4096"
               ${BI_BD} --model synthetic:tiny --batch 2147483647)
bad_input_test(bench_decode_warmup_negative cli ${BI_FAIL} "--warmup: Value -1 not in range"
               ${BI_BD} --model synthetic:tiny --warmup -1)
bad_input_test(bench_decode_steps_negative cli ${BI_FAIL} "--steps: Value -1 not in range"
               ${BI_BD} --model synthetic:tiny --steps -1)
bad_input_test(bench_decode_quick_conflict cli ${BI_FAIL} "--model excludes --quick|--quick excludes --model"
               ${BI_BD} --quick --model synthetic:small)
bad_input_test(bench_kernels_max_seconds_nan kernels ${BI_FAIL} "--max-seconds: 'nan' is not a number in"
               ${BI_BK} --max-seconds nan)
bad_input_test(sched_bench_num_seqs_huge ch04 ${BI_FAIL} "--num-seqs: Value 100000000 not in range 1 to 65536"
               ${BI_CH04} sched-bench --num-seqs 100000000)
bad_input_test(cost_model_num_requests_1e6 ch04 ${BI_FAIL} "--num-requests: Value 1000000 not in range"
               ${BI_CH04} -m synthetic:tiny --executor cost-model -n 1000000)
bad_input_test(no_chunked_prefill_budget_conflict ch04 ${BI_FAIL}
               "--max-num-batched-tokens 1 is less than max_model_len 256: with --no-chunked-prefill"
               ${BI_CH04} -m synthetic:tiny --no-chunked-prefill --max-num-batched-tokens 1)
bad_input_test(no_chunked_prefill_default_budget ch04 ${BI_OK}
               "max_num_batched_tokens 256 \\(raised from the default to max_model_len"
               ${BI_CH04} -m synthetic:tiny --executor cost-model --no-chunked-prefill -n 2)
# A batch larger than the workload is sized by the workload: -b 100000 for 4 requests stays in
# 150 MB (sized by -b, its logits alone would be 200 MB on the device and as much on the host).
if(BI_MEMORY_LIMITS)
  bad_input_test(static_batch_sized_by_work ch03 ${BI_OK} "static b=100000 +4 "
                 ${BI_RUN} --ulimit-kb 150000 -- ${BI_CH03} -m synthetic:tiny -n 4 -b 100000
                 --prompt-len fixed:4 --output-len fixed:2 --clock cpu)
endif()

# ── 7. Messages that name the real problem ─────────────────────────────────────────────────
bad_input_test(tokenizer_directory common ${BI_FAIL} "is a directory, not a regular file \\(the tokenizer"
               ${BI_RUN} -- ${BI_NS} generate -m synthetic:tiny -z @DIR@)
bad_input_test(chat_script_directory ch02 ${BI_FAIL} "is a directory, not a regular file \\(the chat script"
               ${BI_RUN} -- ${BI_CH02} multiturn --chats @DIR@)
bad_input_test(unknown_subcommand common ${BI_FAIL} "'serv' is not a subcommand \\(known: generate, eval, logits, info, quantize, tokenize, chat, convert, serve\\)"
               ${BI_NS} serv)
bad_input_test(unknown_subcommand_help common ${BI_FAIL} "'serv' is not a subcommand"
               ${BI_NS} serv --help)
# --cost-device takes a name of the roofline table; anything else is refused with the list.
bad_input_test(unknown_cost_device_ch03 ch03 ${BI_FAIL}
               "--cost-device: unknown device 'h300' \\(known: a100, h100, h200, l4, rtx4090\\)"
               ${BI_CH03} -m synthetic:tiny --cost-device h300)
bad_input_test(unknown_cost_device_ch04 ch04 ${BI_FAIL} "unknown device 'H200' \\(known: a100, h100"
               ${BI_CH04} sweep-rate -m synthetic:tiny --executor cost-model --cost-device H200)
