#include "tools/cli/html_report.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <sstream>

#include "common/error.hpp"
#include "common/file_io.hpp"
#include "tools/cli/report.hpp"

namespace sixfold::cli {

namespace {

constexpr int kWidth = 960;         // every chart's width in px
constexpr int kLabel = 190;         // left margin for row labels
constexpr size_t kMaxRects = 20000;  // a timeline draws at most this many tasks (the page stays light)

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// A memory size in the unit that shows it: GiB from 1 GiB up, MiB below.
std::string gib(Bytes b) {
  char buf[32];
  if (b >= kGiB || b == 0) std::snprintf(buf, sizeof buf, "%.2f GiB", b / kGiB);
  else std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1024.0 * 1024.0));
  return buf;
}

// A fixed colour per name, so that a component keeps its colour across charts.
const std::string& colour(const std::string& name) {
  static const std::vector<std::string> palette = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
                                                   "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#8c564b",
                                                   "#17becf", "#bcbd22"};
  static std::map<std::string, size_t> assigned;
  auto it = assigned.find(name);
  if (it == assigned.end()) it = assigned.emplace(name, assigned.size() % palette.size()).first;
  return palette[it->second];
}

void rect(std::ostream& o, double x, double y, double w, double h, const std::string& fill, const std::string& tip,
          const char* cls = "bar") {
  o << "<rect class=\"" << cls << "\" x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\"" << num(std::max(w, 0.5))
    << "\" height=\"" << num(h) << "\" fill=\"" << fill << "\"><title>" << escape(tip) << "</title></rect>";
}

void text(std::ostream& o, double x, double y, const std::string& s, const char* anchor = "start") {
  o << "<text x=\"" << num(x) << "\" y=\"" << num(y) << "\" text-anchor=\"" << anchor << "\">" << escape(s) << "</text>";
}

void open_svg(std::ostream& o, const char* id, int height, const std::string& label) {
  o << "<svg id=\"" << id << "\" class=\"chart\" role=\"img\" aria-label=\"" << escape(label) << "\" width=\"" << kWidth
    << "\" height=\"" << height << "\" viewBox=\"0 0 " << kWidth << " " << height << "\">";
}

// Horizontal bars, one per (label, value), scaled to the largest; coloured by label unless `fill`.
void bar_rows(std::ostream& o, const char* id, const std::string& label,
              const std::vector<std::pair<std::string, double>>& rows, const std::string& unit,
              const std::string& fill = "") {
  const int row = 22, height = int(rows.size()) * row + 20;
  double top = 0;
  for (const auto& r : rows) top = std::max(top, r.second);
  if (top <= 0) top = 1;
  const double plot = kWidth - kLabel - 120;
  open_svg(o, id, height, label);
  for (size_t i = 0; i < rows.size(); ++i) {
    const double y = 10 + double(i) * row;
    const std::string value = num(rows[i].second) + " " + unit;
    text(o, kLabel - 6, y + 14, rows[i].first, "end");
    rect(o, kLabel, y + 2, plot * rows[i].second / top, row - 6, fill.empty() ? colour(rows[i].first) : fill,
         rows[i].first + ": " + value);
    text(o, kLabel + plot * rows[i].second / top + 6, y + 14, value);
  }
  o << "</svg>\n";
}

std::vector<std::pair<std::string, Bytes>> memory_parts(const MemoryBreakdown& m) {
  std::vector<std::pair<std::string, Bytes>> parts;
  for (const auto& [name, b] : m.components())
    if (b > 0) parts.emplace_back(name, b);
  return parts;
}

void memory_legend(std::ostream& o, const MemoryBreakdown& m) {
  o << "<p class=\"legend\">";
  for (const auto& [name, b] : memory_parts(m))
    o << "<span><i style=\"background:" << colour(name) << "\"></i>" << escape(name) << " " << gib(b) << "</span> ";
  o << "</p>\n";
}

