// An agent's search checkpoints (agent.cc): what a checkpoint holds (the
// search's SearchState and AgentSearchState as JSON meta beside the
// agent's own archive), writing one so that a killed search leaves the
// previous one intact, and reading one back with every field checked, so
// that a corrupt or foreign file is an error and never a crash. Internal
// to src/dplace/rl.
//
// A checkpoint is a LibTorch archive of two entries: "meta", the JSON of
// CheckpointMeta as a uint8 tensor, and "agent", the archive the agent's
// DoSave wrote.
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
// and `s`: what identifies the search (format, version, agent, graph hash,
// cluster, numbers of groups and devices) and the states. As `expected` of
// the loaders, only the identifying fields are read.
nlohmann::json CheckpointMeta(const std::string& agent, const AgentSetup& setup,
                              const SearchState& loop,
                              const AgentSearchState& s);

// The agent's part of a checkpoint: Agent::DoSave and Agent::DoLoad.
using SaveAgentState = std::function<void(torch::serialize::OutputArchive*)>;
using LoadAgentState = std::function<void(torch::serialize::InputArchive*)>;

// Writes a checkpoint of `meta` and what `save_agent` writes to `path`,
// through a temporary file renamed over it, so that a search killed while
// writing leaves the previous checkpoint intact. Errors name the path.
Status WriteCheckpoint(const std::string& path, const nlohmann::json& meta,
                       const SaveAgentState& save_agent);

// Loads the states into *loop and *s and the agent's through `load_agent`
// from `bytes`, the contents of checkpoint `path` (named in errors): the
// file of `--resume`, and what the checkpoint fuzz target feeds
// (fuzz/fuzz_checkpoint.cc). The meta must match `expected`'s identifying
// fields; every loop-state field is checked for its type and range.
// Every error, a corrupt archive and what `load_agent` throws included, is
// a Status.
Status LoadCheckpointBytes(const std::string& bytes, const std::string& path,
                           const nlohmann::json& expected,
                           const LoadAgentState& load_agent, SearchState* loop,
                           AgentSearchState* s);
// As LoadCheckpointBytes, from the file `path`.
Status LoadCheckpoint(const std::string& path, const nlohmann::json& expected,
                      const LoadAgentState& load_agent, SearchState* loop,
                      AgentSearchState* s);

}  // namespace dplace

#endif  // DPLACE_RL_CHECKPOINT_H_
