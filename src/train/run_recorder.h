// The records of a training run in its folder: seed log, metrics.jsonl, progress line, plot.svg,
// summary.json, mask.json, the folder's lock and the run's lines on the terminal. Rank 0's records; every
// other rank holds one that records nothing, so the training loop asks no rank. Not the checkpoint: a
// pipeline's stages take part in writing it. Within a step the metrics line (and evaluation) precedes
// the seed-log record, so a kill between leaves metrics lines that resume drops, never a gap.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "run/metrics_log.h"
#include "run/progress_bar.h"
#include "run/run_dir.h"
#include "run/seed_log.h"
#include "run/svg_plot.h"

namespace smezo {

class Model;
struct SpsaOptions;

class RunRecorder {
 public:
  // records: rank 0's recorder; false: one whose every call does nothing (the other ranks).
  explicit RunRecorder(bool records) : records_(records) {}
  // Creates and locks `dir`, removing (and reporting) what interrupted writes left. title, plot: the plot's.
  void open(const std::string& dir, const std::string& title, const TrainingPlotOptions& plot);
  // A line on the terminal (nothing for ""): a warning, a phase, the run's end.
  void say(const std::string& line) const;

  const std::string& dir() const { return dir_; }
  std::string metrics_path() const { return dir_ + "/metrics.jsonl"; }
  std::string seed_log_path() const { return dir_ + "/seed_log.txt"; }

  // A new run: seed log with `header` (durable on return), the base weights' mask.json, empty metrics.
  void start(const nlohmann::json& header, int64_t flush_every, int version, Model& model, const SpsaOptions& spsa,
             bool this_stage_only);
  // mask.json when a start stopped before writing it (the model still holds the base weights).
  void write_masks_if_missing(Model& model, const SpsaOptions& spsa, bool this_stage_only);
  // A resume at `first_step`: metrics after the last logged step dropped; seed log and metrics appended to.
  void resume(int64_t first_step, int64_t flush_every, size_t replayed);

  // The metrics lines of the steps already run (a resumed run's history), in order.
  std::vector<nlohmann::json> logged_metrics() const {
    return records_ ? metrics_log_read(metrics_path()) : std::vector<nlohmann::json>{};
  }
  // The plot's points, from the history or as the run goes.
  void plot_loss(int64_t step, double loss) { loss_series_.push_back({static_cast<double>(step), loss}); }
  void plot_dev(int64_t step, double value) { dev_series_.push_back({static_cast<double>(step), value}); }

  void start_progress(const ProgressOptions& options) { if (records_) bar_.emplace(options); }
  // A step: its metrics line, its plot point and the progress line.
  void step(const nlohmann::json& metrics, int64_t step, double loss);
  // A dev evaluation: its metrics line and plot point (value: accuracy, or F1 for generation).
  void dev(const nlohmann::json& metrics, int64_t step, double value);
  // After a periodic evaluation: the value on the progress line, and plot.svg redrawn.
  void dev_shown(double value, int64_t step);
  void message(const std::string& text) { if (records_) bar_->message(text); }  // on the progress line
  void seed(const SeedRecord& record) { if (records_) seed_log_->append(record); }
  void flush_seed_log() { if (records_) seed_log_->flush(); }
  // The steps are over (or stopped): the seed log durable, the progress line ended.
  void end_steps();

  void write_plot() const;
  void write_summary(const nlohmann::json& summary) const;

 private:
  bool records_;
  std::string dir_, title_;
  TrainingPlotOptions plot_;
  RunDirLock lock_;  // for the whole run
  std::unique_ptr<SeedLogWriter> seed_log_;
  std::unique_ptr<MetricsLog> metrics_;
  std::optional<ProgressBar> bar_;
  PlotSeries loss_series_, dev_series_;  // the plot's history
};

}  // namespace smezo