// The peak stage's memory as one bar stacked by component, against the budget.
void memory_components(std::ostream& o, const MemoryBreakdown& m, Bytes budget, const std::string& budget_label) {
  const int height = 70;
  const double top = std::max({budget, m.total(), Bytes(1)}) / kGiB, plot = kWidth - 40;
  open_svg(o, "memory-components", height, "memory per component of the peak stage against the budget");
  double x = 20;
  for (const auto& [name, b] : memory_parts(m)) {
    const double w = plot * (b / kGiB) / top;
    rect(o, x, 10, w, 30, colour(name), name + ": " + gib(b));
    x += w;
  }
  text(o, 20, 58, "total " + gib(m.total()));
  if (budget > 0) {
    const double bx = 20 + plot * (budget / kGiB) / top;
    o << "<line class=\"limit\" x1=\"" << num(bx) << "\" y1=\"4\" x2=\"" << num(bx) << "\" y2=\"46\"/>";
    text(o, bx, 62, budget_label + " " + gib(budget), "end");
  }
  o << "</svg>\n";
}

// One stacked bar per pipeline stage, the budget as a dashed line across.
void memory_by_stage(std::ostream& o, const Prediction& p, Bytes budget, const std::string& budget_label) {
  const int height = 260, base = 220, left = 60;
  double top = budget / kGiB;
  for (const MemoryBreakdown& m : p.stage_memory) top = std::max(top, m.total() / kGiB);
  if (top <= 0) top = 1;
  const size_t n = std::max<size_t>(1, p.stage_memory.size());
  const double slot = double(kWidth - left - 20) / double(n), bar = std::min(60.0, slot * 0.8);
  open_svg(o, "memory-stages", height, "memory per pipeline stage against the budget");
  for (size_t s = 0; s < p.stage_memory.size(); ++s) {
    double y = base;
    const double x = left + double(s) * slot + (slot - bar) / 2;
    for (const auto& [name, b] : memory_parts(p.stage_memory[s])) {
      const double h = 200.0 * (b / kGiB) / top;
      y -= h;
      rect(o, x, y, bar, h, colour(name), "stage " + std::to_string(s) + " " + name + ": " + gib(b));
    }
    if (n <= 32 || s % (n / 16) == 0) text(o, x + bar / 2, base + 16, std::to_string(s), "middle");
  }
  const double by = base - 200.0 * (budget / kGiB) / top;
  o << "<line class=\"limit\" x1=\"" << left - 10 << "\" y1=\"" << num(by) << "\" x2=\"" << kWidth - 10 << "\" y2=\""
    << num(by) << "\"/>";
  text(o, left - 12, by + 4, num(budget / kGiB), "end");
  text(o, kWidth - 10, by - 4, budget_label, "end");
  text(o, left - 12, base + 4, "0", "end");
  text(o, kWidth / 2.0, base + 34, "pipeline stage (GiB per GPU)", "middle");
  o << "</svg>\n";
}

// TaskKind in its order: what a timeline task is called and coloured by.
constexpr const char* kTaskKinds[] = {"forward", "backward", "weight grad", "send activation", "send gradient",
                                      "grad reduce", "param gather", "optimizer"};

std::string task_label(const Task& t) {
  return std::string(kTaskKinds[int(t.kind)]) + " chunk " + std::to_string(t.chunk) + " mb " + std::to_string(t.micro_batch);
}

