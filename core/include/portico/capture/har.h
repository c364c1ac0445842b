// HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/, the W3C "HTTP Archive" draft) export
// and import of captured exchanges.
//
// Export: every required field; UTF-8 output; `timings` in milliseconds (microsecond precision)
// with -1 for what does not apply (`blocked`, `dns` always; `connect`/`ssl` except on the first
// exchange of a TLS connection, where connect = ssl = the TLS handshake); `send`, `wait`,
// `receive` ≥ 0; `time` = the sum of the non-negative timings except `ssl` (which is inside
// `connect`). Bodies that are not valid UTF-8 are base64 (`content.encoding: "base64"`; for
// requests `postData._encoding: "base64"`). Server data HAR has no field for is under
// `entry._portico` (ids, vhost, route, TLS, the full nanosecond timeline, sizes, truncation).
//
// Import: files written by Chrome, Firefox, HTTP Toolkit, mitmproxy and Portico; optional fields
// may be missing; timings are mapped back onto a synthetic timeline starting at
// startedDateTime (flag kImported), or restored exactly from `_portico`.
#pragma once

#include <portico/capture/exchange.h>
#include <portico/capture/grpc.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace portico::capture {

struct HarOptions {
    std::string creatorName = "Portico";
    std::string creatorVersion; ///< default: the library version
    bool pretty = true;         ///< indented output
    /// gRPC calls: add `_decoded` (how each message reads: JSON with a schema, else raw fields) to
    /// every entry of `_grpcMessages`.
    bool decodeGrpc = true;
    /// The descriptor set to decode a call's messages with (null or unset: raw protobuf fields).
    std::function<const GrpcSchema*(const Exchange&)> grpcSchema;
};

/// The HAR document for `exchanges` (UTF-8 JSON text).
std::string toHar(const std::vector<Exchange>& exchanges, const HarOptions& options = {});

struct HarImport {
    std::vector<Exchange> exchanges;   ///< ids 0 (assigned by the store or caller)
    std::vector<std::string> warnings; ///< "entries[2]: no timings; shown as n/a"
    /// "" or the reason the file was refused, with its position: "12:5: syntax error: ..." (line:column,
    /// 1-based) for malformed JSON, "log.entries[3].request: ..." for a wrong shape.
    std::string error;
    bool ok() const { return error.empty(); }
};

/// Parses a HAR document. Never throws.
HarImport fromHar(std::string_view text);

/// Milliseconds of HAR `timings` for one exchange (as exported): -1 = not applicable.
struct HarTimings {
    double blocked = -1, dns = -1, connect = -1, send = 0, wait = 0, receive = 0, ssl = -1;
    double total() const; ///< sum of the non-negative values except ssl
};
HarTimings harTimings(const Exchange& e);

/// True if `s` is valid UTF-8.
bool isUtf8(std::string_view s);
std::string base64Encode(std::string_view bytes);
/// Decodes standard base64 (padding optional, whitespace ignored); false on other characters.
bool base64Decode(std::string_view text, std::string& out);

} // namespace portico::capture
