#include "dplace/io/pickle_check.h"

#include <cstdint>
#include <cstdio>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dplace {
namespace {

// What the check knows of a value on the Unpickler's stack.
enum class Kind { kGlobal, kTuple, kList, kDict, kOther };

// A value on the stack: its kind, and what a storage tuple needs of it.
struct Value {
  Kind kind = Kind::kOther;
  std::optional<std::string> text;  // A short string, or a global's name.
  std::optional<int64_t> number;    // An integer.
  std::vector<Value> items;         // A small tuple's values, without theirs.
};

Value OfKind(Kind k) {
  Value v;
  v.kind = k;
  return v;
}

// The longest string kept: keys, locations and type names are short.
constexpr size_t kMaxText = 64;

// Bytes per element of a storage type an OutputArchive writes
// (torch.<ScalarType>Storage), 0 for any other name.
uint64_t ElementBytes(const std::string& global) {
  static const std::unordered_map<std::string, uint64_t> bytes = {
      {"torch.FloatStorage", 4}, {"torch.DoubleStorage", 8},
      {"torch.HalfStorage", 2},  {"torch.BFloat16Storage", 2},
      {"torch.LongStorage", 8},  {"torch.IntStorage", 4},
      {"torch.ShortStorage", 2}, {"torch.CharStorage", 1},
      {"torch.ByteStorage", 1},  {"torch.BoolStorage", 1}};
  const auto it = bytes.find(global);
  return it == bytes.end() ? 0 : it->second;
}

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kGlobal:
      return "a global";
    case Kind::kTuple:
      return "a tuple";
    case Kind::kList:
      return "a list";
    case Kind::kDict:
      return "a dict";
    case Kind::kOther:
      break;
  }
  return "a value";
}

// The opcodes' names, for messages.
const char* OpName(uint8_t op) {
  switch (op) {
    case 't':
      return "TUPLE";
    case 'l':
      return "LIST";
    case 'd':
      return "DICT";
    case 'e':
      return "APPENDS";
    case 'u':
      return "SETITEMS";
    case 'a':
      return "APPEND";
    case 's':
      return "SETITEM";
    case 0x85:
      return "TUPLE1";
    case 0x86:
      return "TUPLE2";
    case 0x87:
      return "TUPLE3";
    case 'R':
      return "REDUCE";
    case 0x81:
      return "NEWOBJ";
    case 'b':
      return "BUILD";
    case 'Q':
      return "BINPERSID";
    case '0':
      return "POP";
    case 'q':
    case 'r':
      return "BINPUT";
    case '.':
      return "STOP";
  }
  return "an opcode";
}

class Checker {
 public:
  Checker(std::string_view p, const RecordSizes& records)
      : p_(p), records_(records) {}

  std::string Run() {
    while (pos_ < p_.size()) {
      at_ = pos_;
      const uint8_t op = static_cast<uint8_t>(p_[pos_++]);
      std::string problem = Step(op);
      if (!problem.empty() || stopped_) return problem;
    }
    return "ends without STOP";
  }