// Rows: each (stage, stream) with tasks; x: time over the step. A row draws at most `per_row`
// rects: tasks that would come out narrower than the width that leaves are drawn together, in the
// colour of the kind that takes most of their time (the tooltip says how many of each): a
// 64-stage, 512-micro-batch step has 10^5 tasks, far more than a page can hold.
void simulated_timeline(std::ostream& o, const SimulationResult& r) {
  std::map<std::pair<int, int>, std::vector<const Task*>> rows;
  for (const Task& t : r.tasks)
    if (t.end > t.start) rows[{t.rank, int(t.stream)}].push_back(&t);
  const int row = 16, height = int(rows.size()) * row + 40;
  const double plot = kWidth - kLabel - 20, scale = r.step_time > 0 ? plot / r.step_time : 0;
  const size_t per_row = std::max<size_t>(50, kMaxRects / std::max<size_t>(1, rows.size()));
  const Seconds min_width = scale > 0 ? std::max(1.0, plot / double(per_row)) / scale : 0;
  open_svg(o, "timeline", height, "simulated timeline of one step");
  int index = 0;
  size_t merged = 0;
  for (auto& [key, tasks] : rows) {
    const double y = 12 + index++ * row;
    text(o, kLabel - 6, y + 11, "stage " + std::to_string(key.first) + " " + to_string(Stream(key.second)), "end");
    std::sort(tasks.begin(), tasks.end(), [](const Task* a, const Task* b) { return a->start < b->start; });
    for (size_t k = 0; k < tasks.size();) {
      const Seconds start = tasks[k]->start;
      Seconds end = tasks[k]->end;
      std::array<Seconds, std::size(kTaskKinds)> by_kind{};
      std::array<int, std::size(kTaskKinds)> count{};
      size_t n = 0;
      do {
        const Task& t = *tasks[k + n++];
        end = std::max(end, t.end);
        by_kind[size_t(t.kind)] += t.end - t.start;
        ++count[size_t(t.kind)];
      } while (k + n < tasks.size() && end - start < min_width);
      const size_t main = size_t(std::max_element(by_kind.begin(), by_kind.end()) - by_kind.begin());
      std::string tip;
      if (n == 1) {
        tip = task_label(*tasks[k]);
      } else {
        merged += n;
        for (size_t c = 0; c < count.size(); ++c)
          if (count[c] > 0) tip += (tip.empty() ? "" : ", ") + std::to_string(count[c]) + " " + kTaskKinds[c];
      }
      k += n;
      rect(o, kLabel + start * scale, y, (end - start) * scale, row - 3, colour(kTaskKinds[main]),
           tip + ": " + format_seconds(start) + " to " + format_seconds(end), "task");
    }
  }
  text(o, kLabel, height - 8, "0");
  text(o, kWidth - 20, height - 8, format_seconds(r.step_time), "end");
  o << "</svg>\n";
  if (merged > 0)
    o << "<p class=\"note\">" << merged << " of " << r.tasks.size()
      << " tasks are drawn a few together (too narrow to show one by one); <code>sixfold simulate --trace</code> "
         "writes each for Perfetto.</p>\n";
  o << "<p class=\"legend\">";
  for (const char* kind : kTaskKinds) o << "<span><i style=\"background:" << colour(kind) << "\"></i>" << kind << "</span> ";
  o << "</p>\n";
}

void measured_timeline(std::ostream& o, const std::vector<ReportOpEvent>& events) {
  if (events.empty()) return;
  int depth = 0;
  Seconds t0 = events.front().start, t1 = 0;
  for (const auto& e : events) {
    depth = std::max(depth, e.depth);
    t0 = std::min(t0, e.start);
    t1 = std::max(t1, e.end);
  }
  const int row = 18, height = (depth + 1) * row + 40;
  const double plot = kWidth - kLabel - 20, scale = t1 > t0 ? plot / (t1 - t0) : 0;
  open_svg(o, "measured-timeline", height, "measured op timeline of one step on rank 0");
  for (int d = 0; d <= depth; ++d) text(o, kLabel - 6, 12 + d * row + 12, d == 0 ? "ops" : "nested ops", "end");
  size_t drawn = 0;
  for (const auto& e : events) {
    if (++drawn > kMaxRects) break;
    rect(o, kLabel + (e.start - t0) * scale, 12 + e.depth * row, (e.end - e.start) * scale, row - 3, colour(e.name),
         e.name + ": " + format_seconds(e.end - e.start), "task");
  }
  text(o, kLabel, height - 8, "0");
  text(o, kWidth - 20, height - 8, format_seconds(t1 - t0), "end");
  o << "</svg>\n";
}

