# Issue 25: bad input gives a message naming it and exit 2 in every command that takes it; a GPU
# test is skipped only on a clean "no GPU" answer. Included from tests/CMakeLists.txt.
set(NB_EXPECT ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/expect_exit.py)
set(NB_DATA ${CMAKE_CURRENT_SOURCE_DIR}/data)
set(_huge 99999999999999999999)

# Numbers too large for their type (std::stol aborted with exit 134).
add_test(NAME cli_run_huge_gpu_index_exits_2 COMMAND ${NB_EXPECT} 2 "(?s)--gpus: '${_huge}' is not a device index.*Usage"
         -- $<TARGET_FILE:nodebench> run --gpus ${_huge})
add_test(NAME cli_validate_huge_gpu_index_exits_2 COMMAND ${NB_EXPECT} 2 "--gpus: '${_huge}' is not a device index"
         -- $<TARGET_FILE:nodebench> validate --gpus 0,${_huge})
add_test(NAME cli_monitor_huge_gpu_index_exits_2 COMMAND ${NB_EXPECT} 2 "--gpus: '${_huge}' is not a device index"
         -- $<TARGET_FILE:nodebench> monitor --gpus ${_huge})
add_test(NAME cli_monitor_huge_duration_exits_2 COMMAND ${NB_EXPECT} 2 "--duration: must be a number of seconds from 0 to 1e9"
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
add_test(NAME cli_advise_schema_99_exits_2 COMMAND ${NB_EXPECT} 2 "schema_v99\\.json: 'nodebench\\.result' schema_version 99"
         -- $<TARGET_FILE:nodebench> advise ${NB_DATA}/schema_v99.json)
add_test(NAME cli_advise_folder_exits_2 COMMAND ${NB_EXPECT} 2 "data: is a folder, not a JSON file"
         -- $<TARGET_FILE:nodebench> advise ${NB_DATA})
add_test(NAME cli_doctor_from_schema_99_exits_2 COMMAND ${NB_EXPECT} 2 "schema_v99\\.json: 'nodebench\\.result' schema_version 99"
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
