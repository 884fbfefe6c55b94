// A check of the pickles inside a search checkpoint (a LibTorch archive)
// before LibTorch's Unpickler reads them. LibTorch 1.13's Unpickler trusts
// its input: a length past the record makes it reserve gigabytes, and an
// opcode that pops more than the stack holds reads past its stack (an
// invalid free inside torch::jit::import_ir_module, found by the checkpoint
// fuzzer), and it sizes a tensor's storage by the pickle, not by the record
// that holds its data (a heap overflow reading a loaded tensor, found by the
// same fuzzer). No torch include: the check reads bytes only.
#ifndef DPLACE_IO_PICKLE_CHECK_H_
#define DPLACE_IO_PICKLE_CHECK_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace dplace {

// The first problem of `pickle` as a pickle an OutputArchive writes, empty
// when none. Runs the opcodes such a pickle uses on a stack of value kinds
// (a global, a tuple, a list, a dict, anything else) with its marks and
// memo, and refuses: any other opcode; a string, bytes or argument running
// past the end; an opcode needing more values above the innermost mark than
// there are, or values of other kinds (REDUCE and NEWOBJ take a global and
// a tuple, BINPERSID a tuple, APPEND(S) a list, SETITEM(S) a dict); a memo
// index read before it is written or above the record's size (the
// Unpickler reserves twice the index); and an end other than STOP with one
// value and no mark. A BINPERSID must load a ('storage', torch.<T>Storage,
// key, location, size) tuple whose `size` elements of T fit in the record
// `key` of `records`.
using RecordSizes = std::unordered_map<std::string, uint64_t>;
std::string PickleProblem(std::string_view pickle,
                          const RecordSizes& records = {});

}  // namespace dplace

#endif  // DPLACE_IO_PICKLE_CHECK_H_