// Predicted and measured seconds per op class, side by side.
void op_class_chart(std::ostream& o, const ReportMeasured& m) {
  std::map<std::string, std::pair<double, double>> by;  // class -> (predicted, measured) ms
  for (const auto& [c, s] : m.measured_by_class) by[c].second = s * 1e3;
  for (const auto& [c, s] : m.predicted_by_class) by[c].first = s * 1e3;
  const int row = 30, height = int(by.size()) * row + 30;
  double top = 0;
  for (const auto& [c, v] : by) top = std::max({top, v.first, v.second});
  if (top <= 0) top = 1;
  const double plot = kWidth - kLabel - 280;
  open_svg(o, "op-classes", height, "predicted against measured time per op class");
  int i = 0;
  for (const auto& [c, v] : by) {
    const double y = 10 + i++ * row;
    text(o, kLabel - 6, y + 16, c, "end");
    rect(o, kLabel, y + 2, plot * v.first / top, 11, "#bab0ac", c + " predicted: " + num(v.first) + " ms");
    rect(o, kLabel, y + 14, plot * v.second / top, 11, colour(c), c + " measured: " + num(v.second) + " ms");
    text(o, kLabel + plot * std::max(v.first, v.second) / top + 6, y + 18,
         (m.predicted_by_class.empty() ? std::string() : "predicted " + num(v.first) + " ms, ") + "measured " +
             num(v.second) + " ms");
  }
  o << "</svg>\n";
}

}  // namespace

ReportInput report_input(const std::string& command, const Scenario& s, const Prediction& p) {
  ReportInput in;
  in.command = command;
  in.header = scenario_header(s);
  in.layout = layout_line(s.layout);
  in.budget = s.hardware.memory_capacity;
  in.budget_label = "GPU memory";
  in.prediction = &p;
  return in;
}

