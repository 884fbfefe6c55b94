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

TEST(PickleCheckTest, AcceptsWhatAnOutputArchiveWrites) {
  EXPECT_THAT(PickleProblem(kModule), IsEmpty());
  // A tensor: a global memoised, popped and fetched again by BINGET, then
  // REDUCE of it with a tuple of the persistent id (MARK ... TUPLE,
  // BINPERSID, TUPLE1).
  EXPECT_THAT(PickleProblem(P("cm\nf\nq\x01"
                              "0h\x01(X\x01\x00\x00\x00"
                              "0K\x02tQ\x85R.")),
              IsEmpty());
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
