// smezo command-line entry point: dispatches to the commands and turns every smezo::Error
// into one line "smezo: error: ..." and exit code 1.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cli/commands.h"
#include "common/check.h"

namespace {

void print_usage() {
  std::printf(
      "usage: smezo COMMAND [options]\n"
      "commands:\n"
      "  info [MODEL]         architecture, shapes, dtypes and parameter count\n"
      "  generate [options]   text generation (greedy with --temperature 0)\n"
      "  train [options]      zeroth-order fine-tuning: --task sst2|rte|boolq|wic|multirc|copa|cb\n"
      "                       --method mezo|smezo|rmezo --sparsity S --lr LR --eps EPS --steps N\n"
      "                       --batch B --out DIR [--resume] (see README for every option)\n"
      "  eval [options]       accuracy on --task, --mode zero-shot|icl [--shots K], --split dev|test\n"
      "  replay BASE LOG --out DIR   rebuild fine-tuned weights from a seed log\n"
      "  logits --tokens 1,2,3 --out F   next-token logits of one sequence (safetensors)\n"
      "  bench --kernel linear [--dtype bf16|f16] [--shapes NxK,...] [--m 16,1024,4096]\n"
      "        [--reps N] [--json F]   kernel benchmark against cuBLAS (needs a GPU)\n"
      "  help                 this text\n"
      "common options: --model PATH (default: the bundled stories260K), --tokenizer PATH,\n"
      "                --device cpu|cuda\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "help") || !std::strcmp(argv[1], "--help")) {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  std::string command = argv[1];
  try {
    if (command == "info") return smezo::command_info(argc, argv);
    if (command == "generate") return smezo::command_generate(argc, argv);
    if (command == "train") return smezo::command_train(argc, argv);
    if (command == "eval") return smezo::command_eval(argc, argv);
    if (command == "replay") return smezo::command_replay(argc, argv);
    if (command == "logits") return smezo::command_logits(argc, argv);
    if (command == "bench") return smezo::command_bench(argc, argv);
    std::fprintf(stderr, "smezo: error: unknown command '%s' (see 'smezo help')\n", command.c_str());
    return 2;
  } catch (const smezo::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "smezo: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "smezo: error: %s\n", e.what());
    return 1;
  }
}