std::string html_report(const ReportInput& in) {
  if (!in.prediction) throw Error("html_report: no prediction to show");
  const Prediction& p = *in.prediction;
  // Colours are handed out in first-use order: name the timeline kinds, the memory and the time
  // components first, in a fixed order, so that every page gives each the same colour.
  for (const char* kind : kTaskKinds) colour(kind);
  for (const auto& [name, bytes] : MemoryBreakdown{}.components()) colour(name);
  for (const auto& [name, seconds] : TimeBreakdown{}.components()) colour(name);
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>sixfold " << escape(in.command) << ": "
    << escape(in.layout) << "</title>\n<style>\n"
    << "body{font:14px/1.4 system-ui,sans-serif;margin:24px;max-width:1000px;color:#222}"
       "h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ddd}"
       "svg.chart text{font-size:12px;fill:#333}line.limit{stroke:#c00;stroke-dasharray:5 3;stroke-width:1.5}"
       ".legend span{margin-right:12px;white-space:nowrap}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}"
       "table{border-collapse:collapse}td,th{padding:2px 10px;text-align:right}td:first-child,th:first-child{text-align:left}"
       "tr.best{font-weight:bold}.note{color:#666}\n</style></head><body>\n";
  o << "<h1>sixfold " << escape(in.command) << "</h1>\n<p>" << escape(in.header) << "<br>layout: <b>" << escape(in.layout)
    << "</b></p>\n";
  o << "<p id=\"headline\">step " << escape(format_seconds(p.step_time)) << ", " << num(p.tokens_per_s_per_gpu)
    << " tokens/s per GPU, " << num(p.tflops_model_per_gpu) << " model TFLOP/s per GPU (MFU " << num(100 * p.mfu)
    << "%), peak memory " << gib(p.peak_memory) << " (stage " << p.peak_stage << ") of " << gib(in.budget) << " "
    << escape(in.budget_label) << "</p>\n";

  o << "<h2>Memory per GPU, by component (stage " << p.peak_stage << ")</h2>\n";
  memory_components(o, p.memory, in.budget, in.budget_label);
  memory_legend(o, p.memory);
  o << "<h2>Memory per pipeline stage</h2>\n";
  memory_by_stage(o, p, in.budget, in.budget_label);

  o << "<h2>Step time by component</h2>\n";
  std::vector<std::pair<std::string, double>> times;
  for (const auto& [name, s] : p.time.components())
    if (s > 0) times.emplace_back(name, s * 1e3);
  bar_rows(o, "time-components", "step time by component", times, "ms");

  if (in.simulation && !in.simulation->tasks.empty()) {
    o << "<h2>Simulated timeline (" << escape(format_seconds(in.simulation->step_time)) << ")</h2>\n";
    simulated_timeline(o, *in.simulation);
  }
  if (in.measured) {
    const ReportMeasured& m = *in.measured;
    o << "<h2>Measured (" << escape(m.backend) << "): median step " << escape(format_seconds(m.step_time)) << "</h2>\n";
    std::vector<std::pair<std::string, double>> steps;
    for (size_t i = 0; i < m.step_times.size(); ++i) steps.emplace_back("step " + std::to_string(i + 1), m.step_times[i] * 1e3);
    bar_rows(o, "measured-steps", "measured time of every step", steps, "ms", "#59a14f");
    o << "<h2>Predicted against measured, per op class (per step)</h2>\n";
    if (m.predicted_by_class.empty())
      o << "<p class=\"note\">No prediction of the run's time: give <code>--cpu-profile</code> (a profile from "
           "<code>sixfold calibrate --backend cpu</code>) to compare.</p>\n";
    op_class_chart(o, m);
    o << "<h2>Measured op timeline (rank 0, last step)</h2>\n";
    measured_timeline(o, m.timeline);
    if (!m.memory_measured.empty()) {
      o << "<h2>Memory, measured against predicted (rank 0)</h2>\n<table id=\"measured-memory\"><tr><th>category</th>"
           "<th>measured</th><th>predicted</th></tr>\n";
      for (size_t i = 0; i < m.memory_measured.size(); ++i)
        o << "<tr><td>" << escape(m.memory_measured[i].first) << "</td><td>" << std::to_string(Count(m.memory_measured[i].second))
          << " B</td><td>" << (i < m.memory_predicted.size() ? std::to_string(Count(m.memory_predicted[i].second)) : "")
          << " B</td></tr>\n";
      o << "</table>\n";
    }
  }
  if (!in.ranked.empty()) {
    o << "<h2>Ranked layouts</h2>\n";
    std::vector<std::pair<std::string, double>> rows;
    for (size_t i = 0; i < std::min<size_t>(in.ranked.size(), 20); ++i)
      rows.emplace_back("#" + std::to_string(i + 1), in.ranked[i].step_time * 1e3);
    bar_rows(o, "ranked-layouts", "step time of the best layouts", rows, "ms", "#4e79a7");
    o << "<table id=\"ranked\"><tr><th>#</th><th>layout</th><th>step</th><th>peak memory</th><th>tokens/s/GPU</th></tr>\n";
    for (size_t i = 0; i < in.ranked.size(); ++i) {
      const ReportLayout& l = in.ranked[i];
      o << "<tr" << (i == 0 ? " class=\"best\"" : "") << "><td>" << i + 1 << "</td><td>" << escape(l.layout) << "</td><td>"
        << escape(format_seconds(l.step_time)) << "</td><td>" << gib(l.peak_memory) << "</td><td>"
        << num(l.tokens_per_s_per_gpu) << "</td></tr>\n";
    }
    o << "</table>\n";
    if (in.ranked_total > in.ranked.size())
      o << "<p class=\"note\">" << in.ranked_total - in.ranked.size() << " more layouts fit the budget; "
        << "<code>plan --json --top N</code> lists them.</p>\n";
  }
  o << "<p class=\"note\">Made by sixfold " << escape(in.command) << "; self-contained (no scripts, nothing fetched).</p>\n";
  o << "</body></html>\n";
  return o.str();
}

void write_html_report(const ReportInput& input, const std::string& path) {
  const auto dot = path.find_last_of('.');
  const std::string ext = dot == std::string::npos ? "" : path.substr(dot);
  if (ext != ".html" && ext != ".htm")
    throw UsageError("--report '" + path + "': the report is an HTML page; give a file name ending in .html");
  write_text_file(path, html_report(input));
}

}  // namespace sixfold::cli
