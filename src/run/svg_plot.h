// Training-curve plot as a self-contained SVG file, written by hand (no plotting dependency). Two
// stacked panels sharing the step axis:
//   top:    training loss, raw as a light line and a centred moving average bold (the y range ignores
//           the outer 0.5% of values so one spike does not flatten the curve; it is clipped);
//   bottom: dev accuracy, a line with markers; in percent when every value is in [0, 1].
// Non-finite values are skipped; an empty series shows "no data", one point a marker, a constant
// series a small range around it. Long series thin to a min/max envelope per pixel column.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace smezo {

using PlotSeries = std::vector<std::pair<double, double>>;  // (step, value)

struct TrainingPlotOptions {
  int width = 900;        // pixels
  int height = 640;
  int smooth_window = 0;  // moving-average window in points; 0: about n/30 (odd, >= 5)
  std::string dev_label = "dev accuracy";  // the bottom panel's quantity ("dev F1": generation tasks)
};

std::string training_plot_svg(const std::string& title, const PlotSeries& loss,
                              const PlotSeries& dev_acc, const TrainingPlotOptions& opt = {});

// Writes training_plot_svg(...) to `path` atomically.
void write_training_plot_svg(const std::string& path, const std::string& title,
                             const PlotSeries& loss, const PlotSeries& dev_acc,
                             const TrainingPlotOptions& opt = {});

// "Nice" ticks over [lo, hi], about `target` intervals of 1, 2 or 5 x 10^k; *axis_lo/hi: first/last.
std::vector<double> svg_nice_ticks(double lo, double hi, int target, bool integer,
                                   double* axis_lo, double* axis_hi);

}  // namespace smezo
