// Wall-clock time for what smezo reports (start-up phases, steps/s, a command's seconds): the
// steady clock, in seconds, written once.
#pragma once

#include <chrono>

namespace smezo {

using SteadyClock = std::chrono::steady_clock;

// Seconds from t until now.
inline double seconds_since(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

// Started when made; seconds() since then.
class Stopwatch {
 public:
  double seconds() const { return seconds_since(start_); }

 private:
  SteadyClock::time_point start_ = SteadyClock::now();
};

}  // namespace smezo
