#include "run/plan.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <mutex>
#include <thread>

#include "bench/algo_choice.hpp"
#include "bench/cost.hpp"
#include "cluster/cluster.hpp"
#include "node/monitor.hpp"
#include "run/case_records.hpp"

namespace nb {
using nlohmann::json;

namespace {

// Runs the case's body in `ctx`, recording on `in` how it ended.
void run_body(const Case& c, CaseContext& ctx, RecordInput& in) {
  try {
    c.run(ctx);
    in.status = Status::ok;
    in.reason_kind = ReasonKind::none;
    in.reason.clear();
  } catch (const SkipCase& s) {
    in.status = Status::skipped;
    in.reason_kind = s.kind;
    in.reason = s.reason;
  } catch (const std::exception& e) {
    const Outcome o = outcome_of(e);
    in.status = o.status;
    in.reason_kind = o.kind;
    in.reason = o.reason;
  }
}

// A host-only case (Case::host_only): once, with the run's GPUs in its context, none its own
// (no per-GPU resources, no GPU timer: it times itself on the host clock).
CaseRecords run_host(const Step& step, const Plan& plan, Session& session) {
  const Case& c = *step.c;
  std::vector<const GpuInfo*> all;
  for (int g : plan.gpus) all.push_back(&session.gpu(g));
  RecordInput in;
  in.c = &c;
  in.started_at = iso_utc(std::chrono::system_clock::now());
  const auto t0 = std::chrono::steady_clock::now();
  MeasureConfig cfg = plan.base;
  cfg.timer = Timer::host;
  std::optional<CaseContext> ctx;
  // Known before any work (Case::available, judged on the run's first GPU, as the estimate is).
  const Availability a = c.available && !all.empty() ? c.available(*all.front()) : Availability::yes();
  if (!a.ok) {
    in.status = Status::skipped;
    in.reason_kind = a.kind == ReasonKind::none ? ReasonKind::unsupported : a.kind;
    in.reason = a.reason;
  } else {
    ctx.emplace(session.nvml(), cfg, all, CaseServices{&session.settings(), nullptr, &session.resources(), &session.algo_cache()});
    run_body(c, *ctx, in);
    in.out = &ctx->output();
  }
  in.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CaseRecords made = make_case_records(in, session.env().gpus);
  for (json& r : made.records) r["mode"] = to_string(RunMode::alone);
  return made;
}

// Under MPI a multi-GPU case is one operation over every rank: all run it or none does. Whether
// the other ranks can (true outside MPI and for per-GPU cases).
bool peers_agree(const Case& c, const std::vector<int>& ids, const GpuInfo& gpu, const GpuSlot& st) {
  if (!c.multi_gpu || !cluster::active()) return true;
  bool mine = st.broken.empty() && int(ids.size()) >= c.min_gpus;
  try {
    mine = mine && (!c.available || c.available(gpu).ok);
  } catch (const std::exception&) {
    mine = false;
  }
  return cluster::all_ok(mine) || !mine;
}

// Why the case does not run on these GPUs (its record's status, kind and reason), or nullopt.
struct NotRun {
  Status status;
  ReasonKind kind;
  std::string reason;
};
std::optional<NotRun> why_not_run(const Case& c, const std::vector<const GpuInfo*>& all, const Plan& plan,
                                  const GpuSlot& st, bool peers_ok) {
  const Availability a = case_runs(c, all, int(all.size()));
  if (!a.ok) return NotRun{Status::skipped, a.kind, a.reason};
  if (!peers_ok) return NotRun{Status::skipped, ReasonKind::peer_rank, "another MPI rank cannot run this case"};
  if (!c.multi_gpu && cluster::gpu_shared(plan.gpus))
    return NotRun{Status::skipped, ReasonKind::shared_gpu,
                  "this GPU is shared with another MPI rank of this host (more ranks than GPUs): per-GPU figures would "
                  "be those of a shared GPU; start one rank per GPU"};
  if (!st.broken.empty())
    return NotRun{Status::failed, ReasonKind::unusable_gpu,
                  "not run: GPU " + std::to_string(all.front()->index) + " is unusable after an earlier error (" +
                      st.broken + ")"};
  return std::nullopt;
}

// Runs the case's body on its first GPU's slot (made on first use), recording how it ended in
// `in`; a failure that leaves the GPU's context unusable marks the slot broken.
void run_on_gpu(const Case& c, const std::vector<const GpuInfo*>& all, const Plan& plan, Session& session,
                GpuSlot& st, std::optional<CaseContext>& ctx, RecordInput& in) {
  const GpuInfo& gpu = *all.front();
  DeviceGuard guard(gpu.index);
  if (!st.measurer) {
    st.measurer = std::make_unique<Measurer>(gpu.index, gpu.l2_bytes, &session.nvml(), gpu.nvml_index);
    st.stream = std::make_unique<Stream>();
  }
  MeasureConfig cfg = plan.base;
  cfg.l2 = plan.l2.value_or(c.l2.value_or(L2Mode::hot));
  if (st.family != c.family) {  // what the last family kept here goes before another family's case
    st.family_resources->clear();
    st.family = c.family;
  }
  if (gpu.nvml_index) in.before = session.nvml().snapshot(*gpu.nvml_index);
  ctx.emplace(gpu, session.nvml(), *st.measurer, st.stream->get(), cfg, all,
              CaseServices{&session.settings(), st.resources.get(), &session.resources(), &session.algo_cache(),
                           st.family_resources.get(), &session.stop_requested});
  run_body(c, *ctx, in);
  if (in.status == Status::failed) {
    // A sticky error (illegal address, launch failure) poisons the context for good.
    const cudaError_t sync = cudaDeviceSynchronize();
    if (sync != cudaSuccess) st.broken = std::string(cudaGetErrorName(sync)) + " after " + c.id();
    (void)cudaGetLastError();
  }
  if (gpu.nvml_index) in.after = session.nvml().snapshot(*gpu.nvml_index);
  in.out = &ctx->output();
}

// Runs one case on this process's GPUs and returns its records (no collective calls, except
// the agreement on a multi-GPU case under MPI, which every rank makes in the same order).
CaseRecords run_local(const Step& step, const Plan& plan, Session& session) {
  const Case& c = *step.c;
  if (c.host_only) return run_host(step, plan, session);
  const std::vector<int>& ids = step.gpus;
  const GpuInfo& gpu = session.gpu(ids.front());
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
  GpuSlot& st = session.slot(ids.front());
  const bool peers_ok = peers_agree(c, ids, gpu, st);
  try {
    if (const std::optional<NotRun> no = why_not_run(c, all, plan, st, peers_ok)) {
      in.status = no->status;
      in.reason_kind = no->kind;
      in.reason = no->reason;
    } else {
      // A family that runs one GPU at a time keeps its buffers on one GPU at a time.
      if (c.shares_host && step.mode == RunMode::alone) session.release_family_resources(c.family, ids.front());
      run_on_gpu(c, all, plan, session, st, ctx, in);
    }
  } catch (const std::exception& e) {
    in.status = Status::failed;
    in.reason_kind = ReasonKind::error;
    in.reason = std::string("setup failed: ") + e.what();
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

const char* to_string(RunStatus s) {
  return s == RunStatus::complete ? "complete" : s == RunStatus::interrupted ? "interrupted" : "aborted";
}

std::vector<std::string> run_analyses(RunDocument& doc, const AnalysisContext& ctx) {
  std::vector<std::string> lines;
  const json records = doc.doc()["records"];
  for (const Analysis& a : analysis_registry()) {
    try {
      if (a.applies && !a.applies(records)) continue;
      json result = a.run(records, ctx);
      if (a.lines)
        for (auto& l : a.lines(result)) lines.push_back(std::move(l));
      doc.set_analysis(a.key, std::move(result));
    } catch (const std::exception& e) {
      lines.push_back("analysis " + a.key + " failed: " + e.what());
    }
  }
  return lines;
}

namespace {

using Clock = std::chrono::steady_clock;

// One run of a plan: the schedule, the estimate, the sampler, and what is published as it goes.
class PlanRun {
 public:
  PlanRun(const Plan& plan, Session& session, RunDocument& doc, const std::vector<Reporter*>& reporters,
          const RunHooks& hooks)
      : plan_(plan), session_(session), doc_(doc), reporters_(reporters), hooks_(hooks), steps_(schedule(plan)),
        estimate_(wave_costs(plan, session, steps_)), t0_(Clock::now()) {}

  RunOutcome run() {
    RunOutcome out;
    AlgoCache& cache = session_.algo_cache();
    cache.set_search_again(plan_.algo_search);
    if (!plan_.algo_cache_file.empty()) cache.load(plan_.algo_cache_file);  // checked while parsing: exit 2 there
    start();
    if (hooks_.on_start) hooks_.on_start([this](const std::string& why) { return end_now(why); });
    try {
      size_t wave = 0;
      for (size_t i = 0; i < steps_.size(); ++wave) {
        size_t j = i;  // a wave: consecutive steps with the same wave number (several only when concurrent)
        while (j < steps_.size() && steps_[j].wave == steps_[i].wave) ++j;
        if (stop_now()) break;
        run_wave(i, j, wave);
        i = j;
      }
    } catch (const std::exception& e) {
      out.error = e.what();
    }
    if (hooks_.on_end) hooks_.on_end();  // from here no end_now: the run finishes as it is
    {
      std::lock_guard<std::mutex> lock(mu_);
      finishing_ = true;
    }
    finish(out, cache);
    return out;
  }

  // RunHooks::on_start's end_now: the document finished "interrupted" with what was recorded,
  // from another thread, while a case may still run.
  bool end_now(const std::string& why) {
    std::lock_guard<std::mutex> lock(mu_);
    if (finishing_) return false;
    finishing_ = true;
    stopped_.store(true);
    json notes = doc_.doc().contains("notes") && doc_.doc()["notes"].is_array() ? doc_.doc()["notes"] : json::array();
    std::string cases;
    for (const std::string& id : under_way_) cases += (cases.empty() ? "" : ", ") + id;
    notes.push_back(why + ": the run ended at once" +
                    (cases.empty() ? std::string() : "; the case under way (" + cases + ") is not recorded"));
    doc_.set_field("notes", notes);
    doc_.finish(to_string(RunStatus::interrupted), "");
    for (Reporter* r : reporters_) {
      try {
        r->finished(doc_);
      } catch (const std::exception&) {
        // the process ends next: nothing more can be done
      }
    }
    return true;
  }

 private:
  void start() {
    std::string note;
    sampler_ = start_sampler(plan_, session_, note);
    if (!note.empty()) {
      if (cluster::root()) std::cerr << "nodebench: " << note << "\n";
      doc_.set_field("notes", json::array({note}));
    }
    RunForecast f;
    f.cases = plan_.cases.size();
    f.steps = steps_.size();
    f.gpus = plan_.gpus.size();
    f.predicted_s = estimate_.prior_total_s();
    if (!plan_.budget.is_null()) f.plan = plan_.budget;
    json forecast = {{"predicted_s", f.predicted_s}, {"steps", f.steps}, {"waves", estimate_.size()}};
    json planned = plan_.budget.is_null() ? json::object() : plan_.budget;
    planned["forecast"] = forecast;
    if (plan_.gpus.size() > 1) {  // what runs on the first GPU alone (Case::first_gpu_only)
      json first = json::array();
      for (const Case& c : plan_.cases)
        if (c.first_gpu_only) first.push_back(c.id());
      if (!first.empty()) planned["first_gpu_only"] = first;
    }
    doc_.set_field("plan", planned);
    for (Reporter* r : reporters_) r->started(doc_, f);
  }

  bool stop_now() {
    // Under MPI every rank stops at the same case (cluster::any is collective).
    const bool mine = stopped_.load() || (hooks_.stop_requested && hooks_.stop_requested());
    const bool any = cluster::any(mine);
    if (any) stopped_.store(true);
    return any;
  }

  void mark(const char* what, size_t a, size_t b) {
    if (!sampler_) return;
    std::vector<int> gpus;
    for (size_t k = a; k < b; ++k) gpus.insert(gpus.end(), steps_[k].gpus.begin(), steps_[k].gpus.end());
    sampler_->mark(std::string(what) + " " + steps_[a].c->id(), std::move(gpus));
  }

  void run_wave(size_t i, size_t j, size_t wave) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      under_way_.clear();
      for (size_t k = i; k < j; ++k) under_way_.push_back(steps_[k].c->id());
    }
    mark("start", i, j);
    const auto w0 = Clock::now();
    std::vector<CaseRecords> made(j - i);
    std::vector<double> took(j - i, 0);
    if (j - i == 1) {
      const Step& s = steps_[i];
      const auto s0 = Clock::now();
      if (!s.c->multi_gpu && (s.c->shares_host || s.c->host_only) && cluster::active()) {
        // One GPU (or host-only case) of the host at a time: the rank runs in its turn; records
        // are gathered after.
        cluster::take_turns_on_host([&] { made[0] = run_local(s, plan_, session_); });
      } else {
        made[0] = run_local(s, plan_, session_);
      }
      took[0] = std::chrono::duration<double>(Clock::now() - s0).count();
    } else {
      run_together(i, j, made, took);
    }
    learn(wave, made, std::chrono::duration<double>(Clock::now() - w0).count());
    for (size_t k = i; k < j; ++k) publish(steps_[k], std::move(made[k - i]), took[k - i], wave);
    mark("end", i, j);
  }

  // What the wave tells the estimate (Estimator::learn).
  void learn(size_t wave, const std::vector<CaseRecords>& made, double took_s) {
    std::vector<json> recs;
    for (const CaseRecords& m : made) recs.insert(recs.end(), m.records.begin(), m.records.end());
    estimate_.learn(wave, recs, took_s);
  }

  // Concurrent steps, one thread per GPU.
  void run_together(size_t i, size_t j, std::vector<CaseRecords>& made, std::vector<double>& took) {
    std::vector<std::thread> threads;
    std::vector<std::string> errors(j - i);
    for (size_t k = i; k < j; ++k)
      threads.emplace_back([&, k] {
        const auto s0 = Clock::now();
        try {
          made[k - i] = run_local(steps_[k], plan_, session_);
        } catch (const std::exception& e) {
          errors[k - i] = e.what();
        }
        took[k - i] = std::chrono::duration<double>(Clock::now() - s0).count();
      });
    for (auto& t : threads) t.join();
    for (size_t k = i; k < j; ++k)
      if (!errors[k - i].empty()) throw Error("GPU " + std::to_string(steps_[k].gpus.front()) + ": " + errors[k - i]);
  }

  void publish(const Step& step, CaseRecords made, double step_s, size_t wave) {
    std::vector<json> recs = cluster::gather_records(step.c->multi_gpu, std::move(made.records));
    std::lock_guard<std::mutex> lock(mu_);
    if (finishing_) return;  // ended at once (end_now): the document is written and final
    if (cluster::root()) merge_analysis(doc_, made.analysis);
    ++done_;
    Progress p;
    p.done = done_;
    p.total = steps_.size();
    p.elapsed_s = std::chrono::duration<double>(Clock::now() - t0_).count();
    p.left_s = estimate_.remaining_s();
    p.step_s = step_s;
    for (size_t k = 0; k < recs.size(); ++k) {
      p.first_of_step = k == 0;
      // What the run knew when this step ended (docs/SCHEMA.md, "progress"): the estimate of the
      // time left can then be checked against the real end.
      if (k == 0)
        recs[k]["progress"] = {{"elapsed_s", p.elapsed_s}, {"left_s", *p.left_s}, {"step", p.done},
                               {"steps", p.total}, {"kind", estimate_.unit(wave).kind},
                               {"predicted_s", estimate_.unit(wave).prior_s}, {"model_s", estimate_.unit(wave).model_s}};
      if (k == 0 && !estimate_.unit(wave).sweep.empty())
        recs[k]["progress"]["sweep"] = estimate_.unit(wave).sweep, recs[k]["progress"]["batch"] = estimate_.unit(wave).batch;
      doc_.add(recs[k]);
      for (Reporter* r : reporters_) r->recorded(doc_, recs[k], p);
    }
  }

  void finish(RunOutcome& out, AlgoCache& cache) {
    if (sampler_) {
      sampler_->stop();
      std::vector<GpuSeries> series;
      for (const auto& s : sampler_->series()) series.push_back(downsample(s, kTimelineMaxPoints));
      doc_.set_field("timeline", timeline_json(sampler_->interval_s(), series, sampler_->marks()));
    }
    if (cluster::root()) {
      AnalysisContext actx;
      for (int g : plan_.gpus) actx.gpus.push_back(&session_.gpu(g));
      actx.memory_fraction = plan_.memory_fraction;
      actx.global_batch = plan_.global_batch;
      if (doc_.doc().contains("environment")) actx.environment = doc_.doc()["environment"];
      out.verdict_lines = run_analyses(doc_, actx);
    }
    if (!plan_.algo_cache_file.empty() || plan_.algo_search) doc_.set_field("algo_cache", save_cache(cache));
    // A signal during the last case (which a long case, the burn, heeds and ends early) interrupts the run too.
    const bool late_stop = hooks_.stop_requested && hooks_.stop_requested();
    out.status = !out.error.empty()                ? RunStatus::aborted
                 : stopped_.load() || late_stop   ? RunStatus::interrupted
                                                  : RunStatus::complete;
    doc_.finish(to_string(out.status), out.error);
    for (Reporter* r : reporters_) {
      try {
        r->finished(doc_);
      } catch (const std::exception& e) {
        out.output_errors.emplace_back(r->what(), e.what());
      }
    }
  }

  json save_cache(AlgoCache& cache) const {
    json summary = cache.summary();
    if (!plan_.algo_cache_file.empty() && cluster::root()) {
      try {
        cache.save(plan_.algo_cache_file);
        summary["saved"] = true;
        summary["error"] = nullptr;
      } catch (const std::exception& e) {
        summary["saved"] = false;
        summary["error"] = e.what();
      }
    }
    return summary;
  }

  const Plan& plan_;
  Session& session_;
  RunDocument& doc_;
  const std::vector<Reporter*>& reporters_;
  const RunHooks& hooks_;
  const std::vector<Step> steps_;
  Estimator estimate_;
  const Clock::time_point t0_;
  std::unique_ptr<Sampler> sampler_;
  std::mutex mu_;  // the document, the counter and the reporters
  std::atomic<bool> stopped_{false};
  bool finishing_ = false;              // under mu_: the run is finishing (end_now does nothing)
  std::vector<std::string> under_way_;  // under mu_: the ids of the wave running now
  size_t done_ = 0;
};

}  // namespace

RunOutcome run_plan(const Plan& plan, Session& session, RunDocument& doc, const std::vector<Reporter*>& reporters,
                    const RunHooks& hooks) {
  session.stop_requested = hooks.stop_requested;
  PlanRun run(plan, session, doc, reporters, hooks);
  RunOutcome out = run.run();
  session.stop_requested = nullptr;
  return out;
}

}  // namespace nb
