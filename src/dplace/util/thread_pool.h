// A fixed set of worker threads running index-parallel loops.
#ifndef DPLACE_UTIL_THREAD_POOL_H_
#define DPLACE_UTIL_THREAD_POOL_H_

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace dplace {

// Thread safety: ParallelFor may be called from one thread at a time.
class ThreadPool {
 public:
  // `num_threads` <= 0 means one per hardware thread.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Calls fn(worker, i) for every i in [0, n), spread over the workers
  // (worker in [0, num_threads())), and returns when all calls returned.
  // The calling thread works too, as worker 0.
  void ParallelFor(int n, const std::function<void(int worker, int i)>& fn);

 private:
  void WorkerLoop(int worker);
  void Work(int worker);

  int num_threads_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int, int)>* fn_ = nullptr;  // Guarded by mu_.
  int n_ = 0;
  int next_ = 0;
  int busy_workers_ = 0;
  unsigned generation_ = 0;
  bool stop_ = false;
};

}  // namespace dplace

#endif  // DPLACE_UTIL_THREAD_POOL_H_
