// Fuzz target: a seed log through seed_log_read, and its run header through what replay and resume
// read of it (the SPSA options, the model fingerprint, the LoRA / prefix settings). A log that reads
// must hold consecutive steps each of which formats back to a line that parses to the same record.
#include <cstdlib>
#include <cstring>

#include "fuzz_util.h"
#include "model/lora.h"
#include "model/model_fingerprint.h"
#include "model/prefix.h"
#include "run/seed_log.h"
#include "train/spsa.h"

namespace {

bool same_record(const smezo::SeedRecord& a, const smezo::SeedRecord& b) {
  if (a.step != b.step || a.seed != b.seed || std::memcmp(&a.g, &b.g, 4) != 0 || std::memcmp(&a.lr, &b.lr, 4) != 0 ||
      a.more_probes.size() != b.more_probes.size())
    return false;
  for (size_t i = 0; i < a.more_probes.size(); i++)
    if (a.more_probes[i].seed != b.more_probes[i].seed || std::memcmp(&a.more_probes[i].g, &b.more_probes[i].g, 4) != 0)
      return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = smezo_fuzz::scratch_dir() + "/seed_log.txt";
  smezo_fuzz::write_file(path, data, size);
  smezo_fuzz::run_reader([&] {
    const smezo::SeedLog log = smezo::seed_log_read(path);
    for (size_t i = 0; i < log.records.size(); i++) {
      const smezo::SeedRecord& r = log.records[i];
      if (i > 0 && r.step != log.records[i - 1].step + 1) std::abort();
      smezo_fuzz::run_reader([&] { smezo::seed_record_require_loggable(r, path); });
      std::string line = smezo::seed_log_format_record(r);
      line.pop_back();  // the '\n'
      smezo::SeedRecord back;
      if (!smezo::seed_log_parse_record(line, &back, log.version) || !same_record(r, back)) std::abort();
    }
    const std::string where = smezo::seed_log_header_where(log, path);
    smezo_fuzz::run_reader([&] { smezo::spsa_options_from_json(log.header.value("spsa", nlohmann::json()), where); });
    smezo_fuzz::run_reader([&] {
      const nlohmann::json mine = {{"weights", "0123456789abcdef"}, {"qk_rows", "rotate-half"}};
      smezo::model_fingerprint_difference(log.header.value("model_fingerprint", nlohmann::json()), mine, "m");
    });
    const nlohmann::json tune = log.header.value("tune", nlohmann::json());
    smezo_fuzz::run_reader([&] { smezo::lora_options_from_json(tune, where); });
    smezo_fuzz::run_reader([&] { smezo::prefix_options_from_json(tune, where); });
  });
  return 0;
}
