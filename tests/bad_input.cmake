# Issue 25: bad input gives a message naming it and exit 2 in every command that takes it; a GPU
# test is skipped only on a clean "no GPU" answer. Included from tests/CMakeLists.txt.
set(NB_EXPECT ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/expect_exit.py)
set(NB_DATA ${CMAKE_CURRENT_SOURCE_DIR}/data)
set(_huge 99999999999999999999)

# Numbers too large for their type (std::stol aborted with exit 134).
add_test(NAME cli_run_huge_gpu_index_exits_2 COMMAND ${NB_EXPECT} 2
         "(?s)--gpus: '${_huge}' is not a device index.*Usage"
         -- $<TARGET_FILE:nodebench> run --gpus ${_huge})
add_test(NAME cli_validate_huge_gpu_index_exits_2 COMMAND ${NB_EXPECT} 2 "--gpus: '${_huge}' is not a device index"
         -- $<TARGET_FILE:nodebench> validate --gpus 0,${_huge})
add_test(NAME cli_monitor_huge_gpu_index_exits_2 COMMAND ${NB_EXPECT} 2 "--gpus: '${_huge}' is not a device index"
         -- $<TARGET_FILE:nodebench> monitor --gpus ${_huge})
add_test(NAME cli_monitor_huge_duration_exits_2 COMMAND ${NB_EXPECT} 2
         "--duration: must be a number of seconds from 0 to 1e9"
         -- $<TARGET_FILE:nodebench> monitor --duration 1e300)
add_test(NAME cli_run_huge_repetitions_exits_2 COMMAND ${NB_EXPECT} 2 "--repetitions"
         -- $<TARGET_FILE:nodebench> run --repetitions ${_huge})
add_test(NAME cli_validate_huge_level_exits_2 COMMAND ${NB_EXPECT} 2 "--level"
         -- $<TARGET_FILE:nodebench> validate --level ${_huge})
add_test(NAME cli_advise_huge_gpu_count_exits_2 COMMAND ${NB_EXPECT} 2 "--gpus: '${_huge}' is not a GPU count"
         -- $<TARGET_FILE:nodebench> advise ${NB_DATA}/advise_results.json --gpus ${_huge})

# Filters that make a backtracking matcher run for ever (on an id like nccl/.../eager/64MiB, 2^39
# ways to split its first 39 characters): they must return (TIMEOUT is the bound, far above what a
# linear-time matcher needs) with the right cases: list shows the 8192 cases; run finds none (exit 2).
add_test(NAME cli_list_pathological_filter_returns COMMAND ${NB_EXPECT} 0 "gemm/fp32/cublas/square_8192"
         -- $<TARGET_FILE:nodebench> list --filter "^([a-z/_0-9]*)*8192$")
add_test(NAME cli_run_pathological_filter_returns COMMAND ${NB_EXPECT} 2 "no case matches"
         -- $<TARGET_FILE:nodebench> run --filter "^([a-z/_0-9]*)*X$")
add_test(NAME cli_filter_backreference_exits_2 COMMAND ${NB_EXPECT} 2 "(?s)backreference.*not supported.*Usage"
         -- $<TARGET_FILE:nodebench> list --filter "(gemm)\\1")
set_tests_properties(cli_list_pathological_filter_returns cli_run_pathological_filter_returns PROPERTIES TIMEOUT 60)

# Files of an unknown schema version, folders and unreadable files: refused by every reader.
add_test(NAME cli_advise_schema_99_exits_2 COMMAND ${NB_EXPECT} 2
         "schema_v99\\.json: 'nodebench\\.result' schema_version 99"
         -- $<TARGET_FILE:nodebench> advise ${NB_DATA}/schema_v99.json)
add_test(NAME cli_advise_folder_exits_2 COMMAND ${NB_EXPECT} 2 "data: is a folder, not a JSON file"
         -- $<TARGET_FILE:nodebench> advise ${NB_DATA})
