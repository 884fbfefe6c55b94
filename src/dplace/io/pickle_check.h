// A check of the pickles inside a search checkpoint (a LibTorch archive)
// before LibTorch's Unpickler reads them. LibTorch 1.13's Unpickler trusts
// its input: a length past the record makes it reserve gigabytes, and an
// opcode that pops more than the stack holds reads past its stack (an
// invalid free inside torch::jit::import_ir_module, found by the checkpoint
// fuzzer). No torch include: the check reads bytes only.
#ifndef DPLACE_IO_PICKLE_CHECK_H_
#define DPLACE_IO_PICKLE_CHECK_H_

#include <string>
#include <string_view>

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
// value and no mark.
std::string PickleProblem(std::string_view pickle);

}  // namespace dplace

#endif  // DPLACE_IO_PICKLE_CHECK_H_
