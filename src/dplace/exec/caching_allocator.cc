#include "dplace/exec/caching_allocator.h"

#include <c10/core/CPUAllocator.h>

#include <mutex>
#include <unordered_map>
#include <vector>

namespace dplace {
namespace {

// A block of the previous allocator, kept for the life of the process.
struct Block {
  c10::DataPtr base;
  size_t bytes = 0;
};

class CachingCpuAllocator final : public c10::Allocator {
 public:
  explicit CachingCpuAllocator(c10::Allocator* base) : base_(base) {}

  c10::DataPtr allocate(size_t bytes) const override {
    if (bytes == 0) return base_->allocate(0);
    std::unique_lock<std::mutex> lock(mu_);
    Block* block = nullptr;
    auto it = free_.find(bytes);
    if (it != free_.end() && !it->second.empty()) {
      block = it->second.back();
      it->second.pop_back();
      stats_.cached_bytes -= static_cast<int64_t>(bytes);
      ++stats_.reused;
    } else {
      lock.unlock();
      // An allocation failure throws from here, unchanged.
      c10::DataPtr base = base_->allocate(bytes);
      block = new Block{std::move(base), bytes};
      lock.lock();
      ++stats_.fresh;
    }
    stats_.in_use_bytes += static_cast<int64_t>(bytes);
    void* data = block->base.get();
    in_use_[data] = block;
    // The context is the data itself, as raw_allocate() users expect.
    return {data, data, &Return, c10::Device(c10::kCPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &Return; }

  CachingAllocatorStats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

  static CachingCpuAllocator* instance;

 private:
  static void Return(void* data) {
    if (data == nullptr) return;  // raw_deleter() users pass what they got.
    std::lock_guard<std::mutex> lock(instance->mu_);
    auto it = instance->in_use_.find(data);
    if (it == instance->in_use_.end()) return;  // Never handed out here.
    Block* block = it->second;
    instance->in_use_.erase(it);
    instance->free_[block->bytes].push_back(block);
    instance->stats_.cached_bytes += static_cast<int64_t>(block->bytes);
    instance->stats_.in_use_bytes -= static_cast<int64_t>(block->bytes);
  }

  c10::Allocator* const base_;
  mutable std::mutex mu_;
  mutable std::unordered_map<size_t, std::vector<Block*>> free_;
  mutable std::unordered_map<void*, Block*> in_use_;
  mutable CachingAllocatorStats stats_;
};

CachingCpuAllocator* CachingCpuAllocator::instance = nullptr;

}  // namespace

void UseCachingCpuAllocator() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Never destroyed: tensors may outlive every static destructor.
    CachingCpuAllocator::instance =
        new CachingCpuAllocator(c10::GetCPUAllocator());
    c10::SetCPUAllocator(CachingCpuAllocator::instance, /*priority=*/1);
  });
}

CachingAllocatorStats CachingCpuAllocatorStats() {
  if (CachingCpuAllocator::instance == nullptr) return {};
  return CachingCpuAllocator::instance->stats();
}

}  // namespace dplace