add_test(NAME cli_doctor_from_schema_99_exits_2 COMMAND ${NB_EXPECT} 2
         "schema_v99\\.json: 'nodebench\\.result' schema_version 99"
         -- $<TARGET_FILE:nodebench> doctor --from ${NB_DATA}/schema_v99.json)
add_test(NAME cli_doctor_from_folder_exits_2 COMMAND ${NB_EXPECT} 2 "data: is a folder, not a JSON file"
         -- $<TARGET_FILE:nodebench> doctor --from ${NB_DATA})
add_test(NAME cli_algo_cache_folder_exits_2 COMMAND ${NB_EXPECT} 2 "algorithm cache '.*data': is a folder"
         -- $<TARGET_FILE:nodebench> run --algo-cache ${NB_DATA})

# gpu_guard.py: a crash or an unclean answer fails every GPU test; only "no GPU" skips.
set(NB_FAKE ${CMAKE_CURRENT_SOURCE_DIR}/fake_nodebench.sh)
set(NB_GUARD_FAKE ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/gpu_guard.py ${NB_FAKE} --
    ${Python3_EXECUTABLE} -c "raise SystemExit(5)")
add_test(NAME guard_crash_fails COMMAND ${CMAKE_COMMAND} -E env FAKE_NODEBENCH_MODE=crash
         ${NB_EXPECT} 1 "FAIL: .*killed by signal 11" -- ${NB_GUARD_FAKE})
add_test(NAME guard_bad_exit_fails COMMAND ${CMAKE_COMMAND} -E env FAKE_NODEBENCH_MODE=usage
         ${NB_EXPECT} 1 "(?s)FAIL: .*exit 2.*bad usage \\(fake\\)" -- ${NB_GUARD_FAKE})
add_test(NAME guard_garbage_fails COMMAND ${CMAKE_COMMAND} -E env FAKE_NODEBENCH_MODE=garbage
         ${NB_EXPECT} 1 "not the environment JSON" -- ${NB_GUARD_FAKE})
add_test(NAME guard_no_gpu_skips COMMAND ${CMAKE_COMMAND} -E env FAKE_NODEBENCH_MODE=nogpu
         ${NB_EXPECT} 77 "SKIP: no GPU visible \\(fake: CUDA sees no GPU\\)" -- ${NB_GUARD_FAKE})
add_test(NAME guard_exit_3_skips COMMAND ${CMAKE_COMMAND} -E env FAKE_NODEBENCH_MODE=exit3
         ${NB_EXPECT} 77 "SKIP: no usable GPU" -- ${NB_GUARD_FAKE})
add_test(NAME guard_runs_the_test_on_a_gpu COMMAND ${CMAKE_COMMAND} -E env FAKE_NODEBENCH_MODE=gpu
         ${NB_EXPECT} 5 "" -- ${NB_GUARD_FAKE})
# A GPU test whose program is not built fails saying so (not a traceback).
add_test(NAME guard_unbuilt_test_fails COMMAND ${CMAKE_COMMAND} -E env FAKE_NODEBENCH_MODE=gpu
         ${NB_EXPECT} 1 "FAIL: cannot run the test .*no_such_test_program.*is its target built" --
         ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/gpu_guard.py ${NB_FAKE} -- ${CMAKE_CURRENT_BINARY_DIR}/no_such_test_program)

# The GPU tests' schema check without jsonschema (a fresh GPU node): the loader's checks, said so.
set(NB_NO_JSONSCHEMA ${CMAKE_COMMAND} -E env PYTHONPATH=${NB_DATA}/no_jsonschema)
set(NB_SCHEMA ${CMAKE_SOURCE_DIR}/harness/schema/result-v1.schema.json)
add_test(NAME result_check_without_jsonschema_passes COMMAND ${NB_NO_JSONSCHEMA} ${NB_EXPECT} 0
         "(?s)structural checks.*jsonschema is not installed.*ok"
         -- ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/result_check.py ${NB_SCHEMA} ${NB_DATA}/p40_result.json)
add_test(NAME result_check_without_jsonschema_fails_bad_file COMMAND ${NB_NO_JSONSCHEMA} ${NB_EXPECT} 1
         "(?s)jsonschema is not installed.*FAIL: .*must say why"
         -- ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/result_check.py ${NB_SCHEMA} ${NB_DATA}/malformed_result.json)
