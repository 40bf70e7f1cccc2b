# The advise command's tests (included by tests/CMakeLists.txt).
# `nodebench advise` (docs/ADVISE.md): no GPU needed; bad input exits 2 naming what is wrong.
set(NB_EXPECT ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/expect_exit.py)
set(NB_ADVISE_DATA ${CMAKE_CURRENT_SOURCE_DIR}/data/advise_results.json)
add_test(NAME cli_advise_missing_file_exits_2 COMMAND ${NB_EXPECT} 2 "nosuch.json: cannot read the file"
         -- $<TARGET_FILE:nodebench> advise ${CMAKE_CURRENT_BINARY_DIR}/nosuch.json)
add_test(NAME cli_advise_no_usable_records_exits_2 COMMAND ${NB_EXPECT} 2 "no usable step time"
         -- $<TARGET_FILE:nodebench> advise ${CMAKE_CURRENT_SOURCE_DIR}/data/advise_no_usable.json)
add_test(NAME cli_advise_not_a_result_exits_2 COMMAND ${NB_EXPECT} 2 "not a nodebench result file"
         -- $<TARGET_FILE:nodebench> advise ${CMAKE_CURRENT_SOURCE_DIR}/data/h200_environment.json)
add_test(NAME cli_advise_nothing_given_exits_2 COMMAND ${NB_EXPECT} 2 "give result files"
         -- $<TARGET_FILE:nodebench> advise)
# advise --measure plans through the run pipeline: its plan printed without a GPU (the cases
# themselves: test_advise_measure.cpp), and without a GPU the run exits 3 as `run` does.
add_test(NAME cli_advise_measure_list_without_gpu COMMAND ${CMAKE_COMMAND} -E env CUDA_VISIBLE_DEVICES=
         ${NB_EXPECT} 0 "those the advice reads:(.|\n)*  nccl/all_reduce/" -- $<TARGET_FILE:nodebench> advise --measure --list)
add_test(NAME cli_advise_measure_no_gpu_exits_3 COMMAND ${CMAKE_COMMAND} -E env CUDA_VISIBLE_DEVICES=
         ${NB_EXPECT} 3 "CUDA_VISIBLE_DEVICES: ''"
         -- $<TARGET_FILE:nodebench> advise --measure --out ${CMAKE_CURRENT_BINARY_DIR}/advise_nogpu_out)
set_tests_properties(cli_advise_measure_list_without_gpu cli_advise_measure_no_gpu_exits_3 PROPERTIES LABELS "cli")
add_test(NAME cli_advise_nodes_need_network_exits_2 COMMAND ${NB_EXPECT} 2 "needs --inter-node-gbps"
         -- $<TARGET_FILE:nodebench> advise ${NB_ADVISE_DATA} --nodes 2)
add_test(NAME cli_advise_bad_gpus_exits_2 COMMAND ${NB_EXPECT} 2 "--gpus: 'two' is not a GPU count"
         -- $<TARGET_FILE:nodebench> advise ${NB_ADVISE_DATA} --gpus 1,two)
add_test(NAME cli_advise_bad_link_exits_2 COMMAND ${NB_EXPECT} 2 "--link"
         -- $<TARGET_FILE:nodebench> advise --profile "Tesla P40" --gpus 4 --link pcie-gen9)
add_test(NAME cli_advise_measured COMMAND ${NB_EXPECT} 0 "3303 img/s .prediction [+]3[.]3%(.|\n)*MirroredStrategy, PyTorch DDP"
         -- $<TARGET_FILE:nodebench> advise ${NB_ADVISE_DATA} --json ${CMAKE_CURRENT_BINARY_DIR}/advise_out.json)
# The P40 fixture (train and conv records from public figures): FP32, accumulation, and the larger
# per-GPU batch its ECC-reduced memory holds.
add_test(NAME cli_advise_p40_fixture COMMAND ${NB_EXPECT} 0 "Larger per-GPU batch: batch [0-9]+ fits in memory[^\n]*ECC on: it reserves 1,536 MiB(.|\n)*FP16 does not pay"
         -- $<TARGET_FILE:nodebench> advise ${CMAKE_CURRENT_SOURCE_DIR}/data/p40_result.json --global-batch 1024)
add_test(NAME cli_advise_multi_node COMMAND ${NB_EXPECT} 0 "MultiWorkerMirroredStrategy(.|\n)*hierarchical"
         -- $<TARGET_FILE:nodebench> advise ${NB_ADVISE_DATA} --gpus 2 --nodes 4 --inter-node-gbps 12.5 --global-batch 4096)
add_test(NAME cli_advise_framework_step COMMAND ${NB_EXPECT} 0 "framework +- +256"
         -- $<TARGET_FILE:nodebench> advise ${NB_ADVISE_DATA} --step-ms 180 --batch 256)
add_test(NAME cli_advise_what_if_p40 COMMAND ${NB_EXPECT} 0 "FP16 does not pay(.|\n)*predicted from profile, not measured"
         -- $<TARGET_FILE:nodebench> advise --profile "Tesla P40" --gpus 1,4 --link pcie-gen3)
# The committed H200 results (nccl and hostlink from the quick run, the conv sweep's network case):
# no train record, so the step falls back to the conv case and says so.
add_test(NAME cli_advise_h200_results COMMAND ${NB_EXPECT} 0 "conv family's network case"
         -- $<TARGET_FILE:nodebench> advise ${CMAKE_SOURCE_DIR}/results/h200x2/2026-11-29-quick-sweeps/quick.json.gz
            ${CMAKE_SOURCE_DIR}/results/h200x2/2026-11-29-quick-sweeps/conv_sweep_fp16_nhwc.json.gz --batch 256)
set_tests_properties(cli_advise_missing_file_exits_2 cli_advise_no_usable_records_exits_2 cli_advise_not_a_result_exits_2
                     cli_advise_nothing_given_exits_2 cli_advise_nodes_need_network_exits_2 cli_advise_bad_gpus_exits_2
                     cli_advise_bad_link_exits_2 cli_advise_measured cli_advise_multi_node cli_advise_framework_step
                     cli_advise_what_if_p40 cli_advise_h200_results cli_advise_p40_fixture PROPERTIES LABELS "cli")

# GPU: a fresh nccl/hostlink/conv run, then `nodebench advise` on it (every GPU the machine has).
add_test(NAME gpu_advise_fresh_run
         COMMAND ${NB_GPU_GUARD} ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/gpu_advise_check.py $<TARGET_FILE:nodebench>
                 ${CMAKE_CURRENT_BINARY_DIR}/gpu_advise_out)
set_tests_properties(gpu_advise_fresh_run PROPERTIES LABELS "gpu" SKIP_RETURN_CODE 77 TIMEOUT 600)
