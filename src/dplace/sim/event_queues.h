// The queues the simulator's event loop (simulator.cc) drains: its pending
// events, earliest first, and FIFOs of ids (a link channel's transfers, a
// device's ready ops). Internal to the simulator; apart so that the loop
// reads as one algorithm.
#ifndef DPLACE_SIM_EVENT_QUEUES_H_
#define DPLACE_SIM_EVENT_QUEUES_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace dplace::sim_detail {

enum EventType : uint32_t {
  kOpDone = 0,
  kHopDone = 1,
  kControlArrival = 2,
  kHopHandedOff = 3,  // A hop reaches its copying destination's queue.
};

// 16 bytes: the time, then insertion order, type and id packed so that
// comparing `key` breaks ties by insertion order (deterministic). Times are
// never negative, so their bits order as the times do, and an event's place
// in the queue is one 128-bit number (one branch-free comparison).
struct Event {
  double time;
  uint64_t key;  // seq << 32 | type << 30 | id.

  EventType type() const { return static_cast<EventType>((key >> 30) & 3); }
  int32_t id() const { return static_cast<int32_t>(key & 0x3fffffff); }
  unsigned __int128 order() const {
    uint64_t bits;
    std::memcpy(&bits, &time, sizeof bits);
    return static_cast<unsigned __int128>(bits) << 64 | key;
  }
};

// Pending events, earliest first: a 4-ary min-heap (half the depth of a
// binary one; the four children of a node share a cache line).
class EventQueue {
 public:
  bool empty() const { return heap_.empty(); }
  void clear() { heap_.clear(); }

  void Push(const Event& e) {
    const unsigned __int128 order = e.order();
    size_t hole = heap_.size();
    heap_.push_back(e);
    while (hole > 0) {
      const size_t parent = (hole - 1) / 4;
      if (heap_[parent].order() <= order) break;
      heap_[hole] = heap_[parent];
      hole = parent;
    }
    heap_[hole] = e;
  }

  Event Pop() {
    const Event top = heap_[0];
    const Event last = heap_.back();
    heap_.pop_back();
    const size_t n = heap_.size();
    if (n == 0) return top;
    const unsigned __int128 order = last.order();
    size_t hole = 0;
    for (;;) {
      const size_t first = 4 * hole + 1;
      if (first >= n) break;
      size_t best = first;
      unsigned __int128 best_order = heap_[first].order();
      const size_t end = std::min(first + 4, n);
      for (size_t c = first + 1; c < end; ++c) {
        const unsigned __int128 o = heap_[c].order();
        if (o < best_order) {
          best = c;
          best_order = o;
        }
      }
      if (order <= best_order) break;
      heap_[hole] = heap_[best];
      hole = best;
    }
    heap_[hole] = last;
    return top;
  }

 private:
  std::vector<Event> heap_;
};

// A FIFO of ids: a link channel's queue (transfers) or a device's ready
// queue (ops, and transfers t as -t - 1 on links the destination copies,
// which go to the front).
struct Fifo {
  std::vector<int32_t> items;
  size_t head = 0;
  bool empty() const { return head == items.size(); }
  int32_t Pop() { return items[head++]; }
  void Push(int32_t x) { items.push_back(x); }
  void PushFront(int32_t x) {
    if (head == 0) {
      // Room in front for as many items as the queue holds (at least 8),
      // so that a run of front pushes costs O(1) each, amortized.
      const size_t room = std::max<size_t>(8, items.size());
      items.insert(items.begin(), room, 0);
      head = room;
    }
    items[--head] = x;
  }
  void Clear() {
    items.clear();
    head = 0;
  }
  // Copies the queued items only (the consumed ones stay behind).
  void CopyFrom(const Fifo& o) {
    items.assign(o.items.begin() + static_cast<ptrdiff_t>(o.head),
                 o.items.end());
    head = 0;
  }
};

}  // namespace dplace::sim_detail

#endif  // DPLACE_SIM_EVENT_QUEUES_H_
