# Smoke tests: a program's command line run by tests/smoke/smoke_run.py, which fails on a
# non-zero exit or a signal, on a failed check line (FAILED, ": NO"), on a missing EXPECT match,
# on a JSON file that is missing, does not parse or lacks its fields, and (expected-output
# tests) on an output whose structure left the chapter's expected_output.txt.
# Included by tests/CMakeLists.txt before the chapters' tests/chNN/smoke.cmake.
find_package(Python3 3.6 REQUIRED COMPONENTS Interpreter)
# The interpreter itself rather than a launcher in front of it: a pyenv shim costs ~0.2 s per
# start, and a test run starts it ~100 times.
execute_process(COMMAND "${Python3_EXECUTABLE}" -c "import sys; print(sys.executable)"
                OUTPUT_VARIABLE NS_PYTHON3 OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT EXISTS "${NS_PYTHON3}")
  set(NS_PYTHON3 "${Python3_EXECUTABLE}")
endif()
set(NS_SMOKE_RUN "${NS_PYTHON3}" "${CMAKE_CURRENT_LIST_DIR}/smoke_run.py")
set(NS_OUTPUT_STRUCTURE "${NS_PYTHON3}" "${CMAKE_CURRENT_LIST_DIR}/output_structure.py")
# The provenance make_report() (common/report.h) stamps on every chapter program's JSON.
set(NS_REPORT_FIELDS program backend device git_sha git_dirty date records)

# nanoserve_smoke_test(<name> LABELS <labels> [EXPECT <regex>...] [JSON] [FIELDS <field>...]
#                      [RECORDS <table:field,field>...] COMMAND <program> <args>...)
#   EXPECT   Python regexes that must match the output ('.' spans lines).
#   JSON     append `--json <build dir>/<name>.json` to the command and read the file back:
#            FIELDS must be at its top level (usually ${NS_REPORT_FIELDS} and the chapter's
#            own), RECORDS "table:f1,f2" needs a record of that table, each with those fields
#            (the fields the chapter's plots in scripts/plots/ read).
function(nanoserve_smoke_test name)
  cmake_parse_arguments(ARG "JSON" "" "LABELS;EXPECT;FIELDS;RECORDS;COMMAND" ${ARGN})
  set(runner ${NS_SMOKE_RUN})
  foreach(regex IN LISTS ARG_EXPECT)
    list(APPEND runner --expect "${regex}")
  endforeach()
  set(command ${ARG_COMMAND})
  if(ARG_JSON)
    set(json "${CMAKE_CURRENT_BINARY_DIR}/${name}.json")
    list(APPEND runner --json "${json}")
    list(APPEND command --json "${json}")
    foreach(field IN LISTS ARG_FIELDS)
      list(APPEND runner --field "${field}")
    endforeach()
    foreach(spec IN LISTS ARG_RECORDS)
      list(APPEND runner --records "${spec}")
    endforeach()
  elseif(ARG_FIELDS OR ARG_RECORDS)
    message(FATAL_ERROR "nanoserve_smoke_test(${name}): FIELDS and RECORDS need JSON")
  endif()
  add_test(NAME ${name} COMMAND ${runner} -- ${command})
  set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}")
endfunction()

# nanoserve_expected_output_test(<chapter dir>): chNN.expected_output reruns the command on the
# first line of chapters/<dir>/expected_output.txt ("$ <dir> <args>", which
# scripts/update_expected_output.sh writes) and requires its stdout to have the same structure
# (tests/smoke/output_structure.py: numbers blanked, everything else equal). The expected
# outputs are simulator runs, so other builds only run the command (chNN.tour). Skipped when the
# command's --model is not in $NANOSERVE_DATA.
function(nanoserve_expected_output_test dir)
  string(SUBSTRING "${dir}" 0 4 chapter)
  set(file "${PROJECT_SOURCE_DIR}/chapters/${dir}/expected_output.txt")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${file}")
  file(STRINGS "${file}" first LIMIT_COUNT 1)
  if(NOT first MATCHES "^\\$ ${dir}( (.*))?$")
    message(FATAL_ERROR "${file}: the first line must be the command, '$ ${dir} <args>'; it is '${first}'")
  endif()
  separate_arguments(args UNIX_COMMAND "${CMAKE_MATCH_2}")
  set(needs_data "")
  list(FIND args --model at)
  if(at GREATER -1)
    math(EXPR at "${at} + 1")
    list(GET args ${at} model)
    if(NOT model MATCHES "^synthetic:")
      set(needs_data --needs-data "${model}")
    endif()
  endif()
  if(NANOSERVE_BACKEND STREQUAL "sim")
    set(name ${chapter}.expected_output)
    add_test(NAME ${name} COMMAND ${NS_SMOKE_RUN} --expected-output "${file}" ${needs_data}
                                  -- $<TARGET_FILE:${dir}> ${args})
  else()
    set(name ${chapter}.tour)
    add_test(NAME ${name} COMMAND ${NS_SMOKE_RUN} ${needs_data} -- $<TARGET_FILE:${dir}> ${args})
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${chapter};${NANOSERVE_CHAPTER_TEST_LABELS}"
                                          SKIP_RETURN_CODE 77)
endfunction()

# The serving metrics of a chapter-3/4 record (engine metrics_record()) that the plots and tables
# of scripts/plots/ch03_ch04.py read.
set(NS_SERVING_METRIC_FIELDS "config,completed,output_tokens_per_s,ttft_p50_s,ttft_p99_s,tpot_mean_s,itl_p50_s,itl_p99_s,itl_max_s,e2e_mean_s,e2e_p50_s,e2e_p90_s,e2e_p99_s,preemptions,useful_rows,padding_rows,idle_rows,waste_fraction,kv_blocks")
