// The run folder's records, written by the process that holds the recorder (run_recorder.h).
#include "train/run_recorder.h"

#include <cstdio>
#include <filesystem>
#include <system_error>

#include "common/check.h"
#include "run/summary.h"
#include "train/mask_record.h"

namespace smezo {

void RunRecorder::open(const std::string& dir, const std::string& title, const TrainingPlotOptions& plot) {
  if (!records_) return;
  dir_ = dir;
  title_ = title;
  plot_ = plot;
  std::error_code mkdir_error;
  std::filesystem::create_directories(dir_, mkdir_error);
  if (mkdir_error) throw_write_error("create the run folder", dir_, mkdir_error.value());
  lock_ = run_dir_lock(dir_);
  std::string cleaned;
  for (const std::string& name : run_dir_clean(dir_)) cleaned += (cleaned.empty() ? "" : ", ") + name;
  if (!cleaned.empty())
    std::fprintf(stderr, "removed what an interrupted write left in %s: %s\n", dir_.c_str(), cleaned.c_str());
}

void RunRecorder::say(const std::string& line) const {
  if (records_ && !line.empty()) std::fprintf(stderr, "%s\n", line.c_str());
}

void RunRecorder::start(const nlohmann::json& header, int64_t flush_every, int version, Model& model,
                        const SpsaOptions& spsa, bool this_stage_only) {
  if (!records_) return;
  seed_log_ = std::make_unique<SeedLogWriter>(SeedLogWriter::create(seed_log_path(), header, flush_every, version));
  spsa_mask_write(dir_, model, spsa, this_stage_only);  // the masks of the base weights
  metrics_ = std::make_unique<MetricsLog>(metrics_path(), false);
}

void RunRecorder::write_masks_if_missing(Model& model, const SpsaOptions& spsa, bool this_stage_only) {
  if (records_ && !std::filesystem::exists(dir_ + "/mask.json")) spsa_mask_write(dir_, model, spsa, this_stage_only);
}

void RunRecorder::resume(int64_t first_step, int64_t flush_every, size_t replayed) {
  if (!records_) return;
  metrics_log_truncate_after(metrics_path(), first_step - 1);
  seed_log_ = std::make_unique<SeedLogWriter>(SeedLogWriter::open_append(seed_log_path(), flush_every));
  std::fprintf(stderr, "resuming %s at step %lld (replayed %zu logged updates)\n", dir_.c_str(),
               (long long)first_step, replayed);
  metrics_ = std::make_unique<MetricsLog>(metrics_path(), true);
}

void RunRecorder::step(const nlohmann::json& metrics, int64_t step, double loss) {
  if (!records_) return;
  plot_loss(step, loss);
  metrics_->write(metrics);
  bar_->update(step, loss);
}

void RunRecorder::dev(const nlohmann::json& metrics, int64_t step, double value) {
  if (!records_) return;
  metrics_->write(metrics);
  plot_dev(step, value);
}

void RunRecorder::dev_shown(double value, int64_t step) {
  if (!records_) return;
  bar_->set_dev_accuracy(value, step);
  write_plot();
}

void RunRecorder::end_steps() {
  if (!records_) return;
  seed_log_->flush();
  bar_->finish();
}

void RunRecorder::write_plot() const {
  if (!records_) return;
  write_training_plot_svg(dir_ + "/plot.svg", title_, loss_series_, dev_series_, plot_);
}

void RunRecorder::write_summary(const nlohmann::json& summary) const {
  if (records_) summary_write(dir_ + "/summary.json", summary);
}

}  // namespace smezo
