// Getting clients to use the intercepting forward proxy, shared by the CLI (`portico proxy chromium`,
// `portico proxy env`) and the desktop app's Intercept menu: finding Chromium or Chrome, the
// command line that sends it through the proxy and trusts the local CA by its key (nothing in the
// system trust store changes), its throw-away profile, and the shell exports of `proxy env`.
// Plain C++ (no Qt): the CLI spawns the browser itself, the GUI with QProcess.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace portico::launch {

/// The names looked up on PATH, in order, when neither --browser nor PORTICO_BROWSER names one.
inline const std::vector<std::string> kChromiumNames = {"chromium", "chromium-browser", "google-chrome",
                                                        "google-chrome-stable"};

/// True for a browser this launcher cannot drive (Firefox: its CA trust needs certutil and a
/// profile database). Judged by the file name.
bool isUnsupportedBrowser(const std::string& path);

/// The browser to run: `explicitPath` (--browser) when not empty, else $PORTICO_BROWSER when set,
/// else the first of kChromiumNames on PATH. A name without '/' is looked up on PATH. "" with
/// `error` set when none is found or it is not an executable file.
std::string findChromium(const std::string& explicitPath, std::string& error);

/// base64(SHA-256(DER of the SubjectPublicKeyInfo)) of the first certificate in `certPem`: what
/// Chromium's --ignore-certificate-errors-spki-list takes. "" with `error` on a bad certificate.
std::string spkiSha256Base64(const std::string& certPem, std::string& error);

/// Chromium's arguments: --user-data-dir, --proxy-server=http://127.0.0.1:PORT, --proxy-bypass-list
/// =<-loopback> (loopback through the proxy too), --ignore-certificate-errors-spki-list=SPKI (the
/// local CA's key: every leaf the proxy mints chains to it), --no-first-run,
/// --no-default-browser-check, then `extra` and `url` (when not empty).
std::vector<std::string> chromiumArgs(const std::string& profileDir, std::uint16_t port,
                                      const std::string& spki, const std::vector<std::string>& extra,
                                      const std::string& url);

/// A browser ready to start: the program, its arguments and its profile folder (remove it with
/// removeProfileDir once the browser has exited).
struct BrowserLaunch {
    std::string program;
    std::vector<std::string> args;
    std::string profileDir;
    std::string spki; ///< the local CA's key hash in the arguments
};

/// Finds the browser (`browser` as findChromium's explicitPath), opens (or creates) the local CA
/// under `dataDir`, hashes its key and makes a new profile folder (mode 0700, under $TMPDIR or
/// /tmp, "portico-browser-XXXXXX"). nullopt with `error` on any failure (nothing left behind).
std::optional<BrowserLaunch> prepareChromium(const std::string& browser, std::uint16_t port,
                                             const std::vector<std::string>& extra, const std::string& url,
                                             const std::filesystem::path& dataDir, std::string& error);

/// For a forked child before exec (async-signal-safe): marks every descriptor above stderr
/// close-on-exec, so the browser inherits none of this process's sockets (the engine's listening
/// sockets would keep the proxy's port bound after the proxy stopped). The launcher's own
/// descriptors (QProcess's exec-error pipe) stay open until exec.
void closeInheritedAtExec();

/// Removes a profile folder made by prepareChromium (retrying briefly: a browser's helper processes
/// may still be closing files in it). False when it could not be removed.
bool removeProfileDir(const std::string& dir);

/// What `portico proxy env --port PORT` prints: the exports that send a terminal's clients through
/// the proxy on 127.0.0.1:PORT and make them trust the local CA under `dataDir` (writing
/// `ca/bundle.pem`, the system's roots plus the CA, when it changed). nullopt with `error` when the
/// CA cannot be opened or the bundle cannot be written.
std::optional<std::string> proxyEnvText(int port, const std::filesystem::path& dataDir, std::string& error);

} // namespace portico::launch