add_test(NAME validate_result_without_jsonschema COMMAND ${NB_NO_JSONSCHEMA} ${NB_EXPECT} 0
         "(?s)structural checks.*malformed_result\\.json: INVALID"
         -- ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/scripts/validate_result.py --expect-invalid ${NB_DATA}/malformed_result.json)

set_tests_properties(
  cli_run_huge_gpu_index_exits_2 cli_validate_huge_gpu_index_exits_2 cli_monitor_huge_gpu_index_exits_2
  cli_monitor_huge_duration_exits_2 cli_run_huge_repetitions_exits_2 cli_validate_huge_level_exits_2
  cli_advise_huge_gpu_count_exits_2 cli_list_pathological_filter_returns cli_run_pathological_filter_returns
  cli_filter_backreference_exits_2 cli_advise_schema_99_exits_2 cli_advise_folder_exits_2
  cli_doctor_from_schema_99_exits_2 cli_doctor_from_folder_exits_2 cli_algo_cache_folder_exits_2
  PROPERTIES LABELS "cli")
set_tests_properties(
  guard_crash_fails guard_bad_exit_fails guard_garbage_fails guard_no_gpu_skips guard_exit_3_skips
  guard_runs_the_test_on_a_gpu result_check_without_jsonschema_passes result_check_without_jsonschema_fails_bad_file
  validate_result_without_jsonschema PROPERTIES LABELS "unit")

# Issue 38: bad usage is judged before anything is measured and before the GPU is probed (so these
# exit 2 on a machine without a GPU too, where a later check would say exit 3 first); an empty
# value is an error, not "the default"; NaN fails every range; a usage error ends with one line
# pointing at --help.
set(NB_RUN $<TARGET_FILE:nodebench> run)
set(NB_I38 "")
add_test(NAME cli_run_out_file_folder_exits_2 COMMAND ${NB_EXPECT} 2
         "--out-file: '.*data' is a folder, not a file path"
         -- ${NB_RUN} --out-file ${NB_DATA})
list(APPEND NB_I38 cli_run_out_file_folder_exits_2)
add_test(NAME cli_run_out_file_under_a_file_exits_2 COMMAND ${NB_EXPECT} 2
         "--out-file: '.*p40_result\\.json/r\\.json' is under '.*p40_result\\.json', which is a file"
         --
       ${NB_RUN} --out-file ${NB_DATA}/p40_result.json/r.json)
list(APPEND NB_I38 cli_run_out_file_under_a_file_exits_2)
add_test(NAME cli_run_out_file_deep_under_a_file_exits_2 COMMAND ${NB_EXPECT} 2
         "is under '.*p40_result\\.json', which is a file"
         --
       ${NB_RUN} --out-file ${NB_DATA}/p40_result.json/a/b/r.json)
list(APPEND NB_I38 cli_run_out_file_deep_under_a_file_exits_2)
add_test(NAME cli_run_out_a_file_exits_2 COMMAND ${NB_EXPECT} 2
         "--out: '.*p40_result\\.json' is a file, not a folder"
         -- ${NB_RUN} --out ${NB_DATA}/p40_result.json)
list(APPEND NB_I38 cli_run_out_a_file_exits_2)
add_test(NAME cli_run_gbench_out_folder_exits_2 COMMAND ${NB_EXPECT} 2
         "--gbench-out: '.*data' is a folder"
         -- ${NB_RUN} --gbench-out ${NB_DATA})
list(APPEND NB_I38 cli_run_gbench_out_folder_exits_2)
add_test(NAME cli_run_out_file_device_exits_2 COMMAND ${NB_EXPECT} 2
         "--out-file: '/dev/null' is not a regular file"
         -- ${NB_RUN} --out-file /dev/null)
list(APPEND NB_I38 cli_run_out_file_device_exits_2)
add_test(NAME cli_validate_junit_folder_exits_2 COMMAND ${NB_EXPECT} 2
         "--junit: '.*data' is a folder"
         -- $<TARGET_FILE:nodebench> validate --junit ${NB_DATA})
