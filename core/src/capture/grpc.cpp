// gRPC messages for readers: the raw protobuf view (`protoc --decode_raw`'s text) and JSON through a
// FileDescriptorSet (libprotobuf's DescriptorPool, DynamicMessageFactory, MessageToJsonString).
#include <portico/capture/grpc.h>
#include <portico/http/json_text.h>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/descriptor_database.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/util/json_util.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <sys/stat.h>
#include <vector>

namespace portico::capture {

// ---- raw wire format ----

namespace {

// CodedInputStream's default recursion limit (groups of the message itself), and the text printer's
// limit for unknown fields (kUnknownFieldRecursionLimit): deeper length-delimited fields print as
// strings, as protoc --decode_raw prints them.
constexpr int kRecursionBudget = 100;
constexpr int kPrintBudget = 10;

struct RawField {
    std::uint32_t number = 0;
    std::uint8_t wireType = 0; // 0 varint, 1 fixed64, 2 length-delimited, 3 group, 5 fixed32
    std::uint64_t value = 0;   // varint, fixed64, fixed32
    std::string_view bytes;    // length-delimited
    std::vector<RawField> group;
};

struct RawParser {
    std::string_view in;
    std::size_t pos = 0;
    std::string error;

    bool varint(std::uint64_t& v) {
        v = 0;
        for (int i = 0; i < 10; ++i) {
            if (pos >= in.size()) return fail("varint runs past the end");
            const auto b = static_cast<unsigned char>(in[pos++]);
            v |= std::uint64_t{b & 0x7fu} << (7 * i);
            if (!(b & 0x80)) return true;
        }
        return fail("varint longer than 10 bytes");
    }
    bool fail(std::string what) {
        if (error.empty()) error = std::move(what) + " at byte " + std::to_string(pos);
        return false;
    }
    // Fields until the end (endGroup 0) or the END_GROUP of field `endGroup`.
    bool fields(std::vector<RawField>& out, std::uint32_t endGroup, int budget) {
        while (pos < in.size()) {
            const std::size_t at = pos;
            std::uint64_t tag = 0;
            if (!varint(tag)) return false;
            if (tag > 0xffffffffu) {
                pos = at;
                return fail("tag out of range");
            }
            const auto number = static_cast<std::uint32_t>(tag >> 3);
            const auto type = static_cast<std::uint8_t>(tag & 7);
            if (number == 0) {
                pos = at;
                return fail("field number 0");
            }
            if (type == 4) {
                if (number == endGroup) return true;
                pos = at;
                return fail("unexpected end-group tag");
            }
            RawField f;
            f.number = number;
            f.wireType = type;
            switch (type) {
            case 0:
                if (!varint(f.value)) return false;
                break;
            case 1:
            case 5: {
                const std::size_t n = type == 1 ? 8 : 4;
                if (in.size() - pos < n) return fail("fixed-size field runs past the end");
                for (std::size_t i = 0; i < n; ++i)
                    f.value |= std::uint64_t{static_cast<unsigned char>(in[pos + i])} << (8 * i);
                pos += n;
                break;
            }
            case 2: {
                std::uint64_t len = 0;
                if (!varint(len)) return false;
                if (len > 0x7fffffffu || len > in.size() - pos)
                    return fail("length-delimited field runs past the end");
                f.bytes = in.substr(pos, static_cast<std::size_t>(len));
                pos += static_cast<std::size_t>(len);
                break;
            }
            case 3:
                if (budget <= 0) return fail("groups nested too deep");
                if (!fields(f.group, number, budget - 1)) return false;
                break;
            default:
                pos = at;
                return fail("wire type " + std::to_string(type));
            }
            out.push_back(std::move(f));
        }
        if (endGroup) return fail("group " + std::to_string(endGroup) + " not ended");
        return true;
    }
};

bool parseRaw(std::string_view bytes, int budget, std::vector<RawField>& out, std::string* error = nullptr) {
    RawParser p;
    p.in = bytes;
    const bool ok = p.fields(out, 0, budget);
    if (!ok && error) *error = p.error;
    return ok;
}

// Abseil's CEscape, as protoc prints strings: \n \r \t \" \' \\ and octal for the rest.
void cEscape(std::string_view s, std::string& out) {
    for (unsigned char c : s) {
        if (http::appendBackslashEscape(out, c, "\"'")) continue;
        if (c < 0x20 || c >= 0x7f) {
            char buf[5];
            std::snprintf(buf, sizeof buf, "\\%03o", c);
            out += buf;
        } else {
            out.push_back(static_cast<char>(c));
        }
    }
}

void printRaw(const std::vector<RawField>& fields, int depth, int budget, std::string& out) {
    const std::string indent(static_cast<std::size_t>(depth) * 2, ' ');
    for (const auto& f : fields) {
        out += indent;
        out += std::to_string(f.number);
        char buf[24];
        switch (f.wireType) {
        case 0:
            out += ": " + std::to_string(f.value) + "\n";
            break;
        case 1:
            std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(f.value));
            out += std::string(": ") + buf + "\n";
            break;
        case 5:
            std::snprintf(buf, sizeof buf, "0x%08llx", static_cast<unsigned long long>(f.value));
            out += std::string(": ") + buf + "\n";
            break;
        case 2: {
            std::vector<RawField> nested;
            if (!f.bytes.empty() && budget > 0 && parseRaw(f.bytes, budget, nested)) {
                out += " {\n";
                printRaw(nested, depth + 1, budget - 1, out);
                out += indent + "}\n";
            } else {
                out += ": \"";
                cEscape(f.bytes, out);
                out += "\"\n";
            }
            break;
        }
        case 3:
            out += " {\n";
            printRaw(f.group, depth + 1, budget - 1, out);
            out += indent + "}\n";
            break;
        }
    }
}

} // namespace

