# Tests of the smoke runner (smoke_run.py) and of the expected-output comparison
# (output_structure.py), label `smoke`: each one gives them a run that must fail and requires
# the failure, with its reason (tests/cli/expect_failure.sh: non-zero exit, message on stderr).
# Together they prove that every smoke test can fail on each thing it checks. The failing
# programs are stand-ins printing the chapter programs' own failure lines — no chapter program
# has a flag that breaks its check (ch01 --check, ch02's identical-output checks, ch05 --check) —
# and the JSON checks also run on real chapter-1 output.
# Included by tests/CMakeLists.txt.
set(NS_SMOKE_DIR "${CMAKE_CURRENT_BINARY_DIR}/smoke")
file(MAKE_DIRECTORY "${NS_SMOKE_DIR}")
function(ns_runner_test name)
  add_test(NAME smoke_run.${name} COMMAND ${ARGN})
  set_tests_properties(smoke_run.${name} PROPERTIES LABELS "smoke")
endfunction()

# 1. Exit status: a non-zero exit and a signal fail, whatever the output says.
ns_runner_test(fails_on_exit_status ${NS_EXPECT_FAILURE} "FAIL: exit status 3"
  ${NS_SMOKE_RUN} --expect "all good" -- sh -c "echo all good && exit 3")
ns_runner_test(fails_on_signal ${NS_EXPECT_FAILURE} "FAIL: killed by signal 6"
  ${NS_SMOKE_RUN} -- sh -c "kill -ABRT $$")

# 2. A failed check line fails even with exit 0: the lines each chapter program prints when its
# check fails (chapters/ch01 main.cpp, ch02 multiturn.cpp and parallel_sampling.cpp, ch05
# main.cpp and tables.cpp).
function(ns_failed_check_test name line)  # `line` as one argument: it may hold a ';'
  add_test(NAME smoke_run.fails_on_check_line_${name}
           COMMAND ${NS_EXPECT_FAILURE} "FAIL: a check failed" ${NS_SMOKE_RUN}
                   -- printf "%s\\n" "header" "${line}" "footer")
  set_tests_properties(smoke_run.fails_on_check_line_${name} PROPERTIES LABELS "smoke")
endfunction()
ns_failed_check_test(ch01_oracle
  "  check naive-cache vs CPU oracle (same fp16 weights, fp32 KV): FAILED (tolerance atol 0.05, rtol 0.005) — step 3: 1 bad")
ns_failed_check_test(ch01_tokens "no-cache and naive-cache generated the same tokens: NO")
ns_failed_check_test(ch02_multiturn "  replies identical with and without prefix caching (12 turns): NO")
ns_failed_check_test(ch02_sampling
  "  4 of 4 samples differ from each other; every sample identical shared and unshared (same seeds): NO")
ns_failed_check_test(ch05_check
  "check: every decode step through the kernels vs the CPU oracle on the same (dequantized) weights: FAILED")
ns_failed_check_test(ch05_table_cell
  "  rtn    int4-g128-sym   4.23  117.1 KiB  247.9 KiB   5.0034 +18.72%  1.1320  1.50e-01    0.01     24.4    3.14e-01 FAILED")

# 3. A required regex that the output lacks.
ns_runner_test(fails_on_missing_expect ${NS_EXPECT_FAILURE} "FAIL: output lacks /goodbye/"
  ${NS_SMOKE_RUN} --expect "goodbye" -- echo hello)

# 4. JSON: none written (a stale file from an earlier run does not count), one that does not
# parse, a git_dirty that is not a bool.
set(json "${NS_SMOKE_DIR}/stale.json")
ns_runner_test(fails_on_missing_json ${NS_EXPECT_FAILURE} "FAIL: .*wrote no JSON file"
  sh -c "echo '{}' > '${json}' && exec \"$@\"" sh ${NS_SMOKE_RUN} --json "${json}" -- true)
set(json "${NS_SMOKE_DIR}/truncated.json")
ns_runner_test(fails_on_unparsable_json ${NS_EXPECT_FAILURE} "FAIL: .*not valid JSON"
  ${NS_SMOKE_RUN} --json "${json}" -- sh -c "printf '{\"records\": [' > '${json}'")
set(json "${NS_SMOKE_DIR}/dirty_string.json")
ns_runner_test(fails_on_git_dirty_not_bool ${NS_EXPECT_FAILURE} "FAIL: .*git_dirty is 'yes'"
  ${NS_SMOKE_RUN} --json "${json}" --field git_dirty
  -- sh -c "printf '{\"git_dirty\": \"yes\", \"records\": []}' > '${json}'")

