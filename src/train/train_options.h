// The training options' defaults and checks, in the library so `smezo train` and smezo::train()
// callers share them: resolve_defaults (what the caller left unset), validate_train_options (every
// check that needs no model, data or ranks) and the option rules (each numeric option's range, also
// checked by the CLI).
#pragma once

#include <string>
#include <vector>

#include "common/value_range.h"
#include "smezo/train.h"

namespace smezo {

// The SPSA part of resolve_defaults: lr and sparsity by method.
SpsaOptions spsa_resolve_defaults(SpsaOptions o);
// The noise of a new run left at NOISE_AUTO (a resumed run keeps its log's): rademacher for FZOO, else gaussian.
NoiseKind spsa_default_noise(Method method);

// Bounds of options whose size a run pays in every step: beyond them a step would not end in any
// useful time (the paper's FZOO uses 8 probes; MeZO's accumulation, a few minibatches).
constexpr double kMaxProbesPerStep = 1024;
constexpr double kMaxAccumulate = 1024;
// --progress-every 0: about this many plain progress lines per run.
constexpr int64_t kProgressLinesPerRun = 20;

// The numeric options' ranges: SpsaOptions' (spsa_validate checks them, resolved) and TrainOptions'.
const std::vector<OptionRule<SpsaOptions>>& spsa_option_rules();
const std::vector<OptionRule<TrainOptions>>& train_option_rules();
// The range of `option` ("--batch") in either list; throws for a name neither has.
const ValueRange& train_option_range(const std::string& option);

// Throws smezo::Error naming the option for options no run can use (range, enum, adapter, data).
void validate_train_options(const TrainOptions& o);
// Its data part (for --check-data and --export-data): data files need a task spec, a spec a train file.
void validate_data_options(const TrainOptions& o);

}  // namespace smezo
