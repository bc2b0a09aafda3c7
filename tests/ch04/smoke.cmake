# Smoke runs of the chapter-4 program (included by tests/CMakeAreas.cmake; label ch04), each
# through tests/smoke/smoke_run.py (nanoserve_smoke_test).
if(NOT TARGET ch04_continuous_batching)
  return()
endif()
set(CH04 $<TARGET_FILE:ch04_continuous_batching>)
set(CH04_LABELS "ch04;${NANOSERVE_CHAPTER_TEST_LABELS}")
set(CH04_EXPECT_FAILURE bash "${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_failure.sh")
set(CH04_TINY --model synthetic:tiny -n 4 --prompt-len uniform:4:20 --output-len uniform:2:6
              --clock cpu)
set(CH04_FIELDS ${NS_REPORT_FIELDS} model clock executor)
# What scripts/plots/ch03_ch04.py reads from a serving run.
set(CH04_SERVING_RECORDS "serving:${NS_SERVING_METRIC_FIELDS}" "kv_timeline:config,points"
                         "latency_cdf:config,ttft_s,e2e_s")
# Continuous batching with a small pool and static batching alongside, JSON read back.
# With --cost-device the same passes are also modeled on that GPU (docs/roofline.md); decode
# steps replay CUDA graphs (and are modeled as graph launches).
nanoserve_smoke_test(ch04.continuous_tiny LABELS ${CH04_LABELS} EXPECT "static b=2"
  "modeled \\(roofline, H100 SXM\\), fp32: the same passes take continuous [0-9.]+ ms busy"
  "the step on the device: [0-9]+ passes, [0-9]+ uploads \\(1 per pass\\); [0-9]+ replayed from"
  JSON FIELDS ${CH04_FIELDS} cost_model RECORDS ${CH04_SERVING_RECORDS} "serving:modeled_s,steps"
  COMMAND ${CH04} ${CH04_TINY} --num-blocks 8 --block-size 4 --max-num-batched-tokens 8
          --compare-static 2 --cost-device h100)
# ... and with --no-cuda-graphs every step is launched kernel by kernel.
nanoserve_smoke_test(ch04.no_chunked_prefill LABELS ${CH04_LABELS} EXPECT "chunked prefill off"
  "no CUDA graphs" "the step on the device: .*all launched kernel by kernel"
  JSON FIELDS ${CH04_FIELDS} RECORDS ${CH04_SERVING_RECORDS}
  COMMAND ${CH04} ${CH04_TINY} --no-chunked-prefill --max-model-len 32 --no-cuda-graphs)
nanoserve_smoke_test(ch04.sweep_pool LABELS ${CH04_LABELS} EXPECT "preemption as the KV pool shrinks"
  JSON FIELDS ${CH04_FIELDS} RECORDS "pool:num_blocks,${NS_SERVING_METRIC_FIELDS}"
  COMMAND ${CH04} sweep-pool ${CH04_TINY} --block-size 4 --pool-blocks 16,7)
nanoserve_smoke_test(ch04.sweep_rate_cost_model LABELS ${CH04_LABELS} EXPECT "inf \\|"
  JSON FIELDS ${CH04_FIELDS} RECORDS "rate_sweep:rate,policy,executor,${NS_SERVING_METRIC_FIELDS}"
  COMMAND ${CH04} sweep-rate --model synthetic:tiny -n 8 --executor cost-model --rates 2,inf)
nanoserve_smoke_test(ch04.sched_bench LABELS ${CH04_LABELS} EXPECT "schedule us"
  JSON FIELDS ${NS_REPORT_FIELDS} RECORDS "sched_bench:num_seqs,steps,schedule_us,update_us,ns_per_seq"
  COMMAND ${CH04} sched-bench --num-seqs 32 --tour)
# The tour's workload with every request at t = 0, compared with the tutorial's expected output
# (the tour's own 4/s arrivals on the CPU clock make the schedule depend on the timings).
nanoserve_expected_output_test(ch04_continuous_batching)
# --rate inf is an offline batch; a non-positive rate is refused by the workload's check.
nanoserve_smoke_test(ch04.rate_inf LABELS ${CH04_LABELS} EXPECT "rate inf/s"
  COMMAND ${CH04} ${CH04_TINY} --rate inf)
add_test(NAME ch04.bad_rate
         COMMAND ${CH04_EXPECT_FAILURE} "--rates: 'fast'" ${CH04} sweep-rate --rates 1,fast)
add_test(NAME ch04.bad_num_blocks
         COMMAND ${CH04_EXPECT_FAILURE} "num-blocks" ${CH04} --num-blocks 0)
add_test(NAME ch04.bad_trace
         COMMAND ${CH04_EXPECT_FAILURE} "not found|does not exist|File does not exist" ${CH04}
                 --trace missing_trace.jsonl)
add_test(NAME ch04.bad_rate_zero
         COMMAND ${CH04_EXPECT_FAILURE} "--rate: '0' is not a number in \\(0, inf\\]" ${CH04} --model synthetic:tiny --rate 0)
set_tests_properties(ch04.bad_rate ch04.bad_num_blocks ch04.bad_trace ch04.bad_rate_zero
  PROPERTIES LABELS "${CH04_LABELS}")
# --executor cost-model --cost-device: the virtual clock advances by each pass's roofline time.
nanoserve_smoke_test(ch04.sweep_rate_roofline LABELS ${CH04_LABELS}
  EXPECT "each pass at its modeled \\(roofline, RTX 4090\\) time" "inf \\|"
  JSON FIELDS ${CH04_FIELDS} cost_model RECORDS "rate_sweep:rate,policy,executor,cost_device"
  COMMAND ${CH04} sweep-rate --model synthetic:tiny -n 8 --executor cost-model --rates 2,inf
          --cost-device rtx4090)
