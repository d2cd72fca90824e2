// The name table of each training-option enum: the CLI, the seed-log header and summaries use them.
#pragma once

#include <string>

#include "common/enum_names.h"
#include "smezo/train.h"

namespace smezo {

const EnumNames<Method>& method_names();          // mezo, smezo, rmezo, fzoo (and the spellings s-mezo, r-mezo ...)
const EnumNames<LrSchedule>& lr_schedule_names();  // constant, linear
const EnumNames<NoiseKind>& noise_names();        // gaussian, gaussian-v1, rademacher, sign (and "auto" of the options)
const EnumNames<Objective>& objective_names();    // loss, accuracy, f1
const EnumNames<Tune>& tune_names();              // full, lora, prefix
const EnumNames<ProbePasses>& probe_passes_names();  // pair, separate

// The same tables, named for the seed-log header's values; parse throws listing the known names.
Method method_parse(const std::string& name);
const char* method_name(Method m);
const char* lr_schedule_name(LrSchedule s);
NoiseKind noise_parse(const std::string& name);
const char* noise_name(NoiseKind k);

}  // namespace smezo
