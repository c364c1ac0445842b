// Live reload: snippet, injection point (HTML tokenizer subset, LRL-01) and the inotify watcher.
#include "handlers/live_reload.h"
#include <portico/http/json_text.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

namespace portico::handlers {
namespace {

constexpr std::string_view kSnippet =
    R"(<script data-portico-live-reload>(function () {
  if (window.__porticoLiveReload) return;
  window.__porticoLiveReload = true;
  var url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/__portico/livereload";
  var delay = 500, opened = false, lost = false;
  function swapCss() {
    var links = document.querySelectorAll('link[rel~="stylesheet"][href]'), n = 0;
    for (var i = 0; i < links.length; i++) {
      var u = new URL(links[i].href, location.href);
      if (u.origin !== location.origin) continue;
      u.searchParams.set("portico-reload", Date.now().toString(36));
      links[i].href = u.href;
      n++;
    }
    return n > 0;
  }
  function connect() {
    var ws = new WebSocket(url);
    ws.onopen = function () { delay = 500; if (lost) location.reload(); opened = true; };
    ws.onmessage = function (e) {
      var m;
      try { m = JSON.parse(e.data); } catch (x) { return; }
      if (m.type === "css" && swapCss()) return;
      location.reload();
    };
    ws.onclose = function () {
      if (opened) lost = true;
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 5000);
    };
  }
  connect();
})();</script>
)";

char lowerAscii(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }
bool isAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

// Case-insensitive `name` at `pos`, followed by a tag-name terminator (or the end).
bool tagNameAt(std::string_view s, std::size_t pos, std::string_view name) {
    if (pos + name.size() > s.size()) return false;
    for (std::size_t i = 0; i < name.size(); ++i)
        if (lowerAscii(s[pos + i]) != name[i]) return false;
    std::size_t end = pos + name.size();
    return end == s.size() || isSpace(s[end]) || s[end] == '/' || s[end] == '>';
}

// The end of the tag that starts with its name at `i` (index after '>', or npos), skipping quoted
// attribute values.
std::size_t tagEnd(std::string_view s, std::size_t i) {
    char prev = 0;
    while (i < s.size()) {
        char c = s[i];
        if (c == '>') return i + 1;
        if ((c == '"' || c == '\'') && prev == '=') {
            std::size_t close = s.find(c, i + 1);
            if (close == std::string_view::npos) return close;
            i = close + 1;
            prev = c;
            continue;
        }
        if (!isSpace(c)) prev = c;
        ++i;
    }
    return std::string_view::npos;
}

// Where the raw text of element `name` ends: the position of its "</name" end tag, or npos.
std::size_t rawTextEnd(std::string_view s, std::size_t from, std::string_view name) {
    for (std::size_t i = s.find("</", from); i != std::string_view::npos; i = s.find("</", i + 2))
        if (tagNameAt(s, i + 2, name)) return i;
    return std::string_view::npos;
}

constexpr std::string_view kRawText[] = {"script", "style",  "textarea", "title",
                                         "xmp",    "iframe", "noembed",  "noframes"};

bool ignoredName(std::string_view name) {
    return name.empty() || name.front() == '.' || name.back() == '~' || name == "4913" ||
           name == "node_modules" || name.ends_with(".swp") || name.ends_with(".swx");
}

} // namespace

std::string_view liveReloadSnippet() { return kSnippet; }

