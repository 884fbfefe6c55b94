#include "dplace/util/thread_pool.h"

#include <algorithm>

namespace dplace {

ThreadPool::ThreadPool(int num_threads)
    : num_threads_(num_threads > 0
                       ? num_threads
                       : std::max(1u, std::thread::hardware_concurrency())) {
  for (int w = 1; w < num_threads_; ++w) {
    threads_.emplace_back([this, w] { WorkerLoop(w); });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ThreadPool::Work(int worker) {
  while (true) {
    int i;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (next_ >= n_) return;
      i = next_++;
    }
    (*fn_)(worker, i);
  }
}

void ThreadPool::WorkerLoop(int worker) {
  unsigned seen = 0;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      ++busy_workers_;
    }
    Work(worker);
    {
      std::lock_guard<std::mutex> lock(mu_);
      --busy_workers_;
    }
    done_cv_.notify_one();
  }
}

void ThreadPool::ParallelFor(int n, const std::function<void(int, int)>& fn) {
  if (n <= 0) return;
  if (num_threads_ == 1 || n == 1) {
    for (int i = 0; i < n; ++i) fn(0, i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    n_ = n;
    next_ = 0;
    ++generation_;
  }
  start_cv_.notify_all();
  Work(0);
  std::unique_lock<std::mutex> lock(mu_);
  // Every index is taken; wait until workers finished the ones they took.
  done_cv_.wait(lock, [&] { return busy_workers_ == 0; });
  fn_ = nullptr;
}

}  // namespace dplace
