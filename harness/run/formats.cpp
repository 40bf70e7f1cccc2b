#include "run/formats.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace nb {

namespace {

std::vector<OutputFormat>& registry() {
  static std::vector<OutputFormat> all;
  return all;
}

}  // namespace

FormatRegistrar::FormatRegistrar(OutputFormat f) {
  for (const auto& g : registry()) {
    if (g.name == f.name) throw std::logic_error("output format '" + f.name + "' registered twice");
    if (!f.option.empty() && g.option == f.option)
      throw std::logic_error("option " + f.option + " of output format '" + f.name + "' is also '" + g.name + "'s");
  }
  registry().push_back(std::move(f));
}

std::vector<const OutputFormat*> output_formats() {
  std::vector<const OutputFormat*> out;
  for (const auto& f : registry()) out.push_back(&f);
  std::stable_sort(out.begin(), out.end(), [](const OutputFormat* a, const OutputFormat* b) {
    return a->order != b->order ? a->order < b->order : a->name < b->name;
  });
  return out;
}

std::vector<const OutputFormat*> output_formats(FormatCommand c, FormatStage stage) {
  std::vector<const OutputFormat*> out;
  for (const OutputFormat* f : output_formats())
    if (f->for_command(c) && f->stage == stage) out.push_back(f);
  return out;
}

const OutputFormat* find_output_format(const std::string& name) {
  for (const auto& f : registry())
    if (f.name == name) return &f;
  return nullptr;
}

std::string format_file(const RunOptions& o, const OutputFormat& f) {
  const auto it = o.format_files.find(f.name);
  return it == o.format_files.end() ? std::string() : it->second;
}

std::vector<Reporter*> MadeFormats::reporters() const {
  std::vector<Reporter*> out;
  for (const auto& m : made) out.push_back(m.reporter.get());
  return out;
}

MadeFormats make_formats(FormatCommand c, FormatStage stage, const FormatContext& base) {
  MadeFormats out;
  for (const OutputFormat* f : output_formats(c, stage)) {
    if (!f->make) continue;
    FormatContext ctx = base;
    ctx.command = c;
    if (!f->option.empty()) {
      ctx.file = ctx.options ? format_file(*ctx.options, *f) : std::string();
      if (ctx.file.empty()) continue;  // not asked for
    }
    if (auto r = f->make(ctx)) out.made.push_back({f, f->option.empty() ? std::string() : ctx.file, std::move(r)});
  }
  return out;
}

}  // namespace nb
