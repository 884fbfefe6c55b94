// A caching CPU allocator for real execution.
//
// Every training step allocates and frees the same tensors. glibc's malloc
// hands large freed blocks back to the kernel (munmap, heap trimming,
// deleting whole per-thread heaps), so the next step faults their pages in
// again: a cost of the allocator rather than of the placement, and one
// that varies with which thread frees what (docs/execution.md, "Memory").
// Frameworks avoid this with caching allocators (TensorFlow's BFC
// allocator, PyTorch's CUDA caching allocator); this one keeps freed CPU
// blocks in free lists by exact size and hands them out again, so steps
// after the first fault in almost no pages. Each thread keeps the blocks
// it handed out and freed itself, without a lock, so two devices' threads
// do not pass a lock between their cores at every op; blocks freed on
// another thread go to a shared pool.
//
// Thread safety: all functions may be called from any thread.
#ifndef DPLACE_EXEC_CACHING_ALLOCATOR_H_
#define DPLACE_EXEC_CACHING_ALLOCATOR_H_

#include <cstdint>

namespace dplace {

// Makes the caching allocator LibTorch's CPU allocator for the rest of the
// process (allocations go to the previous allocator when no freed block of
// their size is cached). Idempotent.
void UseCachingCpuAllocator();

struct CachingAllocatorStats {
  int64_t cached_bytes = 0;  // Freed, kept for reuse.
  int64_t in_use_bytes = 0;  // Handed out, not yet freed.
  int64_t reused = 0;        // Allocations served from the cache.
  int64_t fresh = 0;         // Allocations passed to the previous allocator.
};
CachingAllocatorStats CachingCpuAllocatorStats();

}  // namespace dplace

#endif  // DPLACE_EXEC_CACHING_ALLOCATOR_H_
