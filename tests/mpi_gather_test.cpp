// The MPI bootstrap and the gathering of results, on CPUs (no GPU needed). Run it under an MPI
// launcher with two or more processes:
//   mpirun -np 2 [--allow-run-as-root --oversubscribe] nodebench_mpi_gather_test
// It does what a multi-node run does: broadcasts an NCCL-sized unique id from rank 0, decides
// iteration counts on rank 0 and broadcasts them, gathers every rank's environment and JSON
// records at rank 0 (harness/cluster) and checks them there, and reduces per-sample times.
// Every rank exits 0 when every check passed, 1 otherwise.
#include <chrono>
#include <cstring>
#include <thread>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/cluster.hpp"
#include "cluster/mpi.hpp"

using nlohmann::json;
namespace mpi = nb::mpi;

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (ok) return;
  ++failures;
  std::cerr << "rank " << mpi::rank() << ": FAIL: " << what << "\n";
}

}  // namespace

int main() {
  if (!mpi::compiled()) {
    std::cerr << "built without MPI\n";
    return 1;
  }
  if (!mpi::launched()) {
    std::cerr << "start this under an MPI launcher (mpirun -np 2 ...)\n";
    return 1;
  }
  try {
    const std::string note = nb::cluster::start();
    expect(nb::cluster::active(), "MPI active after cluster::start (" + note + ")");
    const int rank = mpi::rank(), size = mpi::size();
    expect(size >= 2, "at least two processes (got " + std::to_string(size) + ")");
    expect(mpi::local_rank() >= 0 && mpi::local_rank() < mpi::local_size(), "local rank within the host's count");

    // 1. An id of ncclUniqueId's size (128 bytes), made on rank 0, the same everywhere.
    unsigned char id[128] = {};
    if (rank == 0)
      for (int i = 0; i < 128; ++i) id[i] = static_cast<unsigned char>(i * 7 + 3);
    mpi::broadcast(id, sizeof id, 0);
    bool same = true;
    for (int i = 0; i < 128; ++i) same = same && id[i] == static_cast<unsigned char>(i * 7 + 3);
    expect(same, "broadcast id matches rank 0's");
    // From another root, as a sub-communicator's first member does.
    const int other = size - 1;
    const int64_t v = mpi::broadcast_value<int64_t>(rank == other ? 4242 : -1, other);
    expect(v == 4242, "broadcast from the last rank");

    // 2. Rank 0 decides iteration counts for every rank.
    int64_t plan[2] = {0, 0};
    if (rank == 0) plan[0] = 16, plan[1] = 37;
    mpi::broadcast(plan, sizeof plan, 0);
    expect(plan[0] == 16 && plan[1] == 37, "iteration plan from rank 0");
    expect(mpi::broadcast_string(rank == 0 ? "run-abc" : "", 0) == "run-abc", "run id string from rank 0");

    // 3. Per-sample times: the slowest rank's sample; the failure flag: anyone's.
    std::vector<double> samples = {1.0 + rank, 10.0 - rank, 5.0};
    mpi::allreduce(samples, mpi::Op::max);
    expect(samples[0] == 1.0 + (size - 1) && samples[1] == 10.0 && samples[2] == 5.0, "element-wise max of samples");
    expect(mpi::allreduce(int64_t(1), mpi::Op::sum) == size, "sum of ones is the world size");
    expect(mpi::any(rank == size - 1) && !mpi::all(rank == 0), "any/all agreement");
    const auto all_hosts = mpi::allgather_strings(std::string(size_t(rank) * 1000 + 1, char('a' + rank % 26)));
    expect(int(all_hosts.size()) == size && all_hosts.back().size() == size_t(size - 1) * 1000 + 1,
           "allgather of strings of different lengths");

    // 4. The environment: every rank described at rank 0.
    json env = {{"host", {{"hostname", mpi::host()}}},
                {"gpus", json::array({{{"index", 0}, {"name", "test GPU"}, {"pci_bus_id", "0000:01:00.0"}}})}};
    nb::cluster::gather_environment(env, 0);
    if (rank == 0) {
      expect(env.contains("ranks") && int(env["ranks"].size()) == size, "environment.ranks has every rank");
      expect(env.contains("nodes") && env["nodes"].size() >= 1, "environment.nodes lists the hosts");
      expect(env["mpi"]["world_size"] == size, "environment.mpi.world_size");
      if (env.contains("ranks"))
        for (int r = 0; r < size && r < int(env["ranks"].size()); ++r)
          expect(env["ranks"][size_t(r)]["rank"] == r, "ranks in rank order");
    } else {
      expect(!env.contains("ranks"), "only rank 0 gathers the environment");
    }

    // 5. Records: a per-GPU case (every rank's records kept) and a multi-GPU case (rank 0's,
    //    plus what another rank saw fail).
    std::vector<json> mine;
    for (int k = 0; k <= rank; ++k)
      mine.push_back({{"id", "latency/h2d_4b"}, {"status", "ok"}, {"gpus", {0}}, {"k", k}, {"from", rank}});
    // A large record too (megabytes, as a full suite's samples can make): beyond the eager sizes.
    mine.front()["details"] = {{"blob", std::string(size_t(3) << 20, char('A' + rank % 26))}};
    const auto per_gpu = nb::cluster::gather_records(false, mine);
    if (rank == 0) {
      expect(int(per_gpu.size()) == size * (size + 1) / 2, "every rank's per-GPU records at rank 0");
      std::set<int> ranks;
      for (const auto& r : per_gpu) {
        ranks.insert(r["rank"].get<int>());
        expect(r["rank"] == r["from"], "each record carries the rank that made it");
        expect(r.contains("host") && r["host"].is_string(), "each record carries its host");
      }
      expect(int(ranks.size()) == size, "records from every rank");
      size_t blobs = 0;
      for (const auto& r : per_gpu)
        if (r.contains("details")) {
          const auto& b = r["details"]["blob"].get_ref<const std::string&>();
          blobs += b.size() == (size_t(3) << 20) && b[0] == char('A' + r["from"].get<int>() % 26);
        }
      expect(int(blobs) == size, "every rank's large record arrived whole");
    } else {
      expect(per_gpu.empty(), "other ranks keep nothing");
    }
    const json rec = {{"id", "nccl/all_reduce/float/out_of_place/eager/8B"},
                      {"status", rank == size - 1 && size > 2 ? "failed" : rank == 0 ? "ok" : "skipped"},
                      {"from", rank}};
    const auto multi = nb::cluster::gather_records(true, {rec});
    if (rank == 0) {
      const size_t want = size > 2 ? 2 : 1;
      expect(multi.size() == want, "multi-GPU case: rank 0's record and the failures of others");
      if (!multi.empty()) expect(multi[0]["rank"] == 0, "rank 0's record first");
    }
    mpi::barrier();

    // 4. Cases that contend for the host run one rank of a host at a time: each rank's turn
    //    [start, end] on the monotonic clock (shared by the processes of a host) must not
    //    overlap another's on the same host, and every rank runs exactly once.
    int runs = 0;
    double t_start = 0, t_end = 0;
    auto now = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    };
    nb::cluster::take_turns_on_host([&] {
      ++runs;
      t_start = now();
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      t_end = now();
    });
    expect(runs == 1, "take_turns_on_host runs the work once on every rank");
    const json turn = {{"host", mpi::host()}, {"start", t_start}, {"end", t_end}};
    const auto turns = mpi::gather_strings(turn.dump(), 0);
    if (rank == 0) {
      std::vector<json> t;
      for (const auto& x : turns) t.push_back(json::parse(x));
      for (size_t i = 0; i < t.size(); ++i)
        for (size_t j = i + 1; j < t.size(); ++j)
          if (t[i]["host"] == t[j]["host"])
            expect(t[i]["end"].get<double>() <= t[j]["start"].get<double>() ||
                       t[j]["end"].get<double>() <= t[i]["start"].get<double>(),
                   "ranks " + std::to_string(i) + " and " + std::to_string(j) + " of one host took their turns apart");
    }
    // More ranks on a host than GPUs: a GPU is shared.
    expect(nb::cluster::gpu_shared({0}) == (mpi::local_size() > 1), "one GPU for the host's ranks is shared when there are several");
    expect(!nb::cluster::gpu_shared(std::vector<int>(size_t(mpi::local_size()), 0)), "a GPU per rank is not shared");
    mpi::barrier();
  } catch (const std::exception& e) {
    std::cerr << "rank " << mpi::rank() << ": exception: " << e.what() << "\n";
    ++failures;
  }
  const bool all_ok = mpi::all(failures == 0);
  if (mpi::rank() == 0) std::cout << (all_ok ? "mpi gather test: ok" : "mpi gather test: FAILED") << " on " << mpi::size() << " ranks\n";
  mpi::finalize();
  return failures == 0 ? 0 : 1;
}
