// The search checkpoint fuzz target (`dplace place --resume CKPT`), apart
// from fuzz_targets.h because it links LibTorch (dplace_rl) and the parser
// fuzzers do not.
//
// The input is a checkpoint's archive: the file without its checksum line
// (WithChecksum in io/file.h), which no mutation would keep right. It is
// checked by Agent::CheckCheckpoint,
// the code `--resume` runs, for examples/mlp_training.json on the k80x2
// preset, by the agent the input names: colocrl (hidden=2, embedding=2)
// when it contains "agent":"colocrl", else post, the agents and options of
// the seeds (fuzz/seeds/checkpoint/). Errors returned as Status are the
// expected outcome for most inputs; a checkpoint the check accepts must
// resume: Search from it for one more sample succeeds. Aborts otherwise.
#ifndef DPLACE_FUZZ_CHECKPOINT_TARGET_H_
#define DPLACE_FUZZ_CHECKPOINT_TARGET_H_

#include <cstddef>
#include <cstdint>

namespace dplace {
namespace fuzz {

void FuzzCheckpoint(const uint8_t* data, size_t size);

}  // namespace fuzz
}  // namespace dplace

#endif  // DPLACE_FUZZ_CHECKPOINT_TARGET_H_
