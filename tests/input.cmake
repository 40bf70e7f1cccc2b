# Tests of the input family (benchmarks/input/): included from tests/CMakeLists.txt.
# Unit tests (no GPU): the augmentation against hand-computed values, the codec, the images, the
# CPU topology and worker pool, the verdict; the settings and CLI; host-only runs without a GPU.
set(NB_INPUT_TEST_SOURCES test_input.cpp test_input_verdict.cpp)
add_executable(nodebench_input_tests ${NB_INPUT_TEST_SOURCES})
nb_link_families(nodebench_input_tests)
target_link_libraries(nodebench_input_tests PRIVATE nb_test_everything GTest::gtest GTest::gtest_main)
target_compile_definitions(nodebench_input_tests PRIVATE NB_TEST_OUTPUT_DIR="${CMAKE_CURRENT_BINARY_DIR}")
gtest_add_tests(TARGET nodebench_input_tests SOURCES ${NB_INPUT_TEST_SOURCES} TEST_LIST nb_input_tests)
set_tests_properties(${nb_input_tests} PROPERTIES LABELS "unit")

# The codec and augmentation from the command line, and their comparison with PIL (exit 77,
# skipped, where python3 lacks PIL or numpy, or the build has no libjpeg-turbo).
add_executable(nodebench_input_tool input_tool.cpp)
nb_link_families(nodebench_input_tool)
target_link_libraries(nodebench_input_tool PRIVATE nb_test_everything)
add_test(NAME input_against_pil
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/input_pil_check.py $<TARGET_FILE:nodebench_input_tool>
                 $<TARGET_FILE:nodebench> ${CMAKE_SOURCE_DIR}/harness/schema/result-v1.schema.json
                 ${CMAKE_CURRENT_BINARY_DIR}/input_pil_out)
set_tests_properties(input_against_pil PROPERTIES LABELS "unit" SKIP_RETURN_CODE 77 TIMEOUT 300)

# Bad input folders exit 2 naming the folder; a run of host-only cases needs no GPU, the others
# still exit 3 and say which cases could run.
add_test(NAME cli_input_images_missing_exits_2 COMMAND ${NB_EXPECT} 2 "(?s)--images: '.*nosuch_images': no such folder.*Usage"
         -- $<TARGET_FILE:nodebench> run --family input --images ${CMAKE_CURRENT_BINARY_DIR}/nosuch_images)
add_test(NAME cli_input_images_env_without_jpeg_exits_2 COMMAND ${CMAKE_COMMAND} -E env
         NODEBENCH_INPUT_IMAGES=${CMAKE_CURRENT_SOURCE_DIR}/scripts
         ${NB_EXPECT} 2 "NODEBENCH_INPUT_IMAGES='.*scripts': holds no [*][.]jpg or [*][.]jpeg file"
         -- $<TARGET_FILE:nodebench> run --family input)
add_test(NAME cli_input_keep_not_a_folder_exits_2 COMMAND ${CMAKE_COMMAND} -E env
         NODEBENCH_INPUT_KEEP=${CMAKE_CURRENT_SOURCE_DIR}/input.cmake
         ${NB_EXPECT} 2 "NODEBENCH_INPUT_KEEP='.*input.cmake': exists and is not a folder"
         -- $<TARGET_FILE:nodebench> run --family input)
add_test(NAME cli_no_gpu_names_host_only_cases COMMAND ${CMAKE_COMMAND} -E env CUDA_VISIBLE_DEVICES=
         ${NB_EXPECT} 3 "measure the host and need no GPU [(]e[.]g[.] input/cpu/"
         -- $<TARGET_FILE:nodebench> run --family input,memory --suite quick --out ${CMAKE_CURRENT_BINARY_DIR}/nogpu_input_out)
set_tests_properties(cli_input_images_missing_exits_2 cli_input_images_env_without_jpeg_exits_2
                     cli_input_keep_not_a_folder_exits_2 cli_no_gpu_names_host_only_cases PROPERTIES LABELS "cli")

# GPU (ctest -L gpu): the kernel against the host augmentation; the family's GPU cases (nvJPEG:
# ok, or skipped with the reason where the build or the GPU lacks it), validated.
add_executable(nodebench_input_gpu_tests test_input_gpu.cpp)
nb_link_families(nodebench_input_gpu_tests)
target_link_libraries(nodebench_input_gpu_tests PRIVATE nb_test_everything nb_kernels_input GTest::gtest GTest::gtest_main)
add_test(NAME gpu_input_kernel COMMAND ${NB_GPU_GUARD} $<TARGET_FILE:nodebench_input_gpu_tests>)
add_test(NAME gpu_input_family
         COMMAND ${NB_GPU_GUARD} ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/gpu_run_check.py $<TARGET_FILE:nodebench>
                 ${CMAKE_SOURCE_DIR}/harness/schema/result-v1.schema.json ${CMAKE_CURRENT_BINARY_DIR}/gpu_out_input
                 --suite full --family input --filter "^input/gpu/|/c1$" --max-time 0.5)
set_tests_properties(gpu_input_kernel gpu_input_family PROPERTIES LABELS "gpu" TIMEOUT 300)