list(APPEND NB_I38 cli_validate_junit_folder_exits_2)
add_test(NAME cli_monitor_out_folder_exits_2 COMMAND ${NB_EXPECT} 2
         "--out: '.*data' is a folder"
         -- $<TARGET_FILE:nodebench> monitor --out ${NB_DATA})
list(APPEND NB_I38 cli_monitor_out_folder_exits_2)
add_test(NAME cli_advise_json_folder_exits_2 COMMAND ${NB_EXPECT} 2 "--json: '.*data' is a folder" --
       $<TARGET_FILE:nodebench> advise ${NB_DATA}/advise_results.json --json ${NB_DATA})
list(APPEND NB_I38 cli_advise_json_folder_exits_2)
add_test(NAME cli_frameworks_junit_folder_exits_2 COMMAND ${NB_EXPECT} 2 "--junit: '.*data' is a folder" --
       $<TARGET_FILE:nodebench> frameworks --for-cc 6.1 --junit ${NB_DATA})
list(APPEND NB_I38 cli_frameworks_junit_folder_exits_2)
add_test(NAME cli_frameworks_timeout_nan_exits_2 COMMAND ${NB_EXPECT} 2
         "--timeout: 'nan' is out of range \\(expected a number from 1 to 86400\\)"
         -- $<TARGET_FILE:nodebench> frameworks --for-cc 6.1 --timeout nan)
list(APPEND NB_I38 cli_frameworks_timeout_nan_exits_2)
add_test(NAME cli_burn_out_file_folder_exits_2 COMMAND ${NB_EXPECT} 2 "--out-file: '.*data' is a folder" --
       $<TARGET_FILE:nodebench> burn --duration 60s --out-file ${NB_DATA})
list(APPEND NB_I38 cli_burn_out_file_folder_exits_2)
add_test(NAME cli_run_max_time_nan_exits_2 COMMAND ${NB_EXPECT} 2
         "--max-time: 'nan' is out of range \\(expected a number from 0.001 to 3600\\)"
         -- ${NB_RUN} --max-time nan)
list(APPEND NB_I38 cli_run_max_time_nan_exits_2)
add_test(NAME cli_run_memory_fraction_nan_exits_2 COMMAND ${NB_EXPECT} 2
         "--memory-fraction: 'nan' is out of range"
         -- ${NB_RUN} --memory-fraction nan)
list(APPEND NB_I38 cli_run_memory_fraction_nan_exits_2)
add_test(NAME cli_run_target_cv_inf_exits_2 COMMAND ${NB_EXPECT} 2
         "--target-cv: 'inf' is out of range"
         -- ${NB_RUN} --target-cv inf)
list(APPEND NB_I38 cli_run_target_cv_inf_exits_2)
add_test(NAME cli_advise_bucket_nan_exits_2 COMMAND ${NB_EXPECT} 2 "--bucket-mib: 'nan' is out of range" --
       $<TARGET_FILE:nodebench> advise ${NB_DATA}/advise_results.json --bucket-mib nan)
list(APPEND NB_I38 cli_advise_bucket_nan_exits_2)
add_test(NAME cli_run_gpus_empty_exits_2 COMMAND ${NB_EXPECT} 2 "--gpus: an empty value" -- ${NB_RUN} --gpus "")
list(APPEND NB_I38 cli_run_gpus_empty_exits_2)
add_test(NAME cli_run_budget_empty_exits_2 COMMAND ${NB_EXPECT} 2 "--budget: an empty value" -- ${NB_RUN} --budget "")
list(APPEND NB_I38 cli_run_budget_empty_exits_2)
add_test(NAME cli_run_out_file_empty_exits_2 COMMAND ${NB_EXPECT} 2
         "--out-file: an empty value"
         -- ${NB_RUN} --out-file "")
list(APPEND NB_I38 cli_run_out_file_empty_exits_2)
add_test(NAME cli_advise_file_empty_exits_2 COMMAND ${NB_EXPECT} 2
         "an empty value"
         -- $<TARGET_FILE:nodebench> advise "")