# 5. JSON fields, on a real program's file: a missing top-level field, a missing table, a record
# without a field. The same run with the right fields passes (the control).
if(TARGET ch01_naive_kv_cache)
  foreach(case missing_field missing_table missing_record_field control)
    set(json "${NS_SMOKE_DIR}/ch01_kv_memory_${case}.json")
    set(run ${NS_SMOKE_RUN} --json "${json}" --field git_sha --field git_dirty)
    set(program -- $<TARGET_FILE:ch01_naive_kv_cache> kv-memory --json "${json}")
    if(case STREQUAL "missing_field")
      ns_runner_test(fails_on_${case} ${NS_EXPECT_FAILURE} "FAIL: .*no top-level field 'step_clock'"
        ${run} --field step_clock ${program})
    elseif(case STREQUAL "missing_table")
      ns_runner_test(fails_on_${case} ${NS_EXPECT_FAILURE} "FAIL: .*no record of table 'latency'"
        ${run} --records latency:ms ${program})
    elseif(case STREQUAL "missing_record_field")
      ns_runner_test(fails_on_${case} ${NS_EXPECT_FAILURE} "FAIL: .*record 0 of table 'kv_memory' lacks no_such_column"
        ${run} --records kv_memory:model,no_such_column ${program})
    else()
      ns_runner_test(passes_on_real_json ${run} --records kv_memory:model,bytes_per_token ${program})
    endif()
  endforeach()
  # A real program's non-zero exit.
  ns_runner_test(fails_on_real_exit_status ${NS_EXPECT_FAILURE} "FAIL: exit status 1"
    ${NS_SMOKE_RUN} -- $<TARGET_FILE:ch01_naive_kv_cache> --model missing.bin)
endif()

# 6. The expected-output comparison (output_structure.py) on chapter 3's and chapter 2's files:
# new timings pass; a changed row label, a changed number inside a label, a lost line fail.
set(ch02_expected "${PROJECT_SOURCE_DIR}/chapters/ch02_paged_kv_cache/expected_output.txt")
set(ch03_expected "${PROJECT_SOURCE_DIR}/chapters/ch03_static_batching/expected_output.txt")
# NS_STRUCTURE_CASE: a command comparing <expected> with a copy edited by the sed expressions
# (no ';' in them: CMake lists split there).
function(ns_structure_case name expected)
  set(copy "${NS_SMOKE_DIR}/${name}.txt")
  set(edits "")
  foreach(expression IN LISTS ARGN)
    string(APPEND edits " -e '${expression}'")
  endforeach()
  # `! cmp`: an edit that no longer matches the file would make the case prove nothing.
  set(NS_STRUCTURE_CASE sh -c "sed${edits} '${expected}' > '${copy}' && ! cmp -s '${expected}' '${copy}' && exec \"$@\""
      sh ${NS_OUTPUT_STRUCTURE} "${expected}" "${copy}" PARENT_SCOPE)
endfunction()
ns_structure_case(new_timings "${ch03_expected}" "s/[0-9]*\\.[0-9]/1234.5/g")
ns_runner_test(structure_passes_on_new_timings ${NS_STRUCTURE_CASE})
ns_structure_case(changed_label "${ch02_expected}" "s/^  greeting /  greetings/")
ns_runner_test(structure_fails_on_changed_row_label ${NS_EXPECT_FAILURE} "differs in structure"
  ${NS_STRUCTURE_CASE})
ns_structure_case(changed_label_number "${ch03_expected}" "s/static b=4 /static b=8 /")
ns_runner_test(structure_fails_on_changed_number_in_label ${NS_EXPECT_FAILURE} "differs in structure"
  ${NS_STRUCTURE_CASE})
ns_structure_case(lost_line "${ch03_expected}" "/^  first batch of/d")
ns_runner_test(structure_fails_on_lost_line ${NS_EXPECT_FAILURE} "differs in structure"
  ${NS_STRUCTURE_CASE})
# ... and through the runner, as chNN.expected_output uses it.
ns_runner_test(fails_on_changed_structure ${NS_EXPECT_FAILURE} "FAIL: stdout differs in structure"
  ${NS_SMOKE_RUN} --expected-output "${ch03_expected}"
  -- sh -c "sed -e 's/static b=4 /static b=5 /' '${ch03_expected}'")
ns_runner_test(passes_on_same_structure ${NS_SMOKE_RUN} --expected-output "${ch03_expected}"
  -- sh -c "sed -e 's/[0-9]*\\.[0-9]/99.9/g' '${ch03_expected}'")
