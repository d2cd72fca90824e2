// Implementation of the hand-written SVG training plot (see svg_plot.h).
#include "run/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/check.h"
#include "run/summary.h"

namespace smezo {

namespace {

// --- colours and fonts
const char* const kFont = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\"";
const char* const kRawLoss = "#a6c8e6";
const char* const kSmoothLoss = "#1f5fa8";
const char* const kAcc = "#d1495b";
const char* const kGrid = "#e6e6e6";
const char* const kAxis = "#444444";
const char* const kText = "#333333";

struct Rect {
  double x, y, w, h;
};

struct Axis {
  double lo = 0, hi = 1;
  std::vector<double> ticks;
  double step = 1;
};

std::string fmt(double v) {
  std::string s = format_string("%.1f", v);
  if (s == "-0.0") s = "0.0";
  return s;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t') out += c;
    }
  }
  return out;
}

PlotSeries finite_sorted(const PlotSeries& in) {
  PlotSeries out;
  out.reserve(in.size());
  for (const auto& p : in)
    if (std::isfinite(p.first) && std::isfinite(p.second)) out.push_back(p);
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

// The 1, 2 or 5 x 10^k nearest to x.
double nice_number(double x) {
  double e = std::floor(std::log10(x));
  double f = x / std::pow(10.0, e);
  double nf = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
  return nf * std::pow(10.0, e);
}

// Digits after the point needed to print multiples of `step` exactly.
int decimals_for(double step) {
  for (int d = 0; d < 10; ++d) {
    double scaled = step * std::pow(10.0, d);
    if (std::fabs(scaled - std::round(scaled)) < 1e-6 * scaled) return d;
  }
  return 10;
}

std::string tick_label(double v, double step, double scale, bool step_axis) {
  v *= scale;
  step *= scale;
  if (std::fabs(v) < step * 1e-9) v = 0;
  if (step_axis && step >= 1000 && std::fmod(step, 1000.0) == 0 && v != 0)
    return format_string("%.0fk", v / 1000);
  double a = std::fabs(v);
  if (a != 0 && (a >= 1e6 || step < 1e-4)) return format_string("%.3g", v);
  return format_string("%.*f", decimals_for(step), v);
}

Axis make_axis(double lo, double hi, int target, bool integer) {
  Axis a;
  a.ticks = svg_nice_ticks(lo, hi, target, integer, &a.lo, &a.hi);
  a.step = a.ticks.size() > 1 ? a.ticks[1] - a.ticks[0] : 1;
  return a;
}

double map_x(const Axis& ax, const Rect& r, double x) {
  return r.x + (x - ax.lo) / (ax.hi - ax.lo) * r.w;
}
double map_y(const Axis& ay, const Rect& r, double y) {
  return r.y + r.h - (y - ay.lo) / (ay.hi - ay.lo) * r.h;
}

// Centred moving average over `w` points; near the ends the window is cut to the points that exist.
std::vector<double> moving_average(const PlotSeries& s, int w) {
  int64_t n = static_cast<int64_t>(s.size());
  std::vector<double> prefix(static_cast<size_t>(n) + 1, 0.0), out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + s[i].second;
  int64_t half = w / 2;
  for (int64_t i = 0; i < n; ++i) {
    int64_t a = std::max<int64_t>(0, i - half), b = std::min<int64_t>(n, i + half + 1);
    out[i] = (prefix[b] - prefix[a]) / static_cast<double>(b - a);
  }
  return out;
}

// Pixel points of a series, thinned to min/max per pixel column when there are many.
std::vector<std::pair<double, double>> to_pixels(const PlotSeries& s, const Axis& ax,
                                                 const Axis& ay, const Rect& r) {
  std::vector<std::pair<double, double>> px;
  bool thin = s.size() > static_cast<size_t>(2 * r.w);
  size_t i = 0;
  while (i < s.size()) {
    double x = map_x(ax, r, s[i].first);
    if (!thin) {
      px.push_back({x, map_y(ay, r, s[i].second)});
      ++i;
      continue;
    }
    long col = std::lround(x);
    size_t j = i, imin = i, imax = i;
    while (j < s.size() && std::lround(map_x(ax, r, s[j].first)) == col) {
      if (s[j].second < s[imin].second) imin = j;
      if (s[j].second > s[imax].second) imax = j;
      ++j;
    }
    size_t first = std::min(imin, imax), second = std::max(imin, imax);
    px.push_back({x, map_y(ay, r, s[first].second)});
    if (second != first) px.push_back({x, map_y(ay, r, s[second].second)});
    i = j;
  }
  return px;
}

void polyline(std::string* svg, const std::vector<std::pair<double, double>>& px,
              const char* colour, double width, const std::string& clip) {
  if (px.size() < 2) return;
  *svg += "<polyline fill=\"none\" stroke=\"" + std::string(colour) + "\" stroke-width=\"" +
          format_string("%.1f", width) +
          "\" stroke-linejoin=\"round\" stroke-linecap=\"round\" clip-path=\"url(#" + clip +
          ")\" points=\"";
  for (size_t i = 0; i < px.size(); ++i) {
    if (i) *svg += ' ';
    *svg += fmt(px[i].first) + "," + fmt(px[i].second);
  }
  *svg += "\"/>\n";
}

void marker(std::string* svg, double x, double y, double r, const char* colour) {
  *svg += "<circle cx=\"" + fmt(x) + "\" cy=\"" + fmt(y) + "\" r=\"" + format_string("%.1f", r) +
          "\" fill=\"#ffffff\" stroke=\"" + colour + "\" stroke-width=\"1.8\"/>\n";
}

void text(std::string* svg, double x, double y, const std::string& s, const char* anchor,
          int size, const char* extra = "") {
  *svg += format_string(
              "<text x=\"%s\" y=\"%s\" text-anchor=\"%s\" font-size=\"%d\" fill=\"%s\"%s>",
              fmt(x).c_str(), fmt(y).c_str(), anchor, size, kText, extra) +
          xml_escape(s) + "</text>\n";
}

// Frame, grid, ticks, tick labels, the y-axis label and a clip path named `clip`.
void draw_axes(std::string* svg, const Rect& r, const Axis& ax, const Axis& ay, double y_scale,
               const std::string& y_label, const std::string& clip, bool x_label) {
  *svg += "<clipPath id=\"" + clip + "\"><rect x=\"" + fmt(r.x) + "\" y=\"" + fmt(r.y) +
          "\" width=\"" + fmt(r.w) + "\" height=\"" + fmt(r.h) + "\"/></clipPath>\n";
  *svg += "<g stroke=\"" + std::string(kGrid) + "\" stroke-width=\"1\">\n";
  for (double t : ax.ticks) {
    double x = map_x(ax, r, t);
    *svg += "<line x1=\"" + fmt(x) + "\" y1=\"" + fmt(r.y) + "\" x2=\"" + fmt(x) + "\" y2=\"" +
            fmt(r.y + r.h) + "\"/>\n";
  }
  for (double t : ay.ticks) {
    double y = map_y(ay, r, t);
    *svg += "<line x1=\"" + fmt(r.x) + "\" y1=\"" + fmt(y) + "\" x2=\"" + fmt(r.x + r.w) +
            "\" y2=\"" + fmt(y) + "\"/>\n";
  }
  *svg += "</g>\n";
  *svg += "<rect x=\"" + fmt(r.x) + "\" y=\"" + fmt(r.y) + "\" width=\"" + fmt(r.w) +
          "\" height=\"" + fmt(r.h) + "\" fill=\"none\" stroke=\"" + kAxis + "\"/>\n";
  *svg += "<g stroke=\"" + std::string(kAxis) + "\" stroke-width=\"1\">\n";
  for (double t : ax.ticks) {
    double x = map_x(ax, r, t);
    *svg += "<line x1=\"" + fmt(x) + "\" y1=\"" + fmt(r.y + r.h) + "\" x2=\"" + fmt(x) +
            "\" y2=\"" + fmt(r.y + r.h + 5) + "\"/>\n";
  }
  for (double t : ay.ticks) {
    double y = map_y(ay, r, t);
    *svg += "<line x1=\"" + fmt(r.x - 5) + "\" y1=\"" + fmt(y) + "\" x2=\"" + fmt(r.x) +
            "\" y2=\"" + fmt(y) + "\"/>\n";
  }
  *svg += "</g>\n";
  for (double t : ax.ticks)
    text(svg, map_x(ax, r, t), r.y + r.h + 19, tick_label(t, ax.step, 1, true), "middle", 12);
  for (double t : ay.ticks)
    text(svg, r.x - 9, map_y(ay, r, t) + 4, tick_label(t, ay.step, y_scale, false), "end", 12);
  double ly = r.y + r.h / 2;
  text(svg, r.x - 58, ly, y_label, "middle", 13,
       format_string(" transform=\"rotate(-90 %s %s)\"", fmt(r.x - 58).c_str(), fmt(ly).c_str())
           .c_str());
  if (x_label) text(svg, r.x + r.w / 2, r.y + r.h + 40, "step", "middle", 13);
}

struct LegendEntry {
  std::string label;
  const char* colour;
  double width;
  bool with_marker;
};

// A one-row legend right-aligned above the panel frame, so it never covers data.
void legend(std::string* svg, const Rect& r, const std::vector<LegendEntry>& entries) {
  const double char_w = 6.9, sample_w = 26, pad = 8, spacing = 22;
  double total = 0;
  for (const auto& e : entries)
    total += sample_w + pad + char_w * static_cast<double>(e.label.size()) + spacing;
  double x = r.x + r.w - total + spacing, cy = r.y - 11;
  for (const LegendEntry& e : entries) {
    *svg += "<line x1=\"" + fmt(x) + "\" y1=\"" + fmt(cy) + "\" x2=\"" + fmt(x + sample_w) +
            "\" y2=\"" + fmt(cy) + "\" stroke=\"" + e.colour + "\" stroke-width=\"" +
            format_string("%.1f", e.width) + "\" stroke-linecap=\"round\"/>\n";
    if (e.with_marker) marker(svg, x + sample_w / 2, cy, 3, e.colour);
    text(svg, x + sample_w + pad, cy + 4, e.label, "start", 12);
    x += sample_w + pad + char_w * static_cast<double>(e.label.size()) + spacing;
  }
}

void no_data(std::string* svg, const Rect& r, const std::string& what) {
  text(svg, r.x + r.w / 2, r.y + r.h / 2 + 5, "no " + what + " data", "middle", 14,
       " font-style=\"italic\" fill-opacity=\"0.6\"");
}

// Value at quantile q of the finite values (0 <= q <= 1).
double quantile(std::vector<double> v, double q) {
  size_t k = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

// The loss panel's y axis: the raw loss's 0.5 % to 99.5 % quantiles and the whole smoothed curve.
Axis loss_axis(const PlotSeries& loss, const std::vector<double>& smooth) {
  if (loss.empty()) return make_axis(0, 1, 5, false);
  std::vector<double> v;
  for (const auto& p : loss) v.push_back(p.second);
  double lo = quantile(v, 0.005), hi = quantile(v, 0.995);
  for (double s : smooth) lo = std::min(lo, s), hi = std::max(hi, s);
  return make_axis(lo, hi, 6, false);
}

// The accuracy panel's y axis: the range padded by 8 % (a percent axis kept inside 0..100 %).
Axis accuracy_axis(const PlotSeries& acc, bool percent) {
  if (acc.empty()) return make_axis(0, 1, 4, false);
  double lo = acc[0].second, hi = lo;
  for (const auto& p : acc) lo = std::min(lo, p.second), hi = std::max(hi, p.second);
  double pad = (hi - lo) * 0.08;
  lo -= pad;
  hi += pad;
  if (percent) {
    if (hi - lo < 0.02) lo -= 0.01, hi += 0.01;
    if (lo < 0) hi = std::min(1.0, hi - lo), lo = 0;
    if (hi > 1) lo = std::max(0.0, lo - (hi - 1)), hi = 1;
  }
  return make_axis(lo, hi, 4, false);
}

// The one-line summary under the title: steps logged, final smoothed loss, best accuracy.
std::string plot_summary(const PlotSeries& loss, const std::vector<double>& smooth, const PlotSeries& acc,
                         bool percent, const std::string& dev_label) {
  std::string sub;
  if (!loss.empty())
    sub += format_string("%zu step%s logged, final smoothed loss %.4g", loss.size(),
                         loss.size() == 1 ? "" : "s", smooth.back());
  if (acc.empty()) return sub;
  size_t best = 0;
  for (size_t i = 1; i < acc.size(); ++i)
    if (acc[i].second > acc[best].second) best = i;
  if (!sub.empty()) sub += "  \xC2\xB7  ";
  sub += percent ? format_string("best %s %.1f%%", dev_label.c_str(), 100 * acc[best].second)
                 : format_string("best %s %.4g", dev_label.c_str(), acc[best].second);
  return sub + format_string(" at step %.0f", acc[best].first);
}

}  // namespace

std::vector<double> svg_nice_ticks(double lo, double hi, int target, bool integer,
                                   double* axis_lo, double* axis_hi) {
  SMEZO_REQUIRE(std::isfinite(lo) && std::isfinite(hi), "svg_nice_ticks: non-finite range");
  if (lo > hi) std::swap(lo, hi);
  if (hi - lo <= std::max(std::fabs(lo), std::fabs(hi)) * 1e-12) {
    double pad = lo == 0 ? 1 : std::max(std::fabs(lo) * 0.05, integer ? 1.0 : 0.0);
    lo -= pad;
    hi += pad;
  }
  if (target < 2) target = 2;
  double d = nice_number((hi - lo) / target);
  if (integer) d = std::max(d, 1.0);
  double first = std::floor(lo / d + 1e-9) * d, last = std::ceil(hi / d - 1e-9) * d;
  std::vector<double> ticks;
  int64_t n = std::llround((last - first) / d);
  for (int64_t i = 0; i <= n; ++i) {
    double t = first + static_cast<double>(i) * d;
    if (std::fabs(t) < d * 1e-9) t = 0;
    ticks.push_back(t);
  }
  *axis_lo = first;
  *axis_hi = last;
  return ticks;
}

std::string training_plot_svg(const std::string& title, const PlotSeries& loss_in,
                              const PlotSeries& acc_in, const TrainingPlotOptions& opt) {
  PlotSeries loss = finite_sorted(loss_in), acc = finite_sorted(acc_in);
  const double W = std::max(opt.width, 400), H = std::max(opt.height, 300);

  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
  for (const PlotSeries* s : {&loss, &acc})
    for (const auto& p : *s) x_lo = std::min(x_lo, p.first), x_hi = std::max(x_hi, p.first);
  if (x_lo > x_hi) x_lo = 0, x_hi = 1;
  if (x_lo > 0 && x_lo <= 0.2 * x_hi) x_lo = 0;  // steps from 1: start the axis at 0
  Axis ax = make_axis(x_lo, x_hi, 8, true);

  const double left = 84, right = 24, top = 92, gap = 70, bottom = 58;
  double plot_h = H - top - gap - bottom;
  Rect r_loss{left, top, W - left - right, plot_h * 0.6};
  Rect r_acc{left, top + r_loss.h + gap, W - left - right, plot_h * 0.4};

  // Loss: smoothed curve and a robust y range.
  int w = opt.smooth_window;
  if (w <= 0) w = loss.size() < 10 ? 1 : std::max(5, static_cast<int>(loss.size() / 30) | 1);
  std::vector<double> smooth = moving_average(loss, w);
  PlotSeries loss_smooth(loss.size());
  for (size_t i = 0; i < loss.size(); ++i) loss_smooth[i] = {loss[i].first, smooth[i]};
  const Axis ay_loss = loss_axis(loss, smooth);

  // Accuracy: percent when every value is a fraction.
  bool percent = true;
  for (const auto& p : acc) percent = percent && p.second >= 0 && p.second <= 1;
  const Axis ay_acc = accuracy_axis(acc, percent);

  std::string svg;
  svg += format_string(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
      "%s>\n",
      static_cast<int>(W), static_cast<int>(H), static_cast<int>(W), static_cast<int>(H), kFont);
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  text(&svg, left, 32, title, "start", 18, " font-weight=\"bold\"");

  const std::string sub = plot_summary(loss, smooth, acc, percent, opt.dev_label);
  if (!sub.empty()) text(&svg, left, 54, sub, "start", 12, " fill-opacity=\"0.75\"");

  // --- loss panel
  draw_axes(&svg, r_loss, ax, ay_loss, 1, "training loss", "clip_loss", false);
  if (loss.empty()) {
    no_data(&svg, r_loss, "loss");
  } else if (loss.size() == 1) {
    marker(&svg, map_x(ax, r_loss, loss[0].first), map_y(ay_loss, r_loss, loss[0].second), 3.5,
           kSmoothLoss);
  } else {
    polyline(&svg, to_pixels(loss, ax, ay_loss, r_loss), kRawLoss, 1.0, "clip_loss");
    polyline(&svg, to_pixels(loss_smooth, ax, ay_loss, r_loss), kSmoothLoss, 2.4, "clip_loss");
  }
  if (!loss.empty()) {
    std::vector<LegendEntry> le;
    if (loss.size() > 1) le.push_back({"raw", kRawLoss, 1.5, false});
    le.push_back({loss.size() > 1 ? format_string("smoothed (moving average of %d)", w) : "loss",
                  kSmoothLoss, 2.4, loss.size() == 1});
    legend(&svg, r_loss, le);
  }

  // --- accuracy panel
  draw_axes(&svg, r_acc, ax, ay_acc, percent ? 100 : 1,
            percent ? opt.dev_label + " (%)" : opt.dev_label, "clip_acc", true);
  if (acc.empty()) {
    no_data(&svg, r_acc, opt.dev_label);
  } else {
    std::vector<std::pair<double, double>> px;
    for (const auto& p : acc)
      px.push_back({map_x(ax, r_acc, p.first), map_y(ay_acc, r_acc, p.second)});
    polyline(&svg, px, kAcc, 1.8, "clip_acc");
    double mr = acc.size() <= 60 ? 3.2 : acc.size() <= 200 ? 2.2 : 0;
    if (acc.size() == 1) mr = 3.5;
    for (const auto& p : px)
      if (mr > 0) marker(&svg, p.first, p.second, mr, kAcc);
    legend(&svg, r_acc, {{opt.dev_label, kAcc, 1.8, mr > 0}});
  }
  svg += "</svg>\n";
  return svg;
}

void write_training_plot_svg(const std::string& path, const std::string& title,
                             const PlotSeries& loss, const PlotSeries& dev_acc,
                             const TrainingPlotOptions& opt) {
  run_write_file_atomic(path, training_plot_svg(title, loss, dev_acc, opt));
}

}  // namespace smezo
