#include "dplace/exec/caching_allocator.h"

#include <c10/core/CPUAllocator.h>
#include <torch/version.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace dplace {
namespace {

// A block of the previous allocator. Its first kHeader bytes point at the
// Block itself, so a pointer handed out finds its block without a shared
// map; the rest is the caller's (aligned as the previous allocator's
// blocks are, to kHeader).
struct Block {
  c10::DataPtr base;
  size_t bytes = 0;    // The caller's.
  uint64_t owner = 0;  // The thread it was handed out on (ThreadId()).
};
constexpr size_t kHeader = 64;

Block* BlockOf(void* data) {
  Block* block = nullptr;
  std::memcpy(&block, static_cast<char*>(data) - kHeader, sizeof block);
  return block;
}

using FreeLists = std::unordered_map<size_t, std::vector<Block*>>;

struct Stats {
  std::atomic<int64_t> cached_bytes{0};
  std::atomic<int64_t> in_use_bytes{0};
  std::atomic<int64_t> reused{0};
  std::atomic<int64_t> fresh{0};
};
Stats stats;

// Freed blocks are kept at two levels. Each thread keeps those it handed
// out and freed itself, without a lock: each device's worker thread
// allocates and frees at every op, and a lock shared by the devices'
// threads would move between their cores at every op of a two-device
// step, a cost of the allocator rather than of the placement. A block
// freed on another thread (a tensor read across devices, the main
// thread's leftovers) goes to a shared pool, under a lock, where any
// thread's next allocation of its size finds it. A thread's blocks join
// the pool when it ends. Blocks are kept for the life of the process.
std::mutex pool_mu;
FreeLists* const pool = new FreeLists;  // Never destroyed, as the blocks.

thread_local bool cache_gone = false;  // Trivial: valid after the cache.
// This thread's number, from 1; 0 after its cache is gone.
uint64_t ThreadId() {
  static std::atomic<uint64_t> next{1};
  thread_local const uint64_t id = next.fetch_add(1);
  return cache_gone ? 0 : id;
}
struct ThreadCache {
  FreeLists free;
  ~ThreadCache() {
    cache_gone = true;
    std::lock_guard<std::mutex> lock(pool_mu);
    for (auto& [bytes, blocks] : free) {
      std::vector<Block*>& pooled = (*pool)[bytes];
      pooled.insert(pooled.end(), blocks.begin(), blocks.end());
    }
  }
};
thread_local ThreadCache cache;

void Keep(FreeLists* lists, Block* block) {
  std::vector<Block*>& blocks = (*lists)[block->bytes];
  blocks.resize(blocks.size() + 1);  // (push_back trips GCC 12's
  blocks.back() = block;             // -Wdangling-pointer here.)
}

// LibTorch 2.3 made Allocator::allocate non-const and added copy_data.
#if TORCH_VERSION_MAJOR > 2 || \
    (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
#define DPLACE_ALLOCATE_CONST
#define DPLACE_ALLOCATOR_HAS_COPY_DATA 1
#else
#define DPLACE_ALLOCATE_CONST const
#define DPLACE_ALLOCATOR_HAS_COPY_DATA 0
#endif

Block* Take(std::vector<Block*>* blocks) {
  Block* block = blocks->back();
  blocks->pop_back();
  return block;
}

class CachingCpuAllocator final : public c10::Allocator {
 public:
  explicit CachingCpuAllocator(c10::Allocator* base) : base_(base) {}

  c10::DataPtr allocate(size_t bytes) DPLACE_ALLOCATE_CONST override {
    if (bytes == 0) return base_->allocate(0);
    Block* block = nullptr;
    const uint64_t mine = ThreadId();
    if (mine != 0) {
      auto it = cache.free.find(bytes);
      if (it != cache.free.end() && !it->second.empty()) {
        block = Take(&it->second);
      }
    }
    if (block == nullptr) {
      std::lock_guard<std::mutex> lock(pool_mu);
      auto it = pool->find(bytes);
      if (it != pool->end() && !it->second.empty()) block = Take(&it->second);
    }
    if (block != nullptr) {
      stats.cached_bytes.fetch_sub(static_cast<int64_t>(bytes),
                                   std::memory_order_relaxed);
      stats.reused.fetch_add(1, std::memory_order_relaxed);
    } else {
      // An allocation failure throws from here, unchanged.
      c10::DataPtr base = base_->allocate(bytes + kHeader);
      block = new Block{std::move(base), bytes, 0};
      std::memcpy(block->base.get(), &block, sizeof block);
      stats.fresh.fetch_add(1, std::memory_order_relaxed);
    }
    block->owner = mine;
    stats.in_use_bytes.fetch_add(static_cast<int64_t>(bytes),
                                 std::memory_order_relaxed);
    void* data = static_cast<char*>(block->base.get()) + kHeader;
    // The context is the data itself, as raw_allocate() users expect.
    return {data, data, &Return, c10::Device(c10::kCPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &Return; }

#if DPLACE_ALLOCATOR_HAS_COPY_DATA
  void copy_data(void* dest, const void* src, size_t count) const override {
    std::memcpy(dest, src, count);
  }
#endif

 private:
  static void Return(void* data) {
    if (data == nullptr) return;  // raw_deleter() users pass what they got.
    Block* const block = BlockOf(data);
    const auto bytes = static_cast<int64_t>(block->bytes);
    stats.in_use_bytes.fetch_sub(bytes, std::memory_order_relaxed);
    stats.cached_bytes.fetch_add(bytes, std::memory_order_relaxed);
    const uint64_t mine = ThreadId();
    if (mine != 0 && block->owner == mine) {
      Keep(&cache.free, block);
      return;
    }
    std::lock_guard<std::mutex> lock(pool_mu);
    Keep(pool, block);
  }

  c10::Allocator* const base_;
};

bool installed = false;

}  // namespace

void UseCachingCpuAllocator() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Never destroyed: tensors may outlive every static destructor.
    static CachingCpuAllocator* const allocator =
        new CachingCpuAllocator(c10::GetCPUAllocator());
    c10::SetCPUAllocator(allocator, /*priority=*/1);
    installed = true;
  });
}

CachingAllocatorStats CachingCpuAllocatorStats() {
  if (!installed) return {};
  CachingAllocatorStats s;
  s.cached_bytes = stats.cached_bytes.load(std::memory_order_relaxed);
  s.in_use_bytes = stats.in_use_bytes.load(std::memory_order_relaxed);
  s.reused = stats.reused.load(std::memory_order_relaxed);
  s.fresh = stats.fresh.load(std::memory_order_relaxed);
  return s;
}

}  // namespace dplace
