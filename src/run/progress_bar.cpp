// Implementation of the training progress display (see progress_bar.h).
#include "run/progress_bar.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "common/check.h"
#include "run/number_format.h"

namespace smezo {

namespace {

double steady_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string format_rate(double steps_per_s) {
  if (steps_per_s <= 0 || !std::isfinite(steps_per_s)) return "- steps/s";
  if (steps_per_s < 0.1) return format_string("%.1f s/step", 1.0 / steps_per_s);
  if (steps_per_s < 10) return format_string("%.2f steps/s", steps_per_s);
  if (steps_per_s < 100) return format_string("%.1f steps/s", steps_per_s);
  return format_string("%.0f steps/s", steps_per_s);
}

}  // namespace

std::string progress_format_hms(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "-:--:--";
  int64_t s = static_cast<int64_t>(std::llround(seconds));
  return format_string("%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                       static_cast<long long>((s / 60) % 60), static_cast<long long>(s % 60));
}

ProgressBar::ProgressBar(const ProgressOptions& opt)
    : opt_(opt),
      last_loss_(std::numeric_limits<double>::quiet_NaN()),
      dev_acc_(std::numeric_limits<double>::quiet_NaN()) {
  SMEZO_REQUIRE(opt_.total_steps >= 0 && opt_.start_step >= 0 &&
                    opt_.start_step <= opt_.total_steps,
                "progress bar: bad steps (start %lld, total %lld)",
                static_cast<long long>(opt_.start_step), static_cast<long long>(opt_.total_steps));
  if (!opt_.out) opt_.out = stderr;
  if (!opt_.clock) opt_.clock = steady_seconds;
  if (opt_.plain_every < 1) opt_.plain_every = 1;
  if (opt_.bar_width < 4) opt_.bar_width = 4;
  tty_ = opt_.tty < 0 ? ::isatty(::fileno(opt_.out)) != 0 : opt_.tty != 0;
  if (tty_ && opt_.columns <= 0) {
    struct winsize ws {};
    if (::ioctl(::fileno(opt_.out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
      opt_.columns = ws.ws_col;
  }
  t0_ = now();
  t_now_ = t0_;
  step_ = opt_.start_step;
}

ProgressBar::~ProgressBar() { finish(); }

double ProgressBar::now() const { return opt_.clock(); }

void ProgressBar::update(int64_t step, double loss) {
  if (finished_) return;
  step_ = step;
  t_now_ = now();
  last_loss_ = loss;
  if (std::isfinite(loss)) {
    double b = opt_.loss_ema_beta;
    ema_ = b * ema_ + (1 - b) * loss;
    ++ema_n_;
  }
  bool last = step_ >= opt_.total_steps;
  if (tty_) {
    if (last || !drawn_ || t_now_ - last_draw_t_ >= opt_.redraw_interval_s) draw();
  } else if (last || step_ % opt_.plain_every == 0) {
    draw();
  }
}

void ProgressBar::set_dev_accuracy(double accuracy, int64_t step) {
  dev_acc_ = accuracy;
  dev_acc_step_ = step;
}

void ProgressBar::message(const std::string& text) {
  if (tty_ && drawn_) {
    std::fprintf(opt_.out, "\r\x1b[K%s\n", text.c_str());
    drawn_ = false;
    if (!finished_) draw();
  } else {
    std::fprintf(opt_.out, "%s\n", text.c_str());
  }
  std::fflush(opt_.out);
}

void ProgressBar::finish() {
  if (finished_) return;
  finished_ = true;
  if (tty_) {
    draw();
    std::fputc('\n', opt_.out);
    drawn_ = false;
  } else if (last_printed_step_ != step_) {
    draw();
  }
  std::fflush(opt_.out);
}

double ProgressBar::steps_per_second() const {
  double dt = t_now_ - t0_;
  int64_t done = step_ - opt_.start_step;
  if (dt <= 0 || done <= 0) return 0;
  return static_cast<double>(done) / dt;
}

double ProgressBar::eta_seconds() const {
  double rate = steps_per_second();
  if (rate <= 0) return -1;
  return static_cast<double>(opt_.total_steps - step_) / rate;
}

double ProgressBar::smoothed_loss() const {
  if (ema_n_ == 0) return std::numeric_limits<double>::quiet_NaN();
  return ema_ / (1 - std::pow(opt_.loss_ema_beta, static_cast<double>(ema_n_)));
}

// TTY lines must not wrap (no '\r' redraw then): narrow the bar first, then cut the text.
std::string ProgressBar::status_line() const {
  std::string s = line_text(opt_.bar_width);
  if (!tty_ || opt_.columns <= 0) return s;
  int64_t room = opt_.columns - 1, excess = static_cast<int64_t>(s.size()) - room;
  if (excess <= 0) return s;
  s = line_text(static_cast<int>(std::max<int64_t>(4, opt_.bar_width - excess)));
  if (static_cast<int64_t>(s.size()) > room)
    s.resize(static_cast<size_t>(std::max<int64_t>(room, 0)));
  return s;
}

std::string ProgressBar::line_text(int bar_width) const {
  int64_t total = opt_.total_steps;
  double frac = total > 0 ? static_cast<double>(step_) / static_cast<double>(total) : 1.0;
  frac = std::min(1.0, std::max(0.0, frac));
  std::string s;
  if (tty_) {
    int digits = static_cast<int>(std::to_string(total).size());
    s = format_string("step %*lld/%lld [", digits, static_cast<long long>(step_),
                      static_cast<long long>(total));
    int w = bar_width;
    int filled = static_cast<int>(frac * w);
    for (int i = 0; i < w; ++i) s += i < filled ? '#' : (i == filled && frac < 1 ? '>' : ' ');
    s += format_string("] %5.1f%%", 100 * frac);
  } else {
    s = format_string("step %lld/%lld %.1f%%", static_cast<long long>(step_),
                      static_cast<long long>(total), 100 * frac);
  }
  s += " | loss " + format_loss(smoothed_loss()) + " (last " + format_loss(last_loss_) + ")";
  s += " | " + format_rate(steps_per_second());
  if (finished_ || step_ >= total) s += " | took " + progress_format_hms(t_now_ - t0_);
  else s += " | ETA " + progress_format_hms(eta_seconds());
  s += " | " + opt_.dev_label + " " + format_accuracy(dev_acc_);
  if (std::isfinite(dev_acc_)) s += format_string(" (step %lld)", static_cast<long long>(dev_acc_step_));
  return s;
}

void ProgressBar::draw() {
  std::string line = status_line();
  if (tty_) {
    std::fprintf(opt_.out, "\r%s\x1b[K", line.c_str());
    drawn_ = true;
    last_draw_t_ = t_now_;
  } else {
    std::fprintf(opt_.out, "%s\n", line.c_str());
  }
  last_printed_step_ = step_;
  std::fflush(opt_.out);
}

}  // namespace smezo
