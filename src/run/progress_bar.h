// Training progress display: step/total, a bar, loss (smoothed and last), steps/s, ETA and the last
// dev accuracy with its step. On a TTY one line is redrawn with '\r' at most every redraw_interval_s
// (and at the last step), narrowed to the terminal width so it never wraps:
//   step  1200/20000 [#>                      ]   6.0% | loss 0.6931 (last 0.7012) |
//     12.3 steps/s | ETA 0:25:28 | dev acc 0.8120 (step 1000)          (one line on screen)
// Otherwise (CI, log files) a plain line without the bar, every plain_every steps and at the end:
//   step 1200/20000 6.0% | loss 0.6931 (last 0.7012) | 12.3 steps/s | ETA 0:25:28 | dev acc 0.8120 (step 1000)
// Steps/s averages the steps after start_step; the smoothed loss is a bias-corrected EMA (finite only).
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace smezo {

struct ProgressOptions {
  int64_t total_steps = 0;
  int64_t start_step = 0;           // steps already done before this bar (resume)
  std::string dev_label = "dev acc";  // what set_dev_accuracy's value is ("dev F1": generation tasks)
  FILE* out = stderr;
  int tty = -1;                     // -1: isatty(fileno(out)); 0: plain lines; 1: redraw
  int64_t plain_every = 100;        // plain mode: one line every N steps (and at the end)
  double redraw_interval_s = 0.2;   // TTY mode: at most ~5 redraws per second
  double loss_ema_beta = 0.95;      // smoothing of the displayed loss
  int bar_width = 24;
  int columns = 0;                  // TTY width; 0: ask the terminal (the line never wraps)
  std::function<double()> clock;    // monotonic seconds; default std::chrono::steady_clock
};

// "h:mm:ss" (hours grow past 99 as needed); "-:--:--" for a negative or non-finite value.
std::string progress_format_hms(double seconds);

class ProgressBar {
 public:
  explicit ProgressBar(const ProgressOptions& opt);
  ~ProgressBar();  // finish() if not done, so the terminal is never left mid-line
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Call after each step with the step just finished (start_step+1 .. total_steps).
  void update(int64_t step, double loss);
  // Last dev accuracy in [0, 1], measured after `step`; shown from the next drawn line on.
  void set_dev_accuracy(double accuracy, int64_t step);
  // Prints a line of text (e.g. an eval result) without tearing the TTY bar.
  void message(const std::string& text);
  // Draws the final line and ends it with '\n'. Idempotent.
  void finish();

  // The text of the current status line (no '\r', no '\n'), in the current mode.
  std::string status_line() const;
  double steps_per_second() const;  // 0 before any progress
  double eta_seconds() const;       // -1 when unknown
  double smoothed_loss() const;     // NaN before any finite loss

 private:
  void draw();
  std::string line_text(int bar_width) const;
  double now() const;

  ProgressOptions opt_;
  bool tty_ = false;
  double t0_ = 0;
  double t_now_ = 0;           // time of the last update
  double last_draw_t_ = -1e300;
  int64_t step_ = 0;
  int64_t last_printed_step_ = -1;
  double last_loss_;
  double ema_ = 0;
  int64_t ema_n_ = 0;
  double dev_acc_;
  int64_t dev_acc_step_ = 0;
  bool drawn_ = false;         // TTY: a bar line is on screen without its '\n'
  bool finished_ = false;
};

}  // namespace smezo