 private:
  std::string Step(uint8_t op) {
    switch (op) {
      case 0x80:  // PROTO
        return Skip(1);
      case '(':  // MARK
        marks_.push_back(stack_.size());
        return "";
      case ')':  // EMPTY_TUPLE
        return Push(Kind::kTuple);
      case ']':  // EMPTY_LIST
        return Push(Kind::kList);
      case '}':  // EMPTY_DICT
        return Push(Kind::kDict);
      case 'N':   // NONE
      case 0x88:  // NEWTRUE
      case 0x89:  // NEWFALSE
        return Push(Kind::kOther);
      case 'K':  // BININT1
        return Integer(1, false);
      case 'M':  // BININT2
        return Integer(2, false);
      case 'J':  // BININT
        return Integer(4, true);
      case 'G':  // BINFLOAT
        return SkipAndPush(8);
      case 'U':   // SHORT_BINSTRING
      case 0x8c:  // SHORT_BINUNICODE
        return Counted(1, Payload::kText);
      case 'C':  // SHORT_BINBYTES
        return Counted(1, Payload::kBytes);
      case 0x8a:  // LONG1
        return Counted(1, Payload::kInteger);
      case 'X':  // BINUNICODE
        return Counted(4, Payload::kText);
      case 'B':  // BINBYTES
        return Counted(4, Payload::kBytes);
      case 0x8b:  // LONG4
        return Counted(4, Payload::kInteger);
      case 0x8d:  // BINUNICODE8
        return Counted(8, Payload::kText);
      case 0x8e:  // BINBYTES8
        return Counted(8, Payload::kBytes);
      case 'c': {  // GLOBAL module\nname\n
        std::string name;
        for (int line = 0; line < 2; ++line) {
          const size_t nl = p_.find('\n', pos_);
          if (nl == std::string_view::npos) return "a GLOBAL runs past the end";
          if (nl - pos_ <= kMaxText) {
            name += (line ? "." : "") + std::string(p_.substr(pos_, nl - pos_));
          }
          pos_ = nl + 1;
        }
        Value global = OfKind(Kind::kGlobal);
        global.text = std::move(name);
        return Push(std::move(global));
      }
      case 't':  // TUPLE
        return CollectToMark(op, Kind::kTuple);
      case 'l':  // LIST
        return CollectToMark(op, Kind::kList);
      case 'd':  // DICT
        return CollectToMark(op, Kind::kDict);
      case 'e':  // APPENDS
        return AddToMark(op, Kind::kList);
      case 'u':  // SETITEMS
        return AddToMark(op, Kind::kDict);
      case 'a':  // APPEND
        return Take(op, {Kind::kList, Kind::kOther}, 1, nullptr);
      case 's':  // SETITEM
        return Take(op, {Kind::kDict, Kind::kOther, Kind::kOther}, 2, nullptr);
      case 0x85:    // TUPLE1
      case 0x86:    // TUPLE2
      case 0x87: {  // TUPLE3
        const std::vector<Kind> any(op - 0x84, Kind::kOther);
        static const Kind tuple = Kind::kTuple;
        return Take(op, any, any.size(), &tuple);
      }
      case 'R':     // REDUCE
      case 0x81: {  // NEWOBJ
        static const Kind other = Kind::kOther;
        return Take(op, {Kind::kGlobal, Kind::kTuple}, 2, &other);
      }
      case 'b':  // BUILD
        return Take(op, {Kind::kOther, Kind::kOther}, 1, nullptr);
      case 'Q': {  // BINPERSID
        static const Kind other = Kind::kOther;
        if (!stack_.empty() && stack_.back().kind == Kind::kTuple) {
          std::string problem = Storage(stack_.back());
          if (!problem.empty()) return problem;
        }
        return Take(op, {Kind::kTuple}, 1, &other);
      }
      case '0':  // POP
        return Take(op, {Kind::kOther}, 1, nullptr);
      case 'q':  // BINPUT
        return Put(op, 1);
      case 'r':  // LONG_BINPUT
        return Put(op, 4);
      case 'h':  // BINGET
        return Get(1);
      case 'j':  // LONG_BINGET
        return Get(4);
      case '.':  // STOP
        if (stack_.size() != 1 || !marks_.empty()) {
          return "STOP at byte " + std::to_string(at_) + " with " +
                 std::to_string(stack_.size()) + " values and " +
                 std::to_string(marks_.size()) +
                 " open marks (expected one value, no mark)";
        }
        stopped_ = true;
        return "";
    }
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", op);
    return "opcode " + std::string(hex) + " at byte " + std::to_string(at_) +
           " is not one an OutputArchive writes";
  }

  std::string Push(Kind k) { return Push(OfKind(k)); }

  std::string Push(Value v) {
    stack_.push_back(std::move(v));
    return "";
  }

  // A value as a tuple keeps it: without its own items, its text if short.
  static Value Item(const Value& v) {
    Value item{v.kind, v.text, v.number, {}};
    if (item.text && item.text->size() > kMaxText) item.text.reset();
    return item;
  }

  // The tuple of stack_[from...]; small tuples keep their items.
  Value TupleOf(size_t from) const {
    Value tuple = OfKind(Kind::kTuple);
    if (stack_.size() - from <= 8) {
      for (size_t i = from; i < stack_.size(); ++i) {
        tuple.items.push_back(Item(stack_[i]));
      }
    }
    return tuple;
  }

  // What Unpickler's BINPERSID reads: a tensor's storage, `size` elements
  // of its type from the record `key`, which must hold them.
  std::string Storage(const Value& tuple) const {
    const std::vector<Value>& a = tuple.items;
    const std::string where = Where('Q');
    if (a.size() != 5 || a[0].text != "storage" || a[1].kind != Kind::kGlobal ||
        !a[1].text || !a[2].text || !a[3].text || !a[4].number) {
      return where + " of a tuple other than ('storage', type, key, " +
             "location, size)";
    }
    const uint64_t element = ElementBytes(*a[1].text);
    if (element == 0) {
      return where + ": storage type " + *a[1].text +
             " is not one a checkpoint holds";
    }
    const int64_t size = *a[4].number;
    uint64_t bytes = 0;
    if (size < 0 ||
        __builtin_mul_overflow(static_cast<uint64_t>(size), element, &bytes)) {
      return where + ": storage size " + std::to_string(size) +
             " is out of range";
    }
    if (size == 0) return "";  // The Unpickler reads no record.
    const auto record = records_.find(*a[2].text);
    if (record == records_.end()) {
      return where + ": storage " + *a[2].text + " has no record";
    }
    if (bytes > record->second) {
      return where + ": storage " + *a[2].text + " of " + std::to_string(size) +
             " elements (" + std::to_string(bytes) +
             " bytes) is larger than its record (" +
             std::to_string(record->second) + " bytes)";
    }
    return "";
  }

  std::string Skip(size_t n) {
    if (p_.size() - pos_ < n) return "truncated";
    pos_ += n;
    return "";
  }

  std::string SkipAndPush(size_t n) {
    std::string problem = Skip(n);
    return problem.empty() ? Push(Kind::kOther) : problem;
  }

