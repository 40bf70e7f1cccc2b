#include "output/console.hpp"

#include <iomanip>
#include <ostream>
#include <sstream>

#include "base/text.hpp"
#include "bench/contributions.hpp"
#include "bench/metric.hpp"
#include "run/result.hpp"

namespace nb {
using nlohmann::json;

namespace {

// "0,1" from [0, 1].
std::string gpu_list(const json& gpus) {
  std::string out;
  for (const auto& g : gpus) {
    if (!out.empty()) out.push_back(',');
    out.append(std::to_string(g.get<int>()));
  }
  return out;
}

}  // namespace

std::string human_time(double s) {
  if (s < 1e-3) return fmt(s * 1e6, 2) + " us";
  if (s < 1) return fmt(s * 1e3, 3) + " ms";
  return fmt(s, 3) + " s";
}

std::string human_duration(double s) {
  if (!(s >= 0)) s = 0;
  const long long total = (long long)(s + 0.5);
  std::ostringstream os;
  if (total < 60) {
    os << total << " s";
  } else if (total < 3600) {
    os << total / 60 << " min " << std::setw(2) << std::setfill('0') << total % 60 << " s";
  } else {
    os << total / 3600 << " h " << std::setw(2) << std::setfill('0') << (total % 3600) / 60 << " min";
  }
  return os.str();
}

std::string headline(const json& r) {
  const std::string status = r["status"];
  if (status != "ok" && status != "wrong") return r["reason"].is_string() ? r["reason"].get<std::string>() : "";
  std::string s;
  // The throughput, else the figure the record's family names (bench/contributions.hpp), else its latency.
  std::vector<std::string> names = {"tflops", "tops", "gbps"};
  for (const HeadlineContribution& h : headline_contributions())
    if (h.family == family_of_record(r) && h.metric)
      if (const auto m = h.metric(r)) names.push_back(*m);
  names.push_back(kLatencyMetric.name());
  for (const std::string& m : names) {
    if (r["metrics"].contains(m) && r["metrics"][m].is_number()) {
      s = fmt(r["metrics"][m].get<double>(), 2) + " " + m;
      break;
    }
  }
  if (r["percent_of_peak"].is_object()) s += " (" + fmt(r["percent_of_peak"]["percent"].get<double>(), 1) + "% of peak)";
  if (status == "wrong") s += "  WRONG: " + r["reason"].get<std::string>();
  return s;
}

void print_summary(const json& doc, std::ostream& os) {
  os << "\n" << std::left << std::setw(58) << "case" << std::setw(6) << "gpu" << std::setw(9) << "status"
     << std::setw(13) << "median" << std::setw(8) << "cv" << "result\n";
  for (const auto& r : doc["records"]) {
    const std::string gpus = gpu_list(r["gpus"]);
    std::string med = "-", cv = "-";
    if (r["stats"].is_object()) {
      med = human_time(r["stats"]["median"].get<double>());
      cv = fmt(100.0 * r["stats"]["cv"].get<double>(), 2) + "%";
    }
    std::string flags;
    for (const auto& f : r["flags"])
      if (f != "clock_unknown") flags.append(" [").append(f.get<std::string>()).append("]");
    os << std::left << std::setw(58) << r["id"].get<std::string>() << std::setw(6) << gpus << std::setw(9)
       << r["status"].get<std::string>() << std::setw(13) << med << std::setw(8) << cv << headline(r) << flags
       << "\n";
  }
  const json& s = doc["summary"];
  os << "\n" << s["total"] << " cases: " << s["ok"] << " ok, " << s["skipped"] << " skipped, " << s["failed"]
     << " failed, " << s["wrong"] << " wrong; " << fmt(s["wall_time_s"].get<double>(), 1) << " s\n";
}

ConsoleProgress::ConsoleProgress(std::ostream& os, std::string start_line, bool quiet, bool tty)
    : os_(os), start_line_(std::move(start_line)), quiet_(quiet), tty_(tty) {}

void ConsoleProgress::started(const RunDocument&, const RunForecast& f) {
  os_ << start_line_ << "\n";
  os_ << "predicted duration: about " << human_duration(f.predicted_s) << " (from each case's cost; the estimate "
      << "of time left is calibrated by the cases done as the run goes)\n";
  if (f.plan.is_object() && f.plan.contains("budget_s")) {
    const json& b = f.plan;
    os_ << "budget " << human_duration(b["budget_s"].get<double>()) << ": ";
    if (b["sample_scale"].get<double>() < 1)
      os_ << "sampling shortened to " << fmt(100 * b["sample_scale"].get<double>(), 0) << "% (at most "
          << fmt(b["max_time_s"].get<double>(), 2) << " s a case)";
    else
      os_ << "sampling as usual";
    const size_t left = b["left_out"].size();
    if (left > 0) {
      os_ << "; " << left << " case(s) left out (" << human_duration(b["left_out_predicted_s"].get<double>())
          << " predicted):";
      size_t shown = 0;
      for (const auto& id : b["left_out"]) {
        if (shown++ == 8) {
          os_ << " ... (all in the result's plan.left_out)";
          break;
        }
        os_ << " " << id.get<std::string>();
      }
    }
    if (!b["fits"].get<bool>()) os_ << "; even so predicted over the budget";
    os_ << "\n";
  }
  os_ << std::flush;
}

void ConsoleProgress::recorded(const RunDocument&, const json& rec, const Progress& p) {
  if (quiet_) return;
  std::string where = (rec["gpus"].size() > 1 ? " gpus " : " gpu") + gpu_list(rec["gpus"]);
  if (rec.contains("rank")) where = " rank" + std::to_string(rec["rank"].get<int>()) + where;
  // A step with several records (parts) took its time as a whole: the first shows the step's.
  const double secs = p.first_of_step ? std::max(p.step_s, rec.value("duration_s", 0.0)) : rec.value("duration_s", 0.0);
  std::ostringstream line;
  line << "[" << std::setw(int(std::to_string(p.total).size())) << p.done << "/" << p.total << " "
       << human_duration(p.elapsed_s) << ", ~" << (p.left_s ? human_duration(*p.left_s) : std::string("?"))
       << " left] " << std::left << std::setw(52) << rec["id"].get<std::string>() << where << "  " << std::setw(8)
       << rec["status"].get<std::string>() << headline(rec) << "  (" << fmt(secs, 2) << " s"
       << (p.first_of_step ? "" : " of the step above") << ")";
  if (tty_) os_ << "\r\033[K";
  os_ << line.str() << (tty_ && p.done < p.total ? "" : "\n") << std::flush;
  if (tty_ && rec["status"] != "ok") os_ << "\n";  // keep failures and skips on screen
}

void ConsoleSummary::finished(const RunDocument& doc) { print_summary(doc.doc(), os_); }

}  // namespace nb
