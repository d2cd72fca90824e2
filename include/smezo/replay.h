// Public API: rebuild a run's weights bit for bit from its base model and seed log (`smezo replay`;
// `smezo train --resume` applies a log's records the same way). Errors throw smezo::Error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "smezo/train.h"  // Tune

namespace smezo {

struct ReplayOptions {
  std::string base;              // the base model the run started from; "": the bundled stories260K
  std::string seed_log;          // the run's seed_log.txt
  std::string out;               // the folder to write (a checkpoint, or a PEFT adapter under lora/prefix)
  std::string tokenizer;         // copied into the checkpoint; "": the model's own, if any
  std::optional<Device> device;           // unset: the run's, from the seed log
  std::optional<DType> dtype;             // weight storage; must be the run's; unset: the run's
  std::optional<DType> checkpoint_dtype;  // unset: the run's storage dtype
};

struct ReplayResult {
  int64_t steps = 0;           // records applied
  bool partial_tail = false;   // a partial last line of the log (a killed run) was ignored
  Tune written = TUNE_FULL;    // TUNE_FULL: a Hugging Face checkpoint; LORA, PREFIX: a PEFT adapter folder
  std::string base;            // the base model's path (ReplayOptions::base resolved)
  std::string tokenizer_path;  // copied into the checkpoint; "": none (always so for adapters)
  std::string run_path;        // the run's forward-pass path, in words, from the seed log
};

ReplayResult replay(const ReplayOptions& options);

}  // namespace smezo
