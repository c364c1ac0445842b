// Method tables, reason phrases and the reusable Response buffer.
#include <portico/http/message.h>

#include <array>
#include <cassert>
#include <string>
#include <unistd.h>

namespace portico::http {
namespace {
constexpr std::string_view kMethodTokens[] = {"GET",     "HEAD",    "POST",  "PUT",  "DELETE",
                                              "CONNECT", "OPTIONS", "TRACE", "PATCH"};
} // namespace

namespace {

// RFC 3986 §3.2.2 reg-name: unreserved / pct-encoded ('%' and hex digits) / sub-delims.
constexpr auto kRegNameChar = [] {
    std::array<bool, 256> t{};
    for (int c = 'a'; c <= 'z'; ++c)
        t[static_cast<std::size_t>(c)] = true;
    for (int c = 'A'; c <= 'Z'; ++c)
        t[static_cast<std::size_t>(c)] = true;
    for (int c = '0'; c <= '9'; ++c)
        t[static_cast<std::size_t>(c)] = true;
    for (const char c : std::string_view("-._~%!$&'()*+,;="))
        t[static_cast<unsigned char>(c)] = true;
    return t;
}();

} // namespace

bool validAuthority(std::string_view a) {
    if (a.empty()) return true;
    std::size_t hostEnd = 0;
    if (a.front() == '[') {
        // IP-literal: an IPv6 address (IPvFuture is not used by HTTP clients).
        const std::size_t close = a.find(']');
        if (close == std::string_view::npos || close < 3) return false;
        for (char c : a.substr(1, close - 1)) {
            const bool hex = (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
            if (!hex && c != ':' && c != '.') return false;
        }
        hostEnd = close + 1;
        if (hostEnd < a.size() && a[hostEnd] != ':') return false;
    } else {
        while (hostEnd < a.size() && a[hostEnd] != ':') {
            if (!kRegNameChar[static_cast<unsigned char>(a[hostEnd])]) return false;
            ++hostEnd;
        }
        if (hostEnd == 0) return false; // ":80", ":"
    }
    if (hostEnd == a.size()) return true;
    const std::string_view port = a.substr(hostEnd + 1);
    if (port.size() > 5) return false;
    unsigned value = 0;
    for (char c : port) {
        if (c < '0' || c > '9') return false;
        value = value * 10 + static_cast<unsigned>(c - '0');
    }
    return value <= 65535;
}

std::string_view statusLine11(int status) {
    static const std::array<std::string, 500> lines = [] {
        std::array<std::string, 500> t;
        for (int s = 100; s < 600; ++s)
            t[static_cast<std::size_t>(s - 100)] =
                "HTTP/1.1 " + std::to_string(s) + " " + std::string(reasonPhrase(s)) + "\r\n";
        return t;
    }();
    if (status >= 100 && status < 600) return lines[static_cast<std::size_t>(status - 100)];
    thread_local std::string other;
    other = "HTTP/1.1 " + std::to_string(status) + " Unknown\r\n";
    return other;
}

Method methodFromToken(std::string_view token) {
    for (std::size_t i = 0; i < std::size(kMethodTokens); ++i)
        if (kMethodTokens[i] == token) return static_cast<Method>(i);
    return Method::Other;
}

std::string_view methodToken(Method m) {
    auto i = static_cast<std::size_t>(m);
    return i < std::size(kMethodTokens) ? kMethodTokens[i] : std::string_view{};
}

std::string allowHeaderValue(std::uint32_t mask) {
    std::string out;
    for (std::size_t i = 0; i < std::size(kMethodTokens); ++i) {
        if (!(mask & (1u << i))) continue;
        if (!out.empty()) out += ", ";
        out += kMethodTokens[i];
    }
    return out;
}

std::string_view reasonPhrase(int status) {
    switch (status) {
    case 100:
        return "Continue";
    case 101:
        return "Switching Protocols";
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 202:
        return "Accepted";
    case 203:
        return "Non-Authoritative Information";
    case 204:
        return "No Content";
    case 205:
        return "Reset Content";
    case 206:
        return "Partial Content";
    case 300:
        return "Multiple Choices";
    case 301:
        return "Moved Permanently";
    case 302:
        return "Found";
    case 303:
        return "See Other";
    case 304:
        return "Not Modified";
    case 307:
        return "Temporary Redirect";
    case 308:
        return "Permanent Redirect";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 402:
        return "Payment Required";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 406:
        return "Not Acceptable";
    case 407:
        return "Proxy Authentication Required";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 410:
        return "Gone";
    case 411:
        return "Length Required";
    case 412:
        return "Precondition Failed";
    case 413:
        return "Content Too Large";
    case 414:
        return "URI Too Long";
    case 415:
        return "Unsupported Media Type";
    case 416:
        return "Range Not Satisfiable";
    case 417:
        return "Expectation Failed";
    case 418:
        return "I'm a teapot";
    case 421:
        return "Misdirected Request";
    case 422:
        return "Unprocessable Content";
    case 425:
        return "Too Early";
    case 426:
        return "Upgrade Required";
    case 428:
        return "Precondition Required";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 451:
        return "Unavailable For Legal Reasons";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    case 505:
        return "HTTP Version Not Supported";
    case 508:
        return "Loop Detected"; // RFC 5842 §7.2
    default:
        return "Unknown";
    }
}

std::string_view Request::header(std::string_view name) const {
    for (const auto& h : headers)
        if (iequals(h.name, name)) return h.value;
    return {};
}

bool Request::hasHeader(std::string_view name) const {
    for (const auto& h : headers)
        if (iequals(h.name, name)) return true;
    return false;
}

FileHandle::~FileHandle() {
    if (fd >= 0) ::close(fd);
}

void Response::addHeader(std::string_view name, std::string_view value) {
    assert(name.find_first_of("\r\n") == std::string_view::npos);
    assert(value.find_first_of("\r\n") == std::string_view::npos);
    fields_.append(name);
    fields_.append(": ");
    fields_.append(value);
    fields_.append("\r\n");
}

void Response::setHeader(std::string_view name, std::string_view value) {
    // Remove every existing line whose name matches, then append.
    std::size_t pos = 0;
    while (pos < fields_.size()) {
        std::size_t eol = fields_.find("\r\n", pos);
        std::size_t colon = fields_.find(':', pos);
        if (colon < eol && iequals(std::string_view(fields_).substr(pos, colon - pos), name))
            fields_.erase(pos, eol + 2 - pos);
        else
            pos = eol + 2;
    }
    addHeader(name, value);
}

std::string_view Response::headerValue(std::string_view name) const {
    std::string_view f = fields_;
    std::size_t pos = 0;
    while (pos < f.size()) {
        std::size_t eol = f.find("\r\n", pos);
        std::size_t colon = f.find(':', pos);
        if (colon < eol && iequals(f.substr(pos, colon - pos), name)) {
            std::size_t v = colon + 1;
            while (v < eol && f[v] == ' ')
                ++v;
            return f.substr(v, eol - v);
        }
        pos = eol + 2;
    }
    return {};
}

bool Response::hasHeader(std::string_view name) const {
    std::string_view f = fields_;
    std::size_t pos = 0;
    while (pos < f.size()) {
        std::size_t eol = f.find("\r\n", pos);
        std::size_t colon = f.find(':', pos);
        if (colon < eol && iequals(f.substr(pos, colon - pos), name)) return true;
        pos = eol + 2;
    }
    return false;
}

void Response::setBody(std::string_view bytes) {
    clearBody();
    owned_.assign(bytes);
    bodyKind_ = BodyKind::Owned;
}

std::string& Response::ownedBody() {
    clearBody();
    bodyKind_ = BodyKind::Owned;
    return owned_;
}

void Response::setSharedBody(std::shared_ptr<const void> owner, std::string_view view) {
    clearBody();
    sharedOwner_ = std::move(owner);
    sharedView_ = view;
    bodyKind_ = BodyKind::Shared;
}

void Response::setFileBody(std::shared_ptr<const FileHandle> file, std::uint64_t offset,
                           std::uint64_t length) {
    clearBody();
    file_ = std::move(file);
    fileOffset_ = offset;
    fileLength_ = length;
    bodyKind_ = BodyKind::File;
}

void Response::clearBody() {
    owned_.clear();
    sharedOwner_.reset();
    sharedView_ = {};
    file_.reset();
    fileOffset_ = fileLength_ = 0;
    bodyKind_ = BodyKind::None;
}

std::string_view Response::bodyView() const {
    switch (bodyKind_) {
    case BodyKind::Owned:
        return owned_;
    case BodyKind::Shared:
        return sharedView_;
    default:
        return {};
    }
}

std::uint64_t Response::bodyLength() const {
    switch (bodyKind_) {
    case BodyKind::Owned:
        return owned_.size();
    case BodyKind::Shared:
        return sharedView_.size();
    case BodyKind::File:
        return fileLength_;
    default:
        return 0;
    }
}

void Response::reset() {
    status = 200;
    fate = Fate::Normal;
    delay = std::chrono::nanoseconds{0};
    serverHeader = true;
    forward = nullptr;
    fields_.clear();
    clearBody();
}

bool listHasToken(std::string_view list, std::string_view token) {
    while (!list.empty()) {
        auto comma = list.find(',');
        std::string_view element = list.substr(0, comma);
        while (!element.empty() && (element.front() == ' ' || element.front() == '\t'))
            element.remove_prefix(1);
        while (!element.empty() && (element.back() == ' ' || element.back() == '\t'))
            element.remove_suffix(1);
        if (iequals(element, token)) return true;
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
    }
    return false;
}

bool isHopByHop(std::string_view name) {
    // By length first: every field of a proxied request or response passes here, and most are none
    // of these.
    switch (name.size()) {
    case 2:
        return iequals(name, "te");
    case 7:
        return iequals(name, "upgrade");
    case 10:
        return iequals(name, "connection") || iequals(name, "keep-alive");
    case 16:
        return iequals(name, "proxy-connection");
    case 17:
        return iequals(name, "transfer-encoding");
    case 18:
        return iequals(name, "proxy-authenticate");
    case 19:
        return iequals(name, "proxy-authorization");
    default:
        return false;
    }
}

} // namespace portico::http
