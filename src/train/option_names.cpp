// The options' name tables (see option_names.h).
#include "train/option_names.h"

namespace smezo {

const EnumNames<Method>& method_names() {
  static const EnumNames<Method> names = {{METHOD_MEZO, "mezo"},           {METHOD_SMEZO, "smezo"},
                                          {METHOD_RMEZO, "rmezo"},         {METHOD_FZOO, "fzoo"},
                                          {METHOD_SMEZO, "s-mezo", false}, {METHOD_SMEZO, "sparse-mezo", false},
                                          {METHOD_RMEZO, "r-mezo", false}};
  return names;
}

const EnumNames<LrSchedule>& lr_schedule_names() {
  static const EnumNames<LrSchedule> names = {{LR_CONSTANT, "constant"}, {LR_LINEAR, "linear"}};
  return names;
}

const EnumNames<NoiseKind>& noise_names() {
  static const EnumNames<NoiseKind> names = {{NOISE_GAUSSIAN, "gaussian"}, {NOISE_GAUSSIAN_V1, "gaussian-v1"},
                                             {NOISE_RADEMACHER, "rademacher"}, {NOISE_SIGN, "sign"},
                                             {NOISE_AUTO, "auto", false}};
  return names;
}

const EnumNames<Objective>& objective_names() {
  static const EnumNames<Objective> names = {{OBJECTIVE_LOSS, "loss"}, {OBJECTIVE_ACCURACY, "accuracy"},
                                             {OBJECTIVE_F1, "f1"}};
  return names;
}

const EnumNames<Tune>& tune_names() {
  static const EnumNames<Tune> names = {{TUNE_FULL, "full"}, {TUNE_LORA, "lora"}, {TUNE_PREFIX, "prefix"},
                                               {TUNE_SCALES, "scales"}};
  return names;
}

const EnumNames<ProbePasses>& probe_passes_names() {
  static const EnumNames<ProbePasses> names = {{PROBES_PAIR, "pair"}, {PROBES_SEPARATE, "separate"}};
  return names;
}

Method method_parse(const std::string& name) { return enum_parse(method_names(), name, "method"); }
const char* method_name(Method m) { return enum_name(method_names(), m); }
const char* lr_schedule_name(LrSchedule s) { return enum_name(lr_schedule_names(), s); }
NoiseKind noise_parse(const std::string& name) { return enum_parse(noise_names(), name, "noise"); }
const char* noise_name(NoiseKind k) { return enum_name(noise_names(), k); }

}  // namespace smezo
