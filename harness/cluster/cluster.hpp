// A run over several processes: one per GPU under an MPI launcher (docs/MULTIGPU.md), e.g.
//   mpirun -np 16 -H a:8,b:8 nodebench run --family nccl
// Every process runs the same cases in the same order, each on its own GPU; rank 0 gathers
// the environment of every node and every record, and writes the one result file. Without an
// MPI launcher (or without MPI in the build) the run is the usual single process, and every
// function here is a pass-through.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "node/environment.hpp"

namespace nb::cluster {

// Starts MPI when an MPI launcher started this process and nodebench was built with MPI.
// Returns a line to show the user (empty when there is nothing to say): the rank layout, or
// a warning when launched under MPI by a build without it (every process then runs alone).
std::string start();
bool active();  // under MPI (even a world of one process)
bool root();    // rank 0, or not under MPI
int rank();
int size();

// True when every process passes true (false everywhere as soon as one passes false).
bool all_ok(bool mine);
// True when any process passes true.
bool any(bool mine);
// Root's string, everywhere.
std::string from_root(const std::string& s);

// The GPUs this process drives: `selected` when not under MPI; under MPI one of them, by the
// process's rank on its host (local rank modulo the count).
std::vector<int> local_gpus(const std::vector<int>& selected);

// Under MPI, whether this process shares its GPU with another rank of its host (more ranks on
// the host than selected GPUs): per-GPU figures would then be those of a shared GPU.
bool gpu_shared(const std::vector<int>& selected);

// Runs `work` on this process in its turn among the ranks of its host, one at a time (cases that
// contend for the host link or host memory); every rank calls it, in the same order. Without MPI
// it just runs `work`.
void take_turns_on_host(const std::function<void()>& work);

// Describes this process for the environment gathering (its rank, host, GPU, environment).
nlohmann::json rank_info(const nlohmann::json& environment, int gpu);
// Under MPI: gathers every rank_info at root and adds `ranks`, `nodes` and `mpi` to root's
// environment (see docs/SCHEMA.md). A no-op otherwise.
void gather_environment(nlohmann::json& environment, int gpu);
// Pure: the `ranks`, `nodes` and `mpi` entries built from every rank's rank_info.
void add_rank_environment(nlohmann::json& environment, const std::vector<nlohmann::json>& infos);

// After a case: under MPI, root gets every rank's records of the case (merge_rank_records);
// the other processes get an empty list. Otherwise `mine` unchanged.
std::vector<nlohmann::json> gather_records(bool multi_gpu, std::vector<nlohmann::json> mine);
// Pure: each record gets `rank` and `host`. Per-GPU cases keep every rank's records; a
// multi-GPU case (one communicator over every rank, which rank 0 reports) keeps rank 0's, and
// of the other ranks only the records that failed or were wrong (what one rank alone saw).
std::vector<nlohmann::json> merge_rank_records(bool multi_gpu, const std::vector<std::vector<nlohmann::json>>& per_rank,
                                               const std::vector<std::string>& hosts);

}  // namespace nb::cluster
