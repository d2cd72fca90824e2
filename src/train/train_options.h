// The training options' defaults and checks, owned by the library so that `smezo train` and a
// program calling smezo::train() get the same ones (docs/ARCHITECTURE.md, "One training step"):
//   resolve_defaults (include/smezo/train.h)  what the caller left unset, filled in
//   validate_train_options                    every check that needs no model, data or ranks
//   the option rules                          each numeric option's range: checked here, and
//                                             stated and checked by the command line (cli.h)
// The enums' names are in train/option_names.h.
#pragma once

#include <string>
#include <vector>

#include "common/value_range.h"
#include "smezo/train.h"

namespace smezo {

// The SPSA part of resolve_defaults: lr and sparsity by method.
SpsaOptions spsa_resolve_defaults(SpsaOptions o);

// The ranges of the numeric SPSA options (spsa_validate checks them; sparsity and lr resolved)
// and of the other numeric options of TrainOptions.
const std::vector<OptionRule<SpsaOptions>>& spsa_option_rules();
const std::vector<OptionRule<TrainOptions>>& train_option_rules();
// The range of the option named `option` ("--batch") in either list (an error for a name
// neither has).
const ValueRange& train_option_range(const std::string& option);

// Throws smezo::Error, one line naming the option, for options no run can use: a value out of
// its range, an enum value without a name, bad adapter settings, what spsa_validate refuses,
// and what validate_data_options refuses.
void validate_train_options(const TrainOptions& o);
// Its part about the data: data files need a task spec, a task spec needs a train file (what
// `smezo train --check-data` and `--export-data` need before they stop short of training).
void validate_data_options(const TrainOptions& o);

}  // namespace smezo