  // A little-endian unsigned of `n` bytes at pos_, which must fit.
  uint64_t Read(size_t n) {
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;) {
      v = (v << 8) | static_cast<uint8_t>(p_[pos_ + i]);
    }
    pos_ += n;
    return v;
  }

  // An integer of `n` little-endian bytes.
  std::string Integer(size_t n, bool is_signed) {
    if (p_.size() - pos_ < n) return "truncated";
    uint64_t v = Read(n);
    if (is_signed && n < 8 && (v >> (8 * n - 1)) != 0) v |= ~0ull << (8 * n);
    return Push(Value{Kind::kOther, std::nullopt, static_cast<int64_t>(v), {}});
  }

  // A string, bytes or a two's complement integer whose length takes `n`
  // bytes.
  enum class Payload { kText, kBytes, kInteger };
  std::string Counted(size_t n, Payload what) {
    if (p_.size() - pos_ < n) return "truncated";
    const uint64_t length = Read(n);
    if (length > p_.size() - pos_) {
      return "a string of " + std::to_string(length) +
             " bytes runs past the end";
    }
    const size_t start = pos_;
    if (what == Payload::kInteger && length >= 1 && length <= 8) {
      return Integer(length, true);
    }
    pos_ += length;
    Value v;
    if (what == Payload::kText && length <= kMaxText) {
      v.text = std::string(p_.substr(start, length));
    }
    return Push(std::move(v));
  }

  // Values above the innermost mark.
  size_t AboveMark() const {
    return stack_.size() - (marks_.empty() ? 0 : marks_.back());
  }

  std::string Where(uint8_t op) const {
    return std::string(OpName(op)) + " at byte " + std::to_string(at_);
  }

  // Pops `pops` of the values `kinds` names (the deepest first; kOther
  // takes any kind; only the last `pops` are removed), then pushes `push`.
  std::string Take(uint8_t op, const std::vector<Kind>& kinds, size_t pops,
                   const Kind* push) {
    if (AboveMark() < kinds.size()) {
      return Where(op) + " needs " + std::to_string(kinds.size()) +
             " values above its mark, the stack holds " +
             std::to_string(AboveMark());
    }
    const size_t base = stack_.size() - kinds.size();
    for (size_t i = 0; i < kinds.size(); ++i) {
      if (kinds[i] != Kind::kOther && stack_[base + i].kind != kinds[i]) {
        return Where(op) + " needs " + KindName(kinds[i]) + " where it finds " +
               KindName(stack_[base + i].kind);
      }
    }
    Value pushed = OfKind(push ? *push : Kind::kOther);
    if (pushed.kind == Kind::kTuple) pushed = TupleOf(stack_.size() - pops);
    stack_.resize(stack_.size() - pops);
    if (push) stack_.push_back(std::move(pushed));
    return "";
  }

  // TUPLE, LIST, DICT: the values above the innermost mark become one.
  std::string CollectToMark(uint8_t op, Kind k) {
    if (marks_.empty()) return Where(op) + " without a MARK";
    if (k == Kind::kDict && AboveMark() % 2 != 0) {
      return Where(op) + " of an odd number of values";
    }
    Value collected = k == Kind::kTuple ? TupleOf(marks_.back()) : OfKind(k);
    stack_.resize(marks_.back());
    marks_.pop_back();
    return Push(std::move(collected));
  }

  // APPENDS, SETITEMS: the values above the innermost mark go into the
  // list or dict below it.
  std::string AddToMark(uint8_t op, Kind k) {
    if (marks_.empty()) return Where(op) + " without a MARK";
    if (k == Kind::kDict && AboveMark() % 2 != 0) {
      return Where(op) + " of an odd number of values";
    }
    stack_.resize(marks_.back());
    marks_.pop_back();
    if (AboveMark() < 1 || stack_.back().kind != k) {
      return Where(op) + " needs " + KindName(k) + " below its mark";
    }
    return "";
  }

  std::string Put(uint8_t op, size_t n) {
    if (p_.size() - pos_ < n) return "truncated";
    const uint64_t index = Read(n);
    if (index > p_.size()) {
      return "memo index " + std::to_string(index) + " beyond the record";
    }
    if (stack_.empty()) return Where(op) + " on an empty stack";
    memo_[index] = stack_.back();
    return "";
  }

  std::string Get(size_t n) {
    if (p_.size() - pos_ < n) return "truncated";
    const uint64_t index = Read(n);
    const auto it = memo_.find(index);
    if (it == memo_.end()) {
      return "BINGET at byte " + std::to_string(at_) + " of memo index " +
             std::to_string(index) + ", never written";
    }
    return Push(it->second);
  }

  std::string_view p_;
  size_t pos_ = 0;
  size_t at_ = 0;  // The current opcode's byte.
  bool stopped_ = false;
  const RecordSizes& records_;
  std::vector<Value> stack_;
  std::vector<size_t> marks_;  // Stack sizes at each open MARK.
  std::unordered_map<uint64_t, Value> memo_;
};

}  // namespace

std::string PickleProblem(std::string_view pickle, const RecordSizes& records) {
  return Checker(pickle, records).Run();
}

}  // namespace dplace
