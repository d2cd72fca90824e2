// The CLI commands; each takes main's argv (argv[1] is the command name) and returns an exit code.
#pragma once

namespace smezo {

int command_info(int argc, char** argv);
int command_generate(int argc, char** argv);
int command_train(int argc, char** argv);
int command_eval(int argc, char** argv);
int command_replay(int argc, char** argv);
int command_logits(int argc, char** argv);
int command_bench(int argc, char** argv);

}  // namespace smezo
