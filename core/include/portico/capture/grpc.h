// gRPC messages of captured calls: splitting a call's byte stream into its Length-Prefixed-Messages
// (gRPC over HTTP/2, PROTOCOL-HTTP2.md), and showing a message as JSON (with the route's
// FileDescriptorSet, libprotobuf) or as raw protobuf fields (the protobuf wire format, like
// `protoc --decode_raw`). Decoding is for readers (inspector, HAR, CLI), never on the server's path.
#pragma once

#include <portico/capture/exchange.h>
#include <portico/config/config.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace portico::capture {

/// Splits one direction of a gRPC call into messages as its bytes arrive, in pieces of any size (a
/// message, or its 5-byte prefix, split across DATA frames). Each message is 1 byte Compressed-Flag,
/// 4 bytes big-endian Message-Length, then Message-Length bytes. Keeps at most `keep` bytes of a
/// message's payload, whatever its length says: memory is bounded by `keep` + 5 bytes.
class GrpcMessageSplitter {
public:
    explicit GrpcMessageSplitter(std::size_t keep = 0) : keep_(keep) {}

    /// Feeds `bytes`; calls `onMessage(std::uint8_t flag, std::uint32_t length, std::string_view
    /// prefix)` for every message completed by them (prefix = the first min(keep, length) bytes).
    template <class F> void feed(std::string_view bytes, F&& onMessage) {
        while (!bytes.empty()) {
            if (headerHave_ < 5) {
                const std::size_t n = std::min<std::size_t>(5 - headerHave_, bytes.size());
                std::copy_n(bytes.data(), n, header_ + headerHave_);
                headerHave_ += n;
                bytes.remove_prefix(n);
                if (headerHave_ < 5) return;
                length_ = (std::uint32_t{static_cast<unsigned char>(header_[1])} << 24) |
                          (std::uint32_t{static_cast<unsigned char>(header_[2])} << 16) |
                          (std::uint32_t{static_cast<unsigned char>(header_[3])} << 8) |
                          std::uint32_t{static_cast<unsigned char>(header_[4])};
                got_ = 0;
                prefix_.clear();
            }
            const std::size_t n =
                static_cast<std::size_t>(std::min<std::uint64_t>(length_ - got_, bytes.size()));
            if (prefix_.size() < keep_) prefix_.append(bytes.data(), std::min(n, keep_ - prefix_.size()));
            got_ += n;
            bytes.remove_prefix(n);
            if (got_ == length_) {
                headerHave_ = 0;
                onMessage(static_cast<std::uint8_t>(header_[0]), length_, std::string_view(prefix_));
            }
        }
    }
    /// True when the bytes so far end inside a message (or inside its 5-byte prefix).
    bool midMessage() const { return headerHave_ > 0; }
    /// The message in progress: Compressed-Flag (0 while the prefix is incomplete), Message-Length
    /// (0 while the prefix is incomplete), bytes received, the kept prefix.
    std::uint8_t pendingFlag() const { return headerHave_ >= 1 ? static_cast<std::uint8_t>(header_[0]) : 0; }
    std::uint32_t pendingLength() const { return headerHave_ == 5 ? length_ : 0; }
    std::uint64_t pendingReceived() const { return headerHave_ == 5 ? got_ : 0; }
    std::string_view pendingPrefix() const {
        return headerHave_ == 5 ? std::string_view(prefix_) : std::string_view();
    }

private:
    std::size_t keep_;
    char header_[5] = {};
    std::size_t headerHave_ = 0;
    std::uint32_t length_ = 0;
    std::uint64_t got_ = 0;
    std::string prefix_;
};

/// The protobuf wire format (https://protobuf.dev/programming-guides/encoding/) of `bytes` as text
/// in `protoc --decode_raw`'s layout: one `NUMBER: VALUE` line per field (varints in decimal,
/// fixed64/fixed32 as 0x%016x/0x%08x, length-delimited fields as a nested `NUMBER { ... }` block when
/// they parse as a message, else as a C-escaped quoted string; groups as blocks), two spaces per
/// level; length-delimited fields more than 10 levels down print as strings, as protoc's do. Returns false
/// (and `out` holds what was decoded before the error, then a line `error: ...` with the byte offset) for
/// bytes that are not a message.
bool protobufRawText(std::string_view bytes, std::string& out);

/// A FileDescriptorSet (`protoc --include_imports --descriptor_set_out=FILE`) loaded with
/// libprotobuf. Immutable once loaded; safe to share between threads.
class GrpcSchema {
public:
    /// Reads and parses `path`; null with `error` ("cannot read FILE: ...", "FILE: not a
    /// FileDescriptorSet", "FILE: foo.proto: ...") on failure.
    static std::shared_ptr<const GrpcSchema> load(const std::string& path, std::string& error);
    /// Same from the file's bytes (`name` for messages).
    static std::shared_ptr<const GrpcSchema> parse(std::string_view bytes, const std::string& name,
                                                   std::string& error);
    ~GrpcSchema();
    /// Full names of the message types of `path` ("/pkg.Service/Method", ":path" of the call):
    /// input and output; false when the service or method is not in the set.
    bool methodTypes(std::string_view path, std::string& input, std::string& output) const;
    /// The message of type `typeName` in `bytes` as JSON (proto3 JSON mapping, field names as in the
    /// .proto); false with `error` when the type is unknown or the bytes do not parse as it.
    bool toJson(const std::string& typeName, std::string_view bytes, std::string& json,
                std::string& error) const;

    struct Impl;

private:
    explicit GrpcSchema(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

/// Loaded descriptor sets by file, reloaded when a file changes (size or mtime). Thread-safe.
class GrpcSchemaCache {
public:
    /// The set in `path`; null (and `error`) when it does not load.
    std::shared_ptr<const GrpcSchema> get(const std::string& path, std::string* error = nullptr);
    /// The `descriptor_set` of the `grpc:` route `call` went to, found in `config` by the record's
    /// vhost and route labels (so a route renamed or removed since has none); null when there is none.
    std::shared_ptr<const GrpcSchema> forCall(const config::Config& config, const Exchange& call,
                                              std::string* error = nullptr);

private:
    struct Entry {
        std::int64_t mtimeNs = 0;
        std::int64_t size = -1;
        std::shared_ptr<const GrpcSchema> schema;
        std::string error;
    };
    std::mutex mutex_;
    std::map<std::string, Entry> entries_;
};

/// How one gRPC message reads.
struct GrpcMessageText {
    enum class Kind : std::uint8_t {
        Json, ///< decoded with the schema: `text` is JSON, `type` its message type
        Raw,  ///< raw protobuf fields (`protobufRawText`): no schema, or the schema failed (`note` says why)
        Compressed, ///< Compressed-Flag 1: not decoded (`grpc-encoding` of the call)
        Malformed,  ///< not a protobuf message, a bad Compressed-Flag or a message cut short: `note` says
    };
    Kind kind = Kind::Raw;
    std::string text;
    std::string type; ///< "pkg.HelloRequest" (Json)
    std::string note; ///< why it is not JSON, or "" ("prefix only: 64 of 300 bytes")
};

/// Decodes message `m` of call `call` (its `:path` picks the method; `m.fromClient` the input or
/// output type) with `schema` (may be null: raw view). Never throws; a message whose kept bytes are
/// only a prefix (`data.size() < size`) is decoded raw as far as it goes and says so.
GrpcMessageText describeGrpcMessage(const Exchange& call, const Message& m, const GrpcSchema* schema);

} // namespace portico::capture
