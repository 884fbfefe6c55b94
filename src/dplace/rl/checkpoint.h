// An agent's search checkpoints (agent.cc): what a checkpoint holds (the
// search's SearchState and AgentSearchState as JSON meta beside the
// agent's own archive), writing one so that a killed search leaves the
// previous one intact, and reading one back with every field checked, so
// that a corrupt or foreign file is an error and never a crash. Internal
// to src/dplace/rl.
//
// A checkpoint file is a LibTorch archive of two entries, "meta", the JSON
// of CheckpointMeta as a uint8 tensor, and "agent", the archive the agent's
// DoSave wrote; followed by the archive's CRC-32 (WriteChecksummedFile in
// io/file.h), so that any change to the file is refused.
#ifndef DPLACE_RL_CHECKPOINT_H_
#define DPLACE_RL_CHECKPOINT_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "dplace/rl/agent.h"
#include "dplace/search/search_loop.h"

namespace dplace {

// What an agent's search keeps beside the loop's SearchState, as a
// checkpoint holds it.
struct AgentSearchState {
  double baseline = 0;
  bool baseline_set = false;
  std::vector<DeviceId> best_groups;  // The best sample's group devices.
};

// The meta of a checkpoint of `agent`'s search on `setup` in states `loop`
// and `s`: what identifies the search (format, version, agent, its options
// as given, seed, graph hash, cluster, numbers of groups and devices) and
// the states. As `expected` of the loaders, only the identifying fields are
// read.
nlohmann::json CheckpointMeta(const Method& agent, const AgentSetup& setup,
                              const SearchState& loop,
                              const AgentSearchState& s);

// The agent's part of a checkpoint: Agent::DoSave and Agent::DoLoad.
using SaveAgentState = std::function<void(torch::serialize::OutputArchive*)>;
using LoadAgentState = std::function<void(torch::serialize::InputArchive*)>;

// Writes a checkpoint of `meta` and what `save_agent` writes to `path`:
// the archive is made in memory, then written by WriteChecksummedFile, so
// that a search killed while writing, or a full disk, leaves the previous
// checkpoint intact and no temporary file. Errors name the path and the
// reason.
Status WriteCheckpoint(const std::string& path, const nlohmann::json& meta,
                       const SaveAgentState& save_agent);

// Loads the states into *loop and *s and the agent's through `load_agent`
// from `bytes`, the archive of checkpoint `path` (named in errors; its
// checksum already verified and removed): the file of `--resume`, and what
// the checkpoint fuzz target feeds (fuzz/checkpoint_target.cc). The meta
// must match `expected`'s identifying fields; every loop-state field is
// checked for its type and range. Every error, a corrupt archive and what
// `load_agent` throws included, is a Status.
Status LoadCheckpointBytes(const std::string& bytes, const std::string& path,
                           const nlohmann::json& expected,
                           const LoadAgentState& load_agent, SearchState* loop,
                           AgentSearchState* s);
// As LoadCheckpointBytes, from the file `path`, after verifying its
// checksum (a file cut short or changed in any byte is refused).
Status LoadCheckpoint(const std::string& path, const nlohmann::json& expected,
                      const LoadAgentState& load_agent, SearchState* loop,
                      AgentSearchState* s);

}  // namespace dplace

#endif  // DPLACE_RL_CHECKPOINT_H_
