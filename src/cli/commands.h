// The smezo commands (the pattern: cli.h), listed in kCommandRegistrars in `smezo help`'s order.
#pragma once

#include "cli/cli.h"

namespace smezo {

Command register_train(CLI::App& smezo);
Command register_eval(CLI::App& smezo);
Command register_generate(CLI::App& smezo);
Command register_replay(CLI::App& smezo);
Command register_info(CLI::App& smezo);
Command register_logits(CLI::App& smezo);
Command register_bench(CLI::App& smezo);
Command register_tokenize(CLI::App& smezo);
Command register_convert(CLI::App& smezo);
Command register_merge(CLI::App& smezo);

using CommandRegistrar = Command (*)(CLI::App&);
inline constexpr CommandRegistrar kCommandRegistrars[] = {
    register_train, register_eval, register_generate, register_replay,
    register_info,  register_logits, register_bench, register_tokenize, register_convert, register_merge,
};

}  // namespace smezo
