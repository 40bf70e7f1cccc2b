#include "cluster/cluster.hpp"

#include <algorithm>
#include <map>

#include "cluster/mpi.hpp"

namespace nb::cluster {
using nlohmann::json;

std::string start() {
  if (!mpi::launched()) return "";
  if (!mpi::compiled())
    return "nodebench: started by an MPI launcher, but built without MPI (NODEBENCH_WITH_MPI): every process runs "
           "alone and writes its own result file";
  mpi::init();
  return "nodebench: MPI: rank " + std::to_string(mpi::rank()) + " of " + std::to_string(mpi::size()) + " on " +
         mpi::host() + " (local rank " + std::to_string(mpi::local_rank()) + " of " +
         std::to_string(mpi::local_size()) + ")";
}

bool active() { return mpi::active(); }
bool root() { return mpi::rank() == 0; }
int rank() { return mpi::rank(); }
int size() { return mpi::size(); }

bool all_ok(bool mine) { return active() ? mpi::all(mine) : mine; }
bool any(bool mine) { return active() ? mpi::any(mine) : mine; }
std::string from_root(const std::string& s) { return active() ? mpi::broadcast_string(s, 0) : s; }

bool gpu_shared(const std::vector<int>& selected) {
  return mpi::active() && !selected.empty() && size_t(mpi::local_size()) > selected.size();
}

void take_turns_on_host(const std::function<void()>& work) {
  if (!mpi::active()) {
    work();
    return;
  }
  const int64_t turns = mpi::allreduce(int64_t(mpi::local_size()), mpi::Op::max);
  for (int64_t t = 0; t < turns; ++t) {
    if (t == mpi::local_rank()) work();
    mpi::barrier();
  }
}

std::vector<int> local_gpus(const std::vector<int>& selected) {
  if (!active() || selected.empty()) return selected;
  return {selected[size_t(mpi::local_rank()) % selected.size()]};
}

json rank_info(const json& environment, int gpu) {
  json g = nullptr;
  if (environment.contains("gpus"))
    for (const auto& x : environment["gpus"])
      if (x.value("index", -1) == gpu) g = x;
  return {{"rank", mpi::rank()},
          {"local_rank", mpi::local_rank()},
          {"host", mpi::host()},
          {"gpu", gpu},
          {"pci_bus_id", g.is_object() ? g.value("pci_bus_id", json(nullptr)) : json(nullptr)},
          {"gpu_name", g.is_object() ? g.value("name", json(nullptr)) : json(nullptr)},
          {"environment", environment}};
}

void add_rank_environment(json& env, const std::vector<json>& infos) {
  json ranks = json::array();
  json nodes = json::array();
  std::map<std::string, size_t> node_of;
  for (const auto& info : infos) {
    const std::string host = info.value("host", "");
    ranks.push_back({{"rank", info["rank"]},
                     {"local_rank", info["local_rank"]},
                     {"host", host},
                     {"gpu", info["gpu"]},
                     {"pci_bus_id", info["pci_bus_id"]},
                     {"gpu_name", info["gpu_name"]}});
    auto it = node_of.find(host);
    if (it == node_of.end()) {
      node_of[host] = nodes.size();
      // The node's environment as its lowest rank saw it.
      nodes.push_back({{"hostname", host}, {"ranks", json::array({info["rank"]})}, {"environment", info["environment"]}});
    } else {
      nodes[it->second]["ranks"].push_back(info["rank"]);
    }
  }
  env["ranks"] = ranks;
  env["nodes"] = nodes;
  env["mpi"] = {{"world_size", infos.size()}, {"node_count", nodes.size()}};
}

void gather_environment(json& env, int gpu) {
  if (!active()) return;
  const std::vector<std::string> all = mpi::gather_strings(rank_info(env, gpu).dump(), 0);
  if (!root()) return;
  std::vector<json> infos;
  for (const auto& s : all) infos.push_back(json::parse(s));
  add_rank_environment(env, infos);
}

std::vector<json> merge_rank_records(bool multi_gpu, const std::vector<std::vector<json>>& per_rank,
                                     const std::vector<std::string>& hosts) {
  std::vector<json> out;
  std::vector<std::string> root_status;
  for (size_t r = 0; r < per_rank.size(); ++r) {
    for (const json& rec : per_rank[r]) {
      if (multi_gpu && r > 0) {
        const std::string st = rec.value("status", "");
        if (st == "ok" || st == "skipped") continue;
      }
      json x = rec;
      x["rank"] = int(r);
      x["host"] = r < hosts.size() ? json(hosts[r]) : json(nullptr);
      out.push_back(std::move(x));
    }
  }
  return out;
}

std::vector<json> gather_records(bool multi_gpu, std::vector<json> mine) {
  if (!active()) return mine;
  const std::vector<std::string> all = mpi::gather_strings(json(mine).dump(), 0);
  static const std::vector<std::string> hosts = mpi::gather_strings(mpi::host(), 0);  // once, on every rank
  if (!root()) return {};
  std::vector<std::vector<json>> per_rank;
  for (const auto& s : all) per_rank.push_back(json::parse(s).get<std::vector<json>>());
  return merge_rank_records(multi_gpu, per_rank, hosts);
}

}  // namespace nb::cluster
