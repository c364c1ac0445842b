// Internal text helpers shared by the load module's writers (result.cpp, suite.cpp, history.cpp,
// thresholds.cpp).
#pragma once

#include <portico/http/json_text.h>

#include <string>
#include <string_view>

namespace portico::load::detail {

/// Appends `s` as a JSON string literal (quotes, escapes; UTF-8 passes through).
using http::appendJsonString;
/// A number as JSON: shortest round-trip form; non-finite values as 0.
std::string jsonNumber(double v);
/// A duration for people, as the text summary prints it: "850ns", "12.34us", "1.20ms", "2.50s".
std::string durationText(double ns);

} // namespace portico::load::detail