std::size_t liveReloadInjectionPoint(std::string_view html) {
    std::size_t lastBody = std::string_view::npos, lastHtml = std::string_view::npos;
    std::size_t pos = 0;
    const std::size_t n = html.size();
    while (pos < n) {
        std::size_t lt = html.find('<', pos);
        if (lt == std::string_view::npos || lt + 1 >= n) break;
        std::string_view rest = html.substr(lt);
        if (rest.starts_with("<!--")) {
            // "<!-->" and "<!--->" are (empty) comments too.
            if (rest.substr(4).starts_with(">")) {
                pos = lt + 5;
                continue;
            }
            if (rest.substr(4).starts_with("->")) {
                pos = lt + 6;
                continue;
            }
            std::size_t end = html.find("-->", lt + 4);
            if (end == std::string_view::npos) break; // the comment runs to the end
            pos = end + 3;
            continue;
        }
        char c = html[lt + 1];
        if (c == '!' || c == '?') { // doctype, CDATA and bogus comments end at the next '>'
            std::size_t end = html.find('>', lt + 2);
            if (end == std::string_view::npos) break;
            pos = end + 1;
            continue;
        }
        if (c == '/' && lt + 2 < n && isAlpha(html[lt + 2])) {
            if (tagNameAt(html, lt + 2, "body")) lastBody = lt;
            if (tagNameAt(html, lt + 2, "html")) lastHtml = lt;
            std::size_t end = html.find('>', lt + 2);
            if (end == std::string_view::npos) break;
            pos = end + 1;
            continue;
        }
        if (!isAlpha(c)) {
            pos = lt + 1; // a '<' that starts no tag is text
            continue;
        }
        std::size_t end = tagEnd(html, lt + 1);
        if (end == std::string_view::npos) break;
        if (tagNameAt(html, lt + 1, "plaintext")) break; // everything after it is text
        pos = end;
        for (std::string_view raw : kRawText) {
            if (!tagNameAt(html, lt + 1, raw)) continue;
            std::size_t close = rawTextEnd(html, end, raw);
            if (close == std::string_view::npos)
                return lastBody != std::string_view::npos   ? lastBody
                       : lastHtml != std::string_view::npos ? lastHtml
                                                            : n;
            pos = close;
            break;
        }
    }
    if (lastBody != std::string_view::npos) return lastBody;
    if (lastHtml != std::string_view::npos) return lastHtml;
    return n;
}

std::string injectLiveReload(std::string_view html) {
    const std::size_t at = liveReloadInjectionPoint(html);
    std::string out;
    out.reserve(html.size() + kSnippet.size());
    out.append(html.substr(0, at));
    out.append(kSnippet);
    out.append(html.substr(at));
    return out;
}

// ---- watcher ----

struct LiveReloadWatcher::Impl {
    Notify notify;
    std::mutex mutex;
    std::vector<std::string> roots; // pending (under mutex)
    bool rootsChanged = false;
    bool stop = false;
    int wake = -1; // eventfd
    std::thread thread;

    // Thread-only state.
    int ino = -1;
    std::vector<std::string> active;
    struct Dir {
        std::size_t root;
        std::string rel; // "" or "/sub/dir"
    };
    std::map<int, Dir> dirs;
    std::set<std::string> pending; // "/rel/path" of changed files
    std::chrono::steady_clock::time_point first, last;

    void addTree(std::size_t root, const std::string& rel) {
        namespace fs = std::filesystem;
        constexpr std::size_t kMaxWatches = 8192;
        std::vector<std::string> stack{rel};
        while (!stack.empty() && dirs.size() < kMaxWatches) {
            std::string r = stack.back();
            stack.pop_back();
            std::string abs = active[root] + r;
            int wd = inotify_add_watch(ino, abs.c_str(),
                                       IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE |
                                           IN_ATTRIB | IN_MODIFY | IN_ONLYDIR | IN_DONT_FOLLOW);
            if (wd < 0) continue;
            dirs[wd] = Dir{root, r};
            std::error_code ec;
            for (fs::directory_iterator it(abs, ec), end; !ec && it != end; it.increment(ec)) {
                std::string name = it->path().filename().string();
                if (ignoredName(name)) continue;
                std::error_code e2;
                if (it->is_directory(e2) && !it->is_symlink(e2)) stack.push_back(r + "/" + name);
            }
        }
    }

    void rebuild() {
        if (ino >= 0) ::close(ino);
        ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        dirs.clear();
        pending.clear();
        if (ino < 0) return;
        for (std::size_t i = 0; i < active.size(); ++i)
            addTree(i, "");
    }