bool protobufRawText(std::string_view bytes, std::string& out) {
    out.clear();
    RawParser p;
    p.in = bytes;
    std::vector<RawField> fields;
    const bool ok = p.fields(fields, 0, kRecursionBudget);
    printRaw(fields, 0, kPrintBudget, out);
    if (!ok) out += "error: " + p.error + "\n";
    return ok;
}

// ---- descriptor sets ----

namespace pb = google::protobuf;

struct GrpcSchema::Impl {
    pb::SimpleDescriptorDatabase database;
    std::unique_ptr<pb::DescriptorPool> pool;
    std::unique_ptr<pb::DynamicMessageFactory> factory;
};

namespace {
struct CollectErrors : pb::DescriptorPool::ErrorCollector {
    std::string first;
    void AddError(const std::string& filename, const std::string& element, const pb::Message*, ErrorLocation,
                  const std::string& message) override {
        if (first.empty()) first = filename + ": " + (element.empty() ? "" : element + ": ") + message;
    }
};
} // namespace

GrpcSchema::GrpcSchema(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GrpcSchema::~GrpcSchema() = default;

std::shared_ptr<const GrpcSchema> GrpcSchema::load(const std::string& path, std::string& error) {
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        error = "cannot read " + path + ": " + std::strerror(errno);
        return nullptr;
    }
    std::ostringstream ss;
    ss << f.rdbuf();
    return parse(ss.str(), path, error);
}

std::shared_ptr<const GrpcSchema> GrpcSchema::parse(std::string_view bytes, const std::string& name,
                                                    std::string& error) {
    pb::FileDescriptorSet set;
    if (bytes.empty() || !set.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) ||
        set.file_size() == 0) {
        error =
            name +
            ": not a FileDescriptorSet (write one with protoc --include_imports --descriptor_set_out=FILE)";
        return nullptr;
    }
    auto impl = std::make_unique<Impl>();
    for (const auto& file : set.file()) {
        if (!impl->database.Add(file)) {
            error = name + ": " + file.name() + ": defined twice or invalid";
            return nullptr;
        }
    }
    CollectErrors errors;
    impl->pool = std::make_unique<pb::DescriptorPool>(&impl->database, &errors);
    for (const auto& file : set.file()) {
        if (!impl->pool->FindFileByName(file.name())) {
            error = name + ": " +
                    (errors.first.empty()
                         ? file.name() + ": does not build (a missing import? use --include_imports)"
                         : errors.first);
            return nullptr;
        }
    }
    impl->factory = std::make_unique<pb::DynamicMessageFactory>(impl->pool.get());
    return std::shared_ptr<const GrpcSchema>(new GrpcSchema(std::move(impl)));
}

bool GrpcSchema::methodTypes(std::string_view path, std::string& input, std::string& output) const {
    // "/pkg.Service/Method" (gRPC over HTTP/2, "Path").
    if (auto q = path.find('?'); q != std::string_view::npos) path = path.substr(0, q);
    if (path.size() < 4 || path.front() != '/') return false;
    path.remove_prefix(1);
    const auto slash = path.find('/');
    if (slash == std::string_view::npos) return false;
    const pb::ServiceDescriptor* service = impl_->pool->FindServiceByName(std::string(path.substr(0, slash)));
    if (!service) return false;
    const pb::MethodDescriptor* method = service->FindMethodByName(std::string(path.substr(slash + 1)));
    if (!method) return false;
    input = method->input_type()->full_name();
    output = method->output_type()->full_name();
    return true;
}

