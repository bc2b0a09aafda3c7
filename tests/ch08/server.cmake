# Chapter 8's end-to-end tests of `nanoserve serve` (included by tests/CMakeAreas.cmake): each
# starts its own server on a free loopback port and stops it, bounded in time.
add_test(NAME ch08.sigterm_drain
         COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/ch08/sigterm_drain.sh" $<TARGET_FILE:nanoserve>)
set_tests_properties(ch08.sigterm_drain PROPERTIES LABELS "ch08" TIMEOUT 120)
# Bad flags: one clear line, non-zero exit, before anything listens.
add_test(NAME ch08.serve_context_too_long
         COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_failure.sh"
                 "--max-model-len 999 exceeds the model's context of 256"
                 $<TARGET_FILE:nanoserve> serve -m synthetic:tiny --max-model-len 999 --port 0)
add_test(NAME ch08.serve_bad_port
         COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_failure.sh" "--port: Value 70000 not in range"
                 $<TARGET_FILE:nanoserve> serve -m synthetic:tiny --port 70000)
set_tests_properties(ch08.serve_context_too_long ch08.serve_bad_port PROPERTIES LABELS "ch08")
# The official openai npm client (peers/, pinned), and the tutorial's curl examples.
add_test(NAME ch08.openai_client
         COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/ch08/openai_client.sh" $<TARGET_FILE:nanoserve>
                 "${PROJECT_SOURCE_DIR}")
add_test(NAME ch08.curl_examples
         COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/ch08/curl_examples.sh" $<TARGET_FILE:nanoserve>
                 "${PROJECT_SOURCE_DIR}")
set_tests_properties(ch08.openai_client ch08.curl_examples PROPERTIES
  LABELS "ch08" SKIP_RETURN_CODE 77 TIMEOUT 180)
# The live view in headless Chromium (one launch).
add_test(NAME ch08.live_view_browser
         COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/ch08/live_view_browser.sh" $<TARGET_FILE:nanoserve>
                 "${PROJECT_SOURCE_DIR}")
set_tests_properties(ch08.live_view_browser PROPERTIES LABELS "ch08" SKIP_RETURN_CODE 77 TIMEOUT 180)
# Replicas behind nginx (scripts/serve_cluster.sh): one is killed under load.
add_test(NAME ch08.cluster_kill
         COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/ch08/cluster_kill.sh" $<TARGET_FILE:nanoserve>
                 "${PROJECT_SOURCE_DIR}")
set_tests_properties(ch08.cluster_kill PROPERTIES LABELS "ch08" SKIP_RETURN_CODE 77 TIMEOUT 90)
add_test(NAME ch08.cluster_bad_flag
         COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_failure.sh"
                 "'--port' is set by the cluster" bash "${PROJECT_SOURCE_DIR}/scripts/serve_cluster.sh"
                 --bin $<TARGET_FILE:nanoserve> -- -m synthetic:tiny --port 9)
set_tests_properties(ch08.cluster_bad_flag PROPERTIES LABELS "ch08")
# The benchmark client (apps/bench_serving), over HTTP and in-process, in seconds.
add_test(NAME ch08.bench_serving_smoke
         COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/ch08/bench_serving_smoke.sh" $<TARGET_FILE:nanoserve>
                 $<TARGET_FILE:bench_serving>)
set_tests_properties(ch08.bench_serving_smoke PROPERTIES LABELS "ch08" TIMEOUT 120)
add_test(NAME ch08.bench_serving_not_loopback
         COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_failure.sh" "host '10.1.2.3' is not loopback"
                 $<TARGET_FILE:bench_serving> --base-url http://10.1.2.3:8000 -m synthetic:tiny)
set_tests_properties(ch08.bench_serving_not_loopback PROPERTIES LABELS "ch08")
