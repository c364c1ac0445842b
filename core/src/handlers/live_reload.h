// Live reload: the script injected into HTML pages, where it goes, and the watcher of served roots.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace portico::handlers {

/// The reserved WebSocket endpoint of vhosts with `live_reload: true` (the snippet connects to it).
inline constexpr std::string_view kLiveReloadPath = "/__portico/livereload";

/// The snippet injected into HTML: one inline <script> that opens a WebSocket to
/// /__portico/livereload on the page's own origin (ws: or wss:). Messages are JSON:
/// {"type":"css","paths":[...]} swaps same-origin stylesheets in place (cache-busting query),
/// {"type":"reload","paths":[...]} reloads the page. After losing the connection it retries
/// (0.5 s doubling to 5 s) and reloads once a restarted server answers.
std::string_view liveReloadSnippet();

/// Byte offset in `html` where the snippet goes (case LRL-01): just before the last real `</body>`
/// tag, else before the last real `</html>`, else the end. "Real" means markup as an HTML tokenizer
/// sees it: not inside a comment, a <script>/<style>/<textarea>/<title>/<xmp>/<iframe>/<noembed>/
/// <noframes> element, a bogus comment (<! ... >, <? ... >), or after <plaintext>.
std::size_t liveReloadInjectionPoint(std::string_view html);

/// `html` with liveReloadSnippet() inserted once at liveReloadInjectionPoint().
std::string injectLiveReload(std::string_view html);

/// Watches directories recursively with inotify and reports debounced changes. Hidden names
/// (".git", ".swp" files), backups ("x~"), editors' probe files ("4913") and node_modules are
/// ignored. Changes are batched until 100 ms pass without a new one (at most 1 s after the first),
/// then `notify` gets one JSON message: {"type":"css","paths":["/a.css"]} when every changed file is
/// a stylesheet, else {"type":"reload","paths":[...]} (paths relative to their root, at most 20).
class LiveReloadWatcher {
public:
    /// `json` is the message for pages; `paths` the changed files behind it (the same ≤ 20 names)
    /// and `stylesheetsOnly` its type, for a human-readable line.
    using Notify = std::function<void(const std::string& json, const std::vector<std::string>& paths,
                                      bool stylesheetsOnly)>;
    explicit LiveReloadWatcher(Notify notify);
    ~LiveReloadWatcher(); ///< stops the thread
    LiveReloadWatcher(const LiveReloadWatcher&) = delete;
    LiveReloadWatcher& operator=(const LiveReloadWatcher&) = delete;

    /// Replaces the watched roots (absolute directories; duplicates and nested ones are fine).
    /// Thread-safe; an empty list stops watching.
    void setRoots(std::vector<std::string> roots);
    /// Debounced batches reported so far.
    std::uint64_t batches() const { return batches_.load(std::memory_order_relaxed); }

private:
    struct Impl;
    std::unique_ptr<Impl> d_;
    std::atomic<std::uint64_t> batches_{0};
};

} // namespace portico::handlers