bool GrpcSchema::toJson(const std::string& typeName, std::string_view bytes, std::string& json,
                        std::string& error) const {
    const pb::Descriptor* type = impl_->pool->FindMessageTypeByName(typeName);
    if (!type) {
        error = "type " + typeName + " is not in the descriptor set";
        return false;
    }
    const pb::Message* prototype = impl_->factory->GetPrototype(type);
    if (!prototype) {
        error = "type " + typeName + " cannot be instantiated";
        return false;
    }
    std::unique_ptr<pb::Message> msg(prototype->New());
    if (!msg->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
        error = "the bytes do not parse as " + typeName;
        return false;
    }
    pb::util::JsonPrintOptions options;
    options.preserve_proto_field_names = true;
    json.clear();
    const auto status = pb::util::MessageToJsonString(*msg, &json, options);
    if (!status.ok()) {
        error = "JSON: " + std::string(status.message());
        return false;
    }
    return true;
}

// ---- cache ----

std::shared_ptr<const GrpcSchema> GrpcSchemaCache::get(const std::string& path, std::string* error) {
    struct stat st {};
    const bool exists = ::stat(path.c_str(), &st) == 0;
    const std::int64_t mtime =
        exists ? std::int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec : 0;
    const std::int64_t size = exists ? static_cast<std::int64_t>(st.st_size) : -1;
    std::lock_guard lock(mutex_);
    Entry& e = entries_[path];
    if ((!e.schema && e.error.empty()) || e.mtimeNs != mtime || e.size != size) {
        e.mtimeNs = mtime;
        e.size = size;
        e.error.clear();
        e.schema = GrpcSchema::load(path, e.error);
    }
    if (error) *error = e.error;
    return e.schema;
}

std::shared_ptr<const GrpcSchema> GrpcSchemaCache::forCall(const config::Config& config, const Exchange& call,
                                                           std::string* error) {
    for (const auto& vh : config.vhosts) {
        const std::string_view label =
            vh.names.empty() ? std::string_view("*") : std::string_view(vh.names.front());
        if (label != call.vhost) continue;
        for (const auto& r : vh.routes) {
            const std::string& routeLabel = r.name.empty() ? r.spec : r.name;
            if (routeLabel != call.route) continue;
            const auto* px = std::get_if<config::ProxyAction>(&r.action);
            if (!px || px->descriptorSet.empty()) continue;
            return get(px->descriptorSet, error);
        }
    }
    return nullptr;
}

// ---- one message ----

GrpcMessageText describeGrpcMessage(const Exchange& call, const Message& m, const GrpcSchema* schema) {
    GrpcMessageText out;
    auto raw = [&](std::string note) {
        out.kind =
            protobufRawText(m.data, out.text) ? GrpcMessageText::Kind::Raw : GrpcMessageText::Kind::Malformed;
        if (out.kind == GrpcMessageText::Kind::Malformed)
            note = note.empty() ? "not a protobuf message" : note + "; not a protobuf message";
        out.note = std::move(note);
    };
    if (m.cut) {
        raw("cut: the stream ended after " + std::to_string(m.data.size()) + " of " + std::to_string(m.size) +
            " bytes");
        out.kind = GrpcMessageText::Kind::Malformed;
        return out;
    }
    if (m.opcode > 1) {
        raw("Compressed-Flag " + std::to_string(m.opcode) + " (must be 0 or 1)");
        out.kind = GrpcMessageText::Kind::Malformed;
        return out;
    }
    if (m.opcode == 1) {
        out.kind = GrpcMessageText::Kind::Compressed;
        std::string_view enc =
            m.fromClient ? call.requestHeader("grpc-encoding") : call.responseHeader("grpc-encoding");
        out.note =
            "compressed (" +
            (enc.empty() ? std::string("grpc-encoding not given") : "grpc-encoding " + std::string(enc)) +
            "): not decoded";
        return out;
    }
    if (m.data.size() < m.size) {
        raw("prefix only: " + std::to_string(m.data.size()) + " of " + std::to_string(m.size) + " bytes");
        return out;
    }
    std::string note;
    if (schema) {
        std::string input, output;
        if (schema->methodTypes(call.target, input, output)) {
            out.type = m.fromClient ? input : output;
            std::string error;
            if (schema->toJson(out.type, m.data, out.text, error)) {
                out.kind = GrpcMessageText::Kind::Json;
                return out;
            }
            note = error;
        } else {
            note = "method not in the descriptor set";
        }
    }
    raw(note);
    return out;
}

} // namespace portico::capture
