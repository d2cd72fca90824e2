// The zeroth-order SPSA optimiser of MeZO, S-MeZO and R-MeZO (the step and the masks:
// docs/ARCHITECTURE.md); weight decay adds - lr_t·wd·m(W)⊙W. Several probes (SpsaOptions::probes =
// q > 1): probe i of step t has seed s_{t,i} (probe_seed; s_{t,0} is the step seed, so q = 1 is the
// one-probe step bit for bit), g_i = (l+_i - l-_i) / (2 eps), W <- W - lr_t·(1/q)·Σ_i g_i·m(W)⊙z_i.
// FZOO (METHOD_FZOO; Dang et al., arXiv:2506.09034): N = q >= 2 one-sided Rademacher probes u_i,
// l_0 = L(W), l_i = L(W + eps·u_i), g_i = (l_i - l_0) / eps, sigma = the sample standard deviation
// (1/(N-1)) of l_1..l_N, W <- W - (lr_t / sigma)·(1/N)·Σ_i g_i·u_i (sigma = 0: no step); N + 1
// forward passes. Both log (seed_i, g_i) per probe and the step size (lr_t, or lr_t / sigma).
// The update applies the single-probe op once per probe, in order (weight decay with the first):
// bit-identical across run, resume and replay on every backend. Probe i's mask is read from the
// weights after probes 0..i-1 (S-MeZO: an entry crossing h mid-step may leave the next mask).
// The fold (set_fold_update; backend/pending_updates.h): finish() hands the linear weights' updates to
// the backend, which applies them, the same ops in the same order, inside the next step's first W'
// pass; the caller flushes (flush_updates) before any other read of the weights.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/value_range.h"  // ValueOrigin
#include "common/splitmix.h"  // splitmix64: step seeds
#include "model/model.h"
#include "run/seed_log.h"  // SeedLog, SeedProbe, SeedRecord
#include "smezo/train.h"  // Method, LrSchedule, SpsaOptions
#include "train/option_names.h"  // method_name, noise_name ...

namespace smezo {

// The noise a seed log's "spsa" header names ("noise", "noise_spec"; neither: NOISE_GAUSSIAN_V1).
// Throws smezo::Error naming `source` for an unknown kind, a newer spec, or a kind its spec lacks.
NoiseKind spsa_logged_noise(const nlohmann::json& spsa_header, const std::string& source);

// Throws smezo::Error for options out of range or that the method does not take (unset: the defaults);
// messages name the options, or the fields of the file origin names (a seed log's run header).
void spsa_validate(const SpsaOptions& opts, const ValueOrigin& origin = {});

struct SpsaStep {
  int64_t step = 0;
  uint64_t seed = 0;                 // the first probe's (the step seed)
  double loss_plus = 0, loss_minus = 0;  // the first probe's pair (fzoo: l_1, then l_0)
  float g = 0;                       // the first probe's
  float lr = 0;                      // the step size of the update (fzoo: lr_t / sigma)
  std::vector<SeedProbe> probes;     // every probe's (seed, g), in order
  std::vector<double> losses;        // every half's loss, in the order of probes()
  double loss = 0;                   // the step's loss: the mean of the halves (fzoo: l_0)
  double sigma = 0;                  // fzoo: the spread of the perturbed losses
  SeedRecord record() const;         // what the seed log holds of it
};

class SpsaOptimizer {
 public:
  // Validates opts, fixes the masks from the current weights, sets noise (AUTO -> GAUSSIAN unless resumed).
  SpsaOptimizer(Model& model, const SpsaOptions& opts);

  uint64_t step_seed(int64_t step) const;
  float lr_at(int64_t step) const;

  // A step's probes for `seed`: one pair (both halves in one forward) when in_one_pass, else +, then -.
  std::vector<Probe> step_probes(uint64_t seed, bool in_one_pass) const;

  // The seed of probe i (0 .. probes - 1) of a step; probe 0's is step_seed(step).
  uint64_t probe_seed(int64_t step, int64_t i) const;
  // A step's probes, in the order finish() takes their losses: SPSA, step_probes of each probe seed;
  // FZOO, Probe{} (l_0), then one + probe per seed.
  std::vector<Probe> probes(int64_t step, bool in_one_pass) const;
  // A step from the losses of its probes (one per half): g (checked finite: else it throws, W untouched),
  // then the update, or the linear weights' held in the backend under the fold.
  SpsaStep finish(int64_t step, std::vector<double> losses);
  // The update alone, from a logged (seed, g, lr): what replay and resume apply.
  void apply_update(uint64_t seed, float g, float lr);
  // The update of several probes: W <- W - lr·(1/q)·Σ_i g_i·m⊙z_i, probe by probe in order.
  void apply_update(const std::vector<SeedProbe>& probes, float lr);
  // A logged step's update, after checking it has this run's probe count and probe seeds.
  void apply_record(const SeedRecord& r, const std::string& seed_log_path);
  // Every record of a seed log in order: the one loop of smezo::replay() (src/train/replay.cpp) and --resume.
  void apply_seed_log(const SeedLog& log, const std::string& seed_log_path);

  // On: finish() holds the linear weights' updates in the backend for the fold (off unless set; `smezo
  // train --fold-update`). apply_update and apply_record always apply at once.
  void set_fold_update(bool on) { fold_ = on; }
  bool fold_update() const { return fold_; }
  // Applies every held update: before evaluation, generation, a checkpoint, the run's end.
  void flush_updates() { model_.backend().flush_updates(); }

  // Run identity for the seed-log header: method, hyperparameters, noise kind and spec, thresholds.
  nlohmann::json describe() const;
  // Throws unless a seed-log header describes this optimiser on this base model (thresholds bit for bit).
  void check_matches(const nlohmann::json& header, const std::string& seed_log_path) const;
  // Each field where a header differs ("lr = 0.001 in the run, 0.002 here"); thresholds not compared.
  std::vector<std::string> differences(const nlohmann::json& header, const std::string& seed_log_path) const;

  int64_t tuned_parameter_count() const { return tuned_count_; }
  const SpsaOptions& options() const { return opts_; }

 private:
  void finish_spsa(SpsaStep* r);  // g from the losses (checked finite), then the update
  void finish_fzoo(SpsaStep* r);
  // apply_update's, the linear weights' held for the fold when `fold`
  void update_weights(const std::vector<SeedProbe>& probes, float lr, bool fold);

  Model& model_;
  SpsaOptions opts_;
  int64_t tuned_count_ = 0;
  bool fold_ = false;
};

// The options a describe() object records (the inverse of describe(), for replay), checked as a run's
// are (spsa_validate), the messages naming `source` and the header's fields.
SpsaOptions spsa_options_from_json(const nlohmann::json& j, const std::string& source);

}  // namespace smezo
