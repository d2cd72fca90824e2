// How accuracies and losses print in text: 4 decimals; losses outside [1e-3, 1e4) as %.3e.
#pragma once

#include <string>

namespace smezo {

// "0.8125"; "-" for none (negative or not finite: "not measured").
std::string format_accuracy(double fraction);
// "0.6931", "1.235e+05", "nan", "inf".
std::string format_loss(double loss);

}  // namespace smezo
