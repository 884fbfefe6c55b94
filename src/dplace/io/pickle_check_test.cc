#include "dplace/io/pickle_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace dplace {
namespace {

using ::testing::IsEmpty;

// A pickle from a literal, embedded zero bytes included.
template <size_t N>
std::string P(const char (&bytes)[N]) {
  return std::string(bytes, N - 1);
}

// What an OutputArchive writes for a module with one attribute, in small:
// PROTO 2, GLOBAL, BINPUT 0, EMPTY_TUPLE, NEWOBJ, EMPTY_DICT, MARK,
// BINUNICODE "a", BININT1 1, SETITEMS, BUILD, STOP.
const std::string kModule =
    P("\x80\x02"
      "c__torch__\nModule\n"
      "q\x00"
      ")\x81}("
      "X\x01\x00\x00\x00"
      "aK\x01ub.");

// A tensor: a global memoised, popped and fetched again by BINGET, then
// REDUCE of it with a tuple of the persistent id: MARK, 'storage', the
// storage type, key '0', 'cpu', 2 elements, TUPLE, BINPERSID, TUPLE1.
const std::string kTensor =
    P("ctorch._utils\n_rebuild_tensor_v2\nq\x01"
      "0h\x01("
      "X\x07\x00\x00\x00storage"
      "ctorch\nFloatStorage\n"
      "X\x01\x00\x00\x00"
      "0"
      "X\x03\x00\x00\x00"
      "cpu"
      "K\x02tQ\x85R.");

TEST(PickleCheckTest, AcceptsWhatAnOutputArchiveWrites) {
  EXPECT_THAT(PickleProblem(kModule), IsEmpty());
  EXPECT_THAT(PickleProblem(kTensor, {{"0", 8}}), IsEmpty());
}

// The checkpoint fuzzer's second finding in LibTorch: a storage's size
// or key changed in data.pkl. The Unpickler sizes the storage by the
// pickle and gives it the record's data, however short; reading the tensor
// ran past it.
TEST(PickleCheckTest, RefusesAStorageItsRecordCannotHold) {
  EXPECT_EQ(PickleProblem(kTensor, {{"0", 7}}),
            "BINPERSID at byte 88: storage 0 of 2 elements (8 bytes) is "
            "larger than its record (7 bytes)");
  EXPECT_EQ(PickleProblem(kTensor),
            "BINPERSID at byte 88: storage 0 has no record");
  std::string other_type = kTensor;
  other_type.replace(other_type.find("Float"), 5, "Qint8");
  EXPECT_EQ(PickleProblem(other_type, {{"0", 8}}),
            "BINPERSID at byte 88: storage type torch.Qint8Storage is not "
            "one a checkpoint holds");
  std::string negative = kTensor;
  negative.replace(negative.find("K\x02"), 2, P("J\xfe\xff\xff\xff"));
  EXPECT_EQ(PickleProblem(negative, {{"0", 8}}),
            "BINPERSID at byte 91: storage size -2 is out of range");
  std::string no_key = kTensor;
  no_key.replace(no_key.find("X\x01"), 6, P("K\x00"));
  EXPECT_EQ(PickleProblem(no_key, {{"0", 8}}),
            "BINPERSID at byte 84 of a tuple other than ('storage', type, "
            "key, location, size)");
}

// The checkpoint fuzzer's open finding: NEWOBJ after a MARK where the
// empty tuple was. LibTorch 1.13's Unpickler popped past its stack and
// freed what it had not allocated.
TEST(PickleCheckTest, RefusesAnOpcodeThatPopsPastItsMark) {
  std::string mutated = kModule;
  mutated[22] = '(';
  EXPECT_EQ(PickleProblem(mutated),
            "NEWOBJ at byte 23 needs 2 values above its mark, the stack "
            "holds 0");
}

TEST(PickleCheckTest, RefusesValuesOfTheWrongKind) {
  EXPECT_EQ(PickleProblem(P("K\x01)R.")),
            "REDUCE at byte 3 needs a global where it finds a value");
  EXPECT_EQ(PickleProblem("cm\nf\nK\x01Q."),
            "BINPERSID at byte 7 needs a tuple where it finds a value");
  EXPECT_EQ(PickleProblem("}(K\x01u."),
            "SETITEMS at byte 4 of an odd number of values");
  EXPECT_EQ(PickleProblem("](K\x01K\x02u."),
            "SETITEMS at byte 6 needs a dict below its mark");
  EXPECT_EQ(PickleProblem("}(K\x01"
                          "e."),
            "APPENDS at byte 4 needs a list below its mark");
}

TEST(PickleCheckTest, RefusesBadLengthsAndMemoIndices) {
  EXPECT_EQ(PickleProblem(P("X\xff\xff\xff\x00")),
            "a string of 16777215 bytes runs past the end");
  EXPECT_EQ(PickleProblem(P("}r\x00\x00\x00\x10.")),
            "memo index 268435456 beyond the record");
  EXPECT_EQ(PickleProblem(P("h\x05.")),
            "BINGET at byte 0 of memo index 5, never written");
  EXPECT_EQ(PickleProblem(P("q\x00.")), "BINPUT at byte 0 on an empty stack");
}

TEST(PickleCheckTest, RefusesOtherOpcodesAndBadEnds) {
  EXPECT_EQ(PickleProblem("I1\n."),
            "opcode 0x49 at byte 0 is not one an OutputArchive writes");
  EXPECT_EQ(PickleProblem("}"), "ends without STOP");
  EXPECT_EQ(PickleProblem("}}."),
            "STOP at byte 2 with 2 values and 0 open marks (expected one "
            "value, no mark)");
  EXPECT_EQ(PickleProblem("t."), "TUPLE at byte 0 without a MARK");
}

// Every proper prefix of a good pickle is refused: none ends in STOP.
TEST(PickleCheckTest, RefusesEveryTruncation) {
  for (size_t n = 0; n < kModule.size(); ++n) {
    EXPECT_THAT(PickleProblem(kModule.substr(0, n)), testing::Not(IsEmpty()))
        << "prefix of " << n << " bytes";
  }
}

}  // namespace
}  // namespace dplace
