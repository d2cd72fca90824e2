// render_prompts: the exact strings smezo hands its tokenizer for the seven tasks, as JSONL,
// for tokenizer oracles (tools/oracles/bpe_oracle.py) that must see byte-identical text.
//
//   build/render_prompts [--rows N] [--data DIR] > prompts.jsonl
//
// For every task, N rows spread evenly over its validation file (first row, then every
// rows/N-th), each candidate i gives the strings task_encode.cpp encodes:
//   {"task", "row", "candidate", "kind": "context",  "text": contexts[i]}
//   {"task", "row", "candidate", "kind": "full",     "text": contexts[i] + options[i]}
// and for the gold candidate of every row also the in-context prompt with the two rows before
// it as demonstrations: "icl" = (build_icl_prefix(demos) + context).lstrip() + option.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/assets.h"
#include "common/check.h"
#include "tasks/task_data.h"
#include "tasks/task_encode.h"
#include "tasks/templates.h"

using namespace smezo;

namespace {

struct TaskFile {
  TaskId task;
  const char* relative;
};

const TaskFile kFiles[] = {
    {TASK_SST2, "glue/SST-2/dev.tsv"},          {TASK_RTE, "superglue/RTE/val.jsonl"},
    {TASK_BOOLQ, "superglue/BoolQ/val.jsonl"},  {TASK_WIC, "superglue/WiC/val.jsonl"},
    {TASK_MULTIRC, "superglue/MultiRC/val.jsonl"}, {TASK_COPA, "superglue/COPA/val.jsonl"},
    {TASK_CB, "superglue/CB/val.jsonl"},
};

void emit(const char* task, int64_t row, int candidate, const char* kind, const std::string& text) {
  nlohmann::json line = {{"task", task}, {"row", row}, {"candidate", candidate}, {"kind", kind}, {"text", text}};
  std::printf("%s\n", line.dump().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  int64_t rows = 20;
  std::string data_dir = asset_path("data");
  for (int i = 1; i < argc; i++) {
    if (std::strcmp(argv[i], "--rows") == 0 && i + 1 < argc) {
      rows = std::atoll(argv[++i]);
    } else if (std::strcmp(argv[i], "--data") == 0 && i + 1 < argc) {
      data_dir = argv[++i];
    } else {
      std::fprintf(stderr, "usage: render_prompts [--rows N] [--data DIR]\n");
      return 2;
    }
  }
  try {
    SMEZO_REQUIRE(rows > 0, "--rows must be positive, got %lld", (long long)rows);
    for (const TaskFile& f : kFiles) {
      const std::vector<TaskExample> examples = task_read_file(f.task, data_dir + "/" + f.relative);
      const int64_t n = static_cast<int64_t>(examples.size());
      const int64_t take = std::min(rows, n), stride = n / take;
      for (int64_t k = 0; k < take; k++) {
        const int64_t row = k * stride;
        const TaskExample& ex = examples[row];
        for (size_t c = 0; c < ex.contexts.size(); c++) {
          emit(task_name(f.task), row, static_cast<int>(c), "context", ex.contexts[c]);
          emit(task_name(f.task), row, static_cast<int>(c), "full", ex.contexts[c] + ex.options[c]);
        }
        if (row >= 2) {
          const std::string prefix = build_icl_prefix({examples[row - 2], examples[row - 1]});
          const std::string prompt = template_lstrip_whitespace(prefix + ex.contexts[ex.gold]);
          emit(task_name(f.task), row, ex.gold, "icl", prompt + ex.options[ex.gold]);
        }
      }
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "render_prompts: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
