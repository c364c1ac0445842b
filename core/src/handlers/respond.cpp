// The `respond:` action: a mocked response with templates, simulated latency and injected faults.
#include "handlers/actions.h"
#include "handlers/file_cache.h"
#include "handlers/http_util.h"

namespace portico::handlers {
namespace {

std::chrono::nanoseconds pickLatency(const config::RespondAction& a, WorkerState& worker) {
    if (a.latencyMax <= a.latency) return a.latency;
    auto span = static_cast<double>((a.latencyMax - a.latency).count());
    auto extra = static_cast<std::chrono::nanoseconds::rep>(worker.random() * span);
    return a.latency + std::chrono::nanoseconds(extra);
}

} // namespace

Produced respond(const Exchange& ex, const config::RespondAction& a, http::Response& res) {
    res.delay = pickLatency(a, ex.worker);
    // Faults are rolled only when configured, so a plain mock never touches the generator.
    if (a.dropRate > 0 && ex.worker.random() < a.dropRate) {
        res.fate = http::Response::Fate::Drop;
        return Produced::Response;
    }
    if (a.errorRate > 0 && ex.worker.random() < a.errorRate) {
        errorResponse(a.errorStatus, res);
        return Produced::GeneratedError;
    }

    res.status = a.status;
    for (const auto& [name, value] : a.headers) {
        if (!hasTemplate(value)) {
            res.addHeader(name, value);
            continue;
        }
        std::string rendered;
        renderTemplate(value, ex, TemplateTarget::HeaderValue, rendered);
        res.addHeader(name, rendered);
    }

    std::string_view body = a.body;
    std::shared_ptr<const CachedFile> file;
    if (!a.bodyFile.empty()) {
        // Loaded lazily into the worker's cache and re-read when the file changes, so editing a
        // fixture shows up on the next request.
        file = ex.worker.files().loadWhole(a.bodyFile);
        if (!file) return fail(500, res);
        body = file->data;
    }
    if (hasTemplate(body)) {
        // Request values go into the body escaped for its type, so a '"' in a header cannot end a
        // JSON string early, nor a '<' open a tag in HTML.
        const std::string_view type = res.headerValue("Content-Type");
        const std::string_view media = trimOws(type.substr(0, type.find(';')));
        const bool json = http::iequals(media, "application/json") ||
                          (media.size() > 5 && http::iequals(media.substr(media.size() - 5), "+json"));
        const bool html = http::iequals(media, "text/html");
        renderTemplate(body, ex,
                       json   ? TemplateTarget::JsonBody
                       : html ? TemplateTarget::HtmlBody
                              : TemplateTarget::Body,
                       res.ownedBody());
    } else if (file)
        res.setSharedBody(file, body);
    else if (!body.empty())
        res.setBody(body);

    if (res.bodyLength() > 0 && !res.hasHeader("Content-Type"))
        res.addHeader("Content-Type", "text/plain; charset=utf-8");
    return Produced::Response;
}

} // namespace portico::handlers
