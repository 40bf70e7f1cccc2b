#include "run/plan.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#include "bench/algo_choice.hpp"
#include "run/case_records.hpp"
#include "cluster/cluster.hpp"
#include "node/monitor.hpp"

namespace nb {
using nlohmann::json;

const char* to_string(RunMode m) { return m == RunMode::concurrent ? "concurrent" : "alone"; }

std::vector<Case> select_cases(Suite suite, const std::vector<std::string>& families, const std::string& filter) {
  std::set<std::string> known;
  for (const auto& f : family_registry()) known.insert(f->name());
  for (const auto& f : families) {
    if (!known.count(f)) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw Error("unknown family '" + f + "' (families: " + list + ")");
    }
  }
  std::optional<std::regex> re;
  try {
    if (!filter.empty()) re.emplace(filter);
  } catch (const std::regex_error& e) {
    throw Error("--filter '" + filter + "' is not a valid regular expression: " + e.what());
  }
  std::vector<Case> out;
  for (const auto& f : family_registry()) {
    if (!families.empty() && std::find(families.begin(), families.end(), f->name()) == families.end()) continue;
    for (auto& c : f->cases(suite)) {
      if (re && !std::regex_search(c.id(), *re)) continue;
      c.shares_host = f->shares_host();
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::vector<Step> schedule(const Plan& plan) {
  std::vector<Step> steps;
  const bool together = plan.concurrent && plan.gpus.size() > 1;
  int wave = 0;
  // Per-GPU cases that share nothing: with `together`, wave w runs case w on every GPU at once.
  for (const Case& c : plan.cases) {
    if (c.multi_gpu || c.shares_host) continue;
    if (together) {
      for (int g : plan.gpus) steps.push_back({&c, {g}, RunMode::concurrent, wave});
      ++wave;
    }
  }
  if (!together)
    for (int g : plan.gpus)
      for (const Case& c : plan.cases)
        if (!c.multi_gpu && !c.shares_host) steps.push_back({&c, {g}, RunMode::alone, wave++});
  for (int g : plan.gpus)
    for (const Case& c : plan.cases)
      if (!c.multi_gpu && c.shares_host) steps.push_back({&c, {g}, RunMode::alone, wave++});
  for (const Case& c : plan.cases)
    if (c.multi_gpu) steps.push_back({&c, plan.gpus, RunMode::alone, wave++});
  return steps;
}

namespace {

// Runs one case on this process's GPUs and returns its records (no collective calls, except
// the agreement on a multi-GPU case under MPI, which every rank makes in the same order).
CaseRecords run_local(const Step& step, const Plan& plan, Session& session) {
  const Case& c = *step.c;
  const std::vector<int>& ids = step.gpus;
  const int gpu_id = ids.front();
  const GpuInfo& gpu = session.gpu(gpu_id);
  std::vector<const GpuInfo*> all;
  for (int i : ids) all.push_back(&session.gpu(i));
  RecordInput in;
  in.c = &c;
  in.gpus = ids;
  in.gpu = &gpu;
  in.nvml_available = session.nvml().available() && gpu.nvml_index.has_value();
  in.started_at = iso_utc(std::chrono::system_clock::now());
  const auto t0 = std::chrono::steady_clock::now();
  std::optional<CaseContext> ctx;
  GpuSlot& st = session.slot(gpu_id);
  // Under MPI a multi-GPU case is one operation over every rank: all run it or none does.
  bool peers_ok = true;
  if (c.multi_gpu && cluster::active()) {
    bool mine = st.broken.empty() && int(ids.size()) >= c.min_gpus;
    try {
      mine = mine && (!c.available || c.available(gpu).ok);
    } catch (const std::exception&) {
      mine = false;
    }
    peers_ok = cluster::all_ok(mine) || !mine;
  }
  auto set = [&](Status s, ReasonKind k, std::string why) {
    in.status = s;
    in.reason_kind = k;
    in.reason = std::move(why);
  };
  try {
    Availability a = c.available ? c.available(gpu) : Availability::yes();
    for (size_t k = 1; a.ok && k < all.size(); ++k)
      if (c.available) a = c.available(*all[k]);
    if (c.multi_gpu && int(ids.size()) < c.min_gpus) {
      set(Status::skipped, ReasonKind::needs_gpus,
          "needs " + std::to_string(c.min_gpus) + " GPUs; " + std::to_string(ids.size()) +
              (ids.size() == 1 ? " is" : " are") + " selected" +
              (cluster::active() ? " in this process (under MPI each process drives one GPU)" : ""));
    } else if (!a.ok) {
      set(Status::skipped, infer_reason_kind(a.reason, ReasonKind::unsupported), a.reason);
    } else if (!peers_ok) {
      set(Status::skipped, ReasonKind::peer_rank, "another MPI rank cannot run this case");
    } else if (!c.multi_gpu && cluster::gpu_shared(plan.gpus)) {
      set(Status::skipped, ReasonKind::shared_gpu,
          "this GPU is shared with another MPI rank of this host (more ranks than GPUs): per-GPU figures would be "
          "those of a shared GPU; start one rank per GPU");
    } else if (!st.broken.empty()) {
      set(Status::failed, ReasonKind::unusable_gpu,
          "not run: GPU " + std::to_string(gpu_id) + " is unusable after an earlier error (" + st.broken + ")");
    } else {
      DeviceGuard guard(gpu_id);
      if (!st.measurer) {
        st.measurer = std::make_unique<Measurer>(gpu_id, gpu.l2_bytes, &session.nvml(), gpu.nvml_index);
        st.stream = std::make_unique<Stream>();
      }
      MeasureConfig cfg = plan.base;
      cfg.l2 = plan.l2.value_or(c.l2.value_or(L2Mode::hot));
      if (gpu.nvml_index) in.before = session.nvml().snapshot(*gpu.nvml_index);
      ctx.emplace(gpu, session.nvml(), *st.measurer, st.stream->get(), cfg, all,
                  CaseServices{&session.settings(), st.resources.get(), &session.resources(), &session.algo_cache()});
      try {
        c.run(*ctx);
        set(Status::ok, ReasonKind::none, "");
      } catch (const SkipCase& s) {
        set(Status::skipped, s.kind, s.reason);
      } catch (const std::exception& e) {
        const Outcome o = outcome_of(e);
        set(o.status, o.kind, o.reason);
      }
      if (in.status == Status::failed) {
        // A sticky error (illegal address, launch failure) poisons the context for good.
        const cudaError_t sync = cudaDeviceSynchronize();
        if (sync != cudaSuccess) st.broken = std::string(cudaGetErrorName(sync)) + " after " + c.id();
        (void)cudaGetLastError();
      }
      if (gpu.nvml_index) in.after = session.nvml().snapshot(*gpu.nvml_index);
      in.out = &ctx->output();
    }
  } catch (const std::exception& e) {
    set(Status::failed, ReasonKind::error, std::string("setup failed: ") + e.what());
  }
  in.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CaseRecords made = make_case_records(in, session.env().gpus);
  const RunMode mode = step.mode == RunMode::concurrent || (cluster::active() && cluster::size() > 1 && !c.multi_gpu &&
                                                            !c.shares_host)
                           ? RunMode::concurrent
                           : RunMode::alone;
  for (json& r : made.records) r["mode"] = to_string(mode);
  return made;
}

// run --monitor: a sampler over the run's GPUs, or null with the reason in `note`.
std::unique_ptr<Sampler> start_sampler(const Plan& plan, const Session& session, std::string& note) {
  if (!plan.monitor_interval_s) return nullptr;
  const Nvml& nvml = session.nvml();
  std::vector<MonitoredGpu> gpus;
  std::string unmatched;
  if (nvml.available()) {
    for (int g : plan.gpus) {
      const GpuInfo& info = session.gpu(g);
      if (!info.nvml_index) {
        unmatched += (unmatched.empty() ? "" : ",") + std::to_string(g);
        continue;
      }
      gpus.push_back({g, *info.nvml_index, nvml.uuid(*info.nvml_index).value_or(""), info.name});
    }
  }
  if (!nvml.available()) {
    note = "run --monitor: no timeline: NVML is unavailable (" + nvml.error() + ")";
  } else if (gpus.empty()) {
    note = "run --monitor: no timeline: NVML does not know the run's GPUs (no PCI bus id matched)";
  } else if (!unmatched.empty()) {
    note = "run --monitor: GPU " + unmatched + " not known to NVML: left out of the timeline";
  }
  if (gpus.empty()) return nullptr;
  auto s = std::make_unique<Sampler>(nvml, std::move(gpus), *plan.monitor_interval_s);
  s->start();
  return s;
}

}  // namespace

std::vector<std::string> run_analyses(ResultFile& file, const AnalysisContext& ctx) {
  std::vector<std::string> lines;
  const json records = file.doc()["records"];
  for (const Analysis& a : analysis_registry()) {
    try {
      if (a.applies && !a.applies(records)) continue;
      json result = a.run(records, ctx);
      if (a.lines)
        for (auto& l : a.lines(result)) lines.push_back(std::move(l));
      file.set_analysis(a.key, std::move(result));
    } catch (const std::exception& e) {
      lines.push_back("analysis " + a.key + " failed: " + e.what());
    }
  }
  return lines;
}

RunOutcome run_plan(const Plan& plan, Session& session, ResultFile& file, const RunHooks& hooks) {
  RunOutcome out;
  // The algorithm cache: yesterday's choices reused unless asked to search again (issue 13).
  AlgoCache& cache = global_algo_cache();  // moves to session.algo_cache() with the families (issue 22)
  cache.set_search_again(plan.algo_search);
  if (!plan.algo_cache_file.empty()) cache.load(plan.algo_cache_file);  // checked while parsing: exit 2 there
  const std::vector<Step> steps = schedule(plan);
  std::string monitor_note;
  std::unique_ptr<Sampler> sampler = start_sampler(plan, session, monitor_note);
  if (!monitor_note.empty()) {
    if (cluster::root()) std::cerr << "nodebench: " << monitor_note << "\n";
    file.set_field("notes", json::array({monitor_note}));
  }
  auto mark = [&](const char* what, size_t a, size_t b) {
    if (!sampler) return;
    std::vector<int> gpus;
    for (size_t k = a; k < b; ++k) gpus.insert(gpus.end(), steps[k].gpus.begin(), steps[k].gpus.end());
    sampler->mark(std::string(what) + " " + steps[a].c->id(), std::move(gpus));
  };
  size_t total = steps.size(), done = 0;
  std::mutex mu;  // the file, the counter and the hooks' output
  std::atomic<bool> stopped{false};
  auto stop_now = [&]() {
    // Under MPI every rank stops at the same case (cluster::any is collective).
    const bool mine = stopped.load() || (hooks.stop_requested && hooks.stop_requested());
    const bool any = cluster::any(mine);
    if (any) stopped.store(true);
    return any;
  };
  auto publish = [&](const Step& step, CaseRecords made) {
    std::vector<json> recs = cluster::gather_records(step.c->multi_gpu, std::move(made.records));
    std::lock_guard<std::mutex> lock(mu);
    if (cluster::root()) merge_analysis(file, made.analysis);
    ++done;
    for (json& rec : recs) {
      if (hooks.on_record) hooks.on_record(rec, done, total);
      file.add(std::move(rec));
    }
  };
  try {
    for (size_t i = 0; i < steps.size();) {
      // A wave: consecutive steps with the same wave number (several only when concurrent).
      size_t j = i;
      while (j < steps.size() && steps[j].wave == steps[i].wave) ++j;
      if (stop_now()) break;
      mark("start", i, j);
      if (j - i == 1) {
        const Step& s = steps[i];
        if (!s.c->multi_gpu && s.c->shares_host && cluster::active()) {
          // One GPU of the host at a time: the rank runs in its turn; records are gathered after.
          CaseRecords made;
          cluster::take_turns_on_host([&] { made = run_local(s, plan, session); });
          publish(s, std::move(made));
        } else {
          publish(s, run_local(s, plan, session));
        }
      } else {
        std::vector<std::thread> threads;
        std::vector<CaseRecords> made(j - i);
        std::vector<std::string> errors(j - i);
        for (size_t k = i; k < j; ++k)
          threads.emplace_back([&, k] {
            try {
              made[k - i] = run_local(steps[k], plan, session);
            } catch (const std::exception& e) {
              errors[k - i] = e.what();
            }
          });
        for (auto& t : threads) t.join();
        for (size_t k = i; k < j; ++k) {
          if (!errors[k - i].empty()) throw Error("GPU " + std::to_string(steps[k].gpus.front()) + ": " + errors[k - i]);
          publish(steps[k], std::move(made[k - i]));
        }
      }
      mark("end", i, j);
      i = j;
    }
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  if (sampler) {
    sampler->stop();
    std::vector<GpuSeries> series;
    for (const auto& s : sampler->series()) series.push_back(downsample(s, kTimelineMaxPoints));
    file.set_field("timeline", timeline_json(sampler->interval_s(), series, sampler->marks()));
  }
  if (cluster::root()) {
    AnalysisContext actx;
    for (int g : plan.gpus) actx.gpus.push_back(&session.gpu(g));
    actx.memory_fraction = plan.memory_fraction;
    actx.global_batch = plan.global_batch;
    if (file.doc().contains("environment")) actx.environment = file.doc()["environment"];
    out.verdict_lines = run_analyses(file, actx);
  }
  if (!plan.algo_cache_file.empty() || plan.algo_search) {
    json summary = cache.summary();
    if (!plan.algo_cache_file.empty() && cluster::root()) {
      try {
        cache.save(plan.algo_cache_file);
        summary["saved"] = true;
        summary["error"] = nullptr;
      } catch (const std::exception& e) {
        summary["saved"] = false;
        summary["error"] = e.what();
      }
    }
    file.set_field("algo_cache", summary);
  }
  out.status = !out.error.empty() ? "aborted" : stopped.load() ? "interrupted" : "complete";
  file.finish(out.status, out.error);
  return out;
}

}  // namespace nb