list(APPEND NB_I38 cli_advise_file_empty_exits_2)
add_test(NAME cli_run_budget_unit_twice_exits_2 COMMAND ${NB_EXPECT} 2
         "--budget: '1h1h' is not a duration"
         -- ${NB_RUN} --budget 1h1h)
list(APPEND NB_I38 cli_run_budget_unit_twice_exits_2)
add_test(NAME cli_run_min_samples_fraction_exits_2 COMMAND ${NB_EXPECT} 2
         "--min-samples: '2.5' is not a whole number"
         -- ${NB_RUN} --min-samples 2.5)
list(APPEND NB_I38 cli_run_min_samples_fraction_exits_2)
add_test(NAME cli_run_runs_0_exits_2 COMMAND ${NB_EXPECT} 2
         "--runs: '0' is out of range \\(expected a whole number from 1 to 1000\\)"
         -- ${NB_RUN} --runs 0)
list(APPEND NB_I38 cli_run_runs_0_exits_2)
add_test(NAME cli_run_runs_1001_exits_2 COMMAND ${NB_EXPECT} 2
         "--runs: '1001' is out of range"
         -- ${NB_RUN} --runs 1001)
list(APPEND NB_I38 cli_run_runs_1001_exits_2)
add_test(NAME cli_run_empty_families_exits_2 COMMAND ${NB_EXPECT} 2
         "^nodebench: --family: ',,,' has an empty family name"
         -- ${NB_RUN} --family ",,," --quiet)
list(APPEND NB_I38 cli_run_empty_families_exits_2)
# Readers: a device or a FIFO is refused at once (no read for ever), a gzip-compressed file is read.
add_test(NAME cli_advise_dev_zero_exits_2 COMMAND ${NB_EXPECT} 2
         "/dev/zero: not a regular file"
         -- $<TARGET_FILE:nodebench> advise /dev/zero)
list(APPEND NB_I38 cli_advise_dev_zero_exits_2)
add_test(NAME cli_doctor_from_dev_zero_exits_2 COMMAND ${NB_EXPECT} 2
         "/dev/zero: not a regular file"
         -- $<TARGET_FILE:nodebench> doctor --from /dev/zero)
list(APPEND NB_I38 cli_doctor_from_dev_zero_exits_2)
add_test(NAME cli_run_profiles_dev_zero_exits_2 COMMAND ${NB_EXPECT} 2
         "/dev/zero: not a regular file"
         -- ${NB_RUN} --profiles /dev/zero)
list(APPEND NB_I38 cli_run_profiles_dev_zero_exits_2)
add_test(NAME cli_advise_fifo_exits_2 COMMAND ${NB_EXPECT} 2 "not a regular file" -- sh -c
       "f=$(mktemp -u) && mkfifo \"$f\" && \"$0\" advise \"$f\"; rc=$?; rm -f \"$f\"; exit $rc" $<TARGET_FILE:nodebench>)
list(APPEND NB_I38 cli_advise_fifo_exits_2)
add_test(NAME cli_advise_reads_gzip COMMAND ${NB_EXPECT} 0 "(?s)all-reduce" -- sh -c
       "f=$(mktemp --suffix=.json.gz) && gzip -c \"$1\" > \"$f\" && \"$0\" advise \"$f\"; rc=$?; rm -f \"$f\"; exit $rc"
       $<TARGET_FILE:nodebench> ${NB_DATA}/advise_results.json)
list(APPEND NB_I38 cli_advise_reads_gzip)
add_test(NAME cli_doctor_from_reads_gzip COMMAND ${NB_EXPECT} 0 "(?s)Tesla P40" -- sh -c
       "f=$(mktemp --suffix=.json.gz) && gzip -c \"$1\" > \"$f\" && \"$0\" doctor --from \"$f\"; rc=$?; rm -f \"$f\"; exit $rc"
       $<TARGET_FILE:nodebench> ${NB_DATA}/p40_environment.json)
