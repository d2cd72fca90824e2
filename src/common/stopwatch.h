// Wall-clock seconds for what smezo reports, from the steady clock.
#pragma once

#include <chrono>

namespace smezo {

using SteadyClock = std::chrono::steady_clock;

inline double seconds_since(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

class Stopwatch {
 public:
  double seconds() const { return seconds_since(start_); }

 private:
  SteadyClock::time_point start_ = SteadyClock::now();
};

}  // namespace smezo
