// How accuracies and losses print in text: 4 decimals; losses outside [1e-3, 1e4) as %.3e. And a float
// exactly, as its bits (the logs' thresholds).
#pragma once

#include <string>

namespace smezo {

// "0.8125"; "-" for none (negative or not finite: "not measured").
std::string format_accuracy(double fraction);
// "0.6931", "1.235e+05", "nan", "inf".
std::string format_loss(double loss);
// "3c0ccccd": the f32's bits in hex, so that it reads back bit for bit.
std::string float_hex_bits(float f);

}  // namespace smezo