list(APPEND NB_I38 cli_doctor_from_reads_gzip)
# advise and doctor --from refuse what is not a result file, naming the file and the field.
add_test(NAME cli_advise_gbench_json_exits_2 COMMAND ${NB_EXPECT} 2
         "gbench\\.json: a Google Benchmark JSON file"
         -- $<TARGET_FILE:nodebench> advise ${NB_DATA}/bad_results/gbench.json)
list(APPEND NB_I38 cli_advise_gbench_json_exits_2)
add_test(NAME cli_doctor_from_gbench_json_exits_2 COMMAND ${NB_EXPECT} 2
         "gbench\\.json: a Google Benchmark JSON file"
         --
       $<TARGET_FILE:nodebench> doctor --from ${NB_DATA}/bad_results/gbench.json)
list(APPEND NB_I38 cli_doctor_from_gbench_json_exits_2)
add_test(NAME cli_advise_bare_number_records_exits_2 COMMAND ${NB_EXPECT} 2
         "bare_number_records\\.json: records\\[0\\] must be an object .*found number 5"
         --
       $<TARGET_FILE:nodebench> advise ${NB_DATA}/bad_results/bare_number_records.json)
list(APPEND NB_I38 cli_advise_bare_number_records_exits_2)
add_test(NAME cli_advise_negative_step_time_exits_2 COMMAND ${NB_EXPECT} 2
         "negative_step_time\\.json: records\\[0\\] \\(train/resnet50/fp32/nchw/b64\\): 'metrics\\.step_time_ms' must be a number above 0, found -5"
         --
       $<TARGET_FILE:nodebench> advise ${NB_DATA}/bad_results/negative_step_time.json)
list(APPEND NB_I38 cli_advise_negative_step_time_exits_2)
add_test(NAME cli_advise_text_step_time_exits_2 COMMAND ${NB_EXPECT} 2
         "text_step_time\\.json: records\\[0\\] .*'metrics\\.step_time_ms' must be a number above 0, found \"fast\""
       -- $<TARGET_FILE:nodebench> advise ${NB_DATA}/bad_results/text_step_time.json)
list(APPEND NB_I38 cli_advise_text_step_time_exits_2)
# Every metric read back is a number (or null): any other value is refused naming the file, the
# record and the metric; a metric no family declares is named once on stderr (a warning only).
add_test(NAME cli_advise_text_metric_exits_2 COMMAND ${NB_EXPECT} 2
         "text_metric\\.json: records\\[0\\] \\(hostlink/h2d/pinned/ce/1GiB\\): metric 'link_pct' must be a number, found \"high\""
       -- $<TARGET_FILE:nodebench> advise ${NB_DATA}/bad_results/text_metric.json)
list(APPEND NB_I38 cli_advise_text_metric_exits_2)
add_test(NAME cli_advise_undeclared_metric_warns COMMAND ${NB_EXPECT} 0
         "warning: [^\n]*advise_results\\.json: metric\\(s\\) no family [^\n]*declares[^\n]*train_dp/scaling_efficiency"
       -- $<TARGET_FILE:nodebench> advise ${NB_DATA}/advise_results.json)
list(APPEND NB_I38 cli_advise_undeclared_metric_warns)
# Two runs never share a result file: one whose file another run holds is refused (exit 2, the pid).
add_test(NAME cli_run_out_file_held_by_another_run_exits_2
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/output_lock_check.py $<TARGET_FILE:nodebench> ${CMAKE_CURRENT_BINARY_DIR})
list(APPEND NB_I38 cli_run_out_file_held_by_another_run_exits_2)
set_tests_properties(${NB_I38} PROPERTIES LABELS "cli" TIMEOUT 30)
# A signal stops a run at once during a case that would last hours (the input family's CPU case:
# no GPU needed), the file says "interrupted" and names the case; a second run on the same file is refused.
add_test(NAME cli_run_signal_stops_a_long_case
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/signal_check.py $<TARGET_FILE:nodebench> ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(cli_run_signal_stops_a_long_case PROPERTIES LABELS "cli" TIMEOUT 90 SKIP_RETURN_CODE 77)
