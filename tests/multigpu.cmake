# Tests of the multi-GPU families (p2p, nccl) and of the MPI launch mode (docs/MULTIGPU.md).
# Included from tests/CMakeLists.txt. The MPI tests exist only in builds with MPI
# (NODEBENCH_WITH_MPI); the ones that need no GPU run anywhere (labels unit/cli and mpi).

set(NB_MULTIGPU_CHECK ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/multigpu_check.py
    --nodebench $<TARGET_FILE:nodebench> --schema ${CMAKE_SOURCE_DIR}/harness/schema/result-v1.schema.json)

# GPU tests (ctest -L gpu): the quick suite's small collectives and the sweep, checked; with
# one GPU every p2p case must be skipped with its reason.
add_test(NAME gpu_quick_nccl_p2p_small
         COMMAND ${NB_GPU_GUARD} ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/gpu_run_check.py $<TARGET_FILE:nodebench>
                 ${CMAKE_SOURCE_DIR}/harness/schema/result-v1.schema.json ${CMAKE_CURRENT_BINARY_DIR}/gpu_out_nccl
                 --suite quick --family nccl,p2p --filter "^nccl/.*/(8B|64KiB|1MiB)$|^nccl/sweep/|^p2p/")
set_tests_properties(gpu_quick_nccl_p2p_small PROPERTIES LABELS "gpu" TIMEOUT 180)
# The watchdog: a collective held past the timeout is aborted and recorded as failed, and the
# next case runs on a fresh communicator. Needs the fault-injection hooks (NODEBENCH_TEST_HOOKS).
if(NODEBENCH_TEST_HOOKS)
  add_test(NAME gpu_nccl_watchdog_aborts_a_hang
           COMMAND ${NB_GPU_GUARD} ${NB_MULTIGPU_CHECK} --mode stall --out ${CMAKE_CURRENT_BINARY_DIR}/gpu_out_stall)
  set_tests_properties(gpu_nccl_watchdog_aborts_a_hang PROPERTIES LABELS "gpu" TIMEOUT 300)
endif()

if(NODEBENCH_WITH_MPI)
  # Open MPI refuses root and more ranks than cores unless told (CI runs as root on 2 cores).
  set(NB_MPIEXEC_FLAGS "")
  execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE _nb_mpiexec_version ERROR_QUIET)
  if(_nb_mpiexec_version MATCHES "Open MPI|OpenRTE")
    set(NB_MPIEXEC_FLAGS --allow-run-as-root --oversubscribe)
  endif()
  set(NB_MPIRUN ${MPIEXEC_EXECUTABLE} ${NB_MPIEXEC_FLAGS} ${MPIEXEC_NUMPROC_FLAG})

  add_executable(nodebench_mpi_gather_test mpi_gather_test.cpp)
  target_link_libraries(nodebench_mpi_gather_test PRIVATE nb_test_everything)
  add_test(NAME mpi_bootstrap_and_gather_np2 COMMAND ${NB_MPIRUN} 2 $<TARGET_FILE:nodebench_mpi_gather_test>)
  add_test(NAME mpi_bootstrap_and_gather_np3 COMMAND ${NB_MPIRUN} 3 $<TARGET_FILE:nodebench_mpi_gather_test>)
  set_tests_properties(mpi_bootstrap_and_gather_np2 mpi_bootstrap_and_gather_np3 PROPERTIES
                       LABELS "unit;mpi" TIMEOUT 120 PASS_REGULAR_EXPRESSION "mpi gather test: ok")
  # Every rank without a GPU: all of them agree, explain and exit 3; none waits for the others.
  add_test(NAME mpi_cli_no_gpu_exits_3 COMMAND ${CMAKE_COMMAND} -E env CUDA_VISIBLE_DEVICES=
           ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/expect_exit.py 3 "CUDA_VISIBLE_DEVICES: ''"
           -- ${NB_MPIRUN} 2 $<TARGET_FILE:nodebench> run --family nccl --out ${CMAKE_CURRENT_BINARY_DIR}/mpi_nogpu_out)
  set_tests_properties(mpi_cli_no_gpu_exits_3 PROPERTIES LABELS "cli;mpi" TIMEOUT 120)

  # GPU tests under mpirun (one GPU is enough): one rank runs the collectives through the MPI
  # bootstrap; two ranks on one GPU gather both ranks' records and skip NCCL (ranks would share
  # the GPU); a rank that never joins makes the others' initialisation hang until the watchdog.
  add_test(NAME gpu_mpi_np1_nccl
           COMMAND ${NB_GPU_GUARD} ${NB_MULTIGPU_CHECK} --mode mpi-one --out ${CMAKE_CURRENT_BINARY_DIR}/gpu_out_mpi1
                   --mpirun ${NB_MPIRUN} 1)
  add_test(NAME gpu_mpi_np2_gathers_ranks
           COMMAND ${NB_GPU_GUARD} ${NB_MULTIGPU_CHECK} --mode mpi-shared --out ${CMAKE_CURRENT_BINARY_DIR}/gpu_out_mpi2
                   --mpirun ${NB_MPIRUN} 2)
  set(_nb_mpi_gpu_tests gpu_mpi_np1_nccl gpu_mpi_np2_gathers_ranks)
  if(NODEBENCH_TEST_HOOKS)
    add_test(NAME gpu_mpi_np2_watchdog_absent_rank
             COMMAND ${NB_GPU_GUARD} ${NB_MULTIGPU_CHECK} --mode mpi-absent --out ${CMAKE_CURRENT_BINARY_DIR}/gpu_out_mpi_absent
                     --mpirun ${NB_MPIRUN} 2)
    list(APPEND _nb_mpi_gpu_tests gpu_mpi_np2_watchdog_absent_rank)
  endif()
  set_tests_properties(${_nb_mpi_gpu_tests} PROPERTIES LABELS "gpu;mpi" TIMEOUT 300)
  # Containers often forbid the cross-process memory copies Open MPI's shared-memory transport
  # uses for larger messages (CMA, ptrace rules): copy through the shared segment instead.
  set_tests_properties(mpi_bootstrap_and_gather_np2 mpi_bootstrap_and_gather_np3 mpi_cli_no_gpu_exits_3 ${_nb_mpi_gpu_tests} PROPERTIES
                       ENVIRONMENT "OMPI_MCA_btl_vader_single_copy_mechanism=none")
endif()

# p2p on one GPU: the loopback hook runs every quick case with the GPU as its own peer, so the
# family's code (pairs, both directions, verification, analysis matrices) runs on one GPU too.
add_test(NAME gpu_p2p_loopback_one_gpu
         COMMAND ${NB_GPU_GUARD} ${CMAKE_COMMAND} -E env NODEBENCH_P2P_LOOPBACK=1
                 ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/gpu_run_check.py $<TARGET_FILE:nodebench>
                 ${CMAKE_SOURCE_DIR}/harness/schema/result-v1.schema.json ${CMAKE_CURRENT_BINARY_DIR}/gpu_out_p2p_loop
                 --suite quick --family p2p --gpus 0)
set_tests_properties(gpu_p2p_loopback_one_gpu PROPERTIES LABELS "gpu" TIMEOUT 300)
