// How accuracies and losses print, everywhere text shows them (the progress line, the
// end-of-run line, smezo eval): 4 decimals. Losses outside [1e-3, 1e4) switch to scientific
// notation with 3 decimals so they keep their digits. JSON files hold the full values.
#pragma once

#include <string>

namespace smezo {

// "0.8125"; "-" for none (negative or not finite: "not measured").
std::string format_accuracy(double fraction);
// "0.6931", "1.235e+05", "nan", "inf".
std::string format_loss(double loss);

}  // namespace smezo
