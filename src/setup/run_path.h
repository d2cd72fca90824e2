// The path a run's forward passes take, recorded in the seed-log header and summary.json and checked by
// --resume: the paths round differently, so a run resumed on another would not continue bit for bit.
// The record's fields (top-level keys of the header):
//   linear_path         "cpu" (the CPU's one linear), or --linear-path as this CUDA build resolves it:
//                       "wprime", "fused", or "auto:<16 hex digits>" when auto takes fused for some
//                       shapes (the digits: the crossover table, cuda_plan.h); auto with today's empty
//                       table is "wprime"
//   weight_block_bytes  the W' row block in effect (cuda_weight_chunk_bytes(): SMEZO_CUDA_WEIGHT_BLOCK_MIB or 64 MiB); null on the CPU (it has none)
//   graphs              "on" when the forward passes ran as CUDA graphs (--graphs on), else "off"
// A log written before these fields existed is assumed to have run on the resuming invocation's path.
// Replay applies updates only, no forward, so it prints the record and checks nothing.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "smezo/device.h"

namespace smezo {

// The record of a run on `device` with --linear-path `linear_path`.
// graphs: --graphs on (make_backend refuses it on the CPU).
nlohmann::json run_path_record(Device device, LinearPathMode linear_path, bool graphs = false);

// True when the run header holds the record (a header written before it: false).
bool run_path_recorded(const nlohmann::json& header);

// The record's fields that differ between a logged header and `mine`, each as "what the run recorded,
// what this invocation resolves to (the option that takes the run's)"; none when nothing is recorded.
std::vector<std::string> run_path_differences(const nlohmann::json& logged, const nlohmann::json& mine);

// "linear path wprime, W' blocks of 64 MiB, graphs off", or what a header without the record means.
std::string run_path_describe(const nlohmann::json& header);

}  // namespace smezo