    void readEvents() {
        alignas(inotify_event) char buf[16384];
        for (;;) {
            ssize_t n = ::read(ino, buf, sizeof buf);
            if (n <= 0) return;
            for (char* p = buf; p < buf + n;) {
                auto* ev = reinterpret_cast<inotify_event*>(p);
                p += sizeof(inotify_event) + ev->len;
                auto it = dirs.find(ev->wd);
                if (it == dirs.end()) continue;
                if (ev->mask & IN_IGNORED) {
                    dirs.erase(it);
                    continue;
                }
                std::string name = ev->len ? std::string(ev->name) : std::string();
                if (ignoredName(name)) continue;
                std::string rel = it->second.rel + "/" + name;
                if ((ev->mask & IN_ISDIR) && (ev->mask & (IN_CREATE | IN_MOVED_TO)))
                    addTree(it->second.root, rel);
                const auto now = std::chrono::steady_clock::now();
                if (pending.empty()) first = now;
                last = now;
                pending.insert(rel);
            }
        }
    }

    void report(std::atomic<std::uint64_t>& batches) {
        bool css = std::all_of(pending.begin(), pending.end(),
                               [](const std::string& p) { return p.ends_with(".css"); });
        std::string json = std::string("{\"type\":\"") + (css ? "css" : "reload") + "\",\"paths\":[";
        std::vector<std::string> paths;
        for (const std::string& p : pending) {
            if (paths.size() == 20) break;
            if (!paths.empty()) json += ',';
            http::appendJsonString(json, p);
            paths.push_back(p);
        }
        json += "]}";
        pending.clear();
        batches.fetch_add(1, std::memory_order_relaxed);
        notify(json, paths, css);
    }

    void run(std::atomic<std::uint64_t>& batches) {
        using namespace std::chrono;
        for (;;) {
            {
                std::lock_guard lock(mutex);
                if (stop) break;
                if (rootsChanged) {
                    rootsChanged = false;
                    active = roots;
                    rebuild();
                }
            }
            int timeout = -1;
            if (!pending.empty()) {
                auto now = steady_clock::now();
                auto due = std::min(last + milliseconds(100), first + seconds(1));
                if (now >= due) {
                    report(batches);
                    continue;
                }
                timeout = static_cast<int>(duration_cast<milliseconds>(due - now).count()) + 1;
            }
            pollfd fds[2] = {{wake, POLLIN, 0}, {ino, POLLIN, 0}};
            int rc = ::poll(fds, ino >= 0 ? 2 : 1, timeout);
            if (rc < 0 && errno != EINTR) break;
            if (fds[0].revents & POLLIN) {
                std::uint64_t v;
                [[maybe_unused]] ssize_t ignored = ::read(wake, &v, sizeof v);
            }
            if (ino >= 0 && (fds[1].revents & POLLIN)) readEvents();
        }
        if (ino >= 0) ::close(ino);
    }
};

LiveReloadWatcher::LiveReloadWatcher(Notify notify) : d_(std::make_unique<Impl>()) {
    d_->notify = std::move(notify);
    d_->wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    d_->thread = std::thread([this] { d_->run(batches_); });
}

LiveReloadWatcher::~LiveReloadWatcher() {
    {
        std::lock_guard lock(d_->mutex);
        d_->stop = true;
    }
    std::uint64_t one = 1;
    [[maybe_unused]] ssize_t ignored = ::write(d_->wake, &one, sizeof one);
    if (d_->thread.joinable()) d_->thread.join();
    ::close(d_->wake);
}

void LiveReloadWatcher::setRoots(std::vector<std::string> roots) {
    std::sort(roots.begin(), roots.end());
    roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
    {
        std::lock_guard lock(d_->mutex);
        if (roots == d_->roots && !d_->rootsChanged) return;
        d_->roots = std::move(roots);
        d_->rootsChanged = true;
    }
    std::uint64_t one = 1;
    [[maybe_unused]] ssize_t ignored = ::write(d_->wake, &one, sizeof one);
}

} // namespace portico::handlers
