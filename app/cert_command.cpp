// `portico cert`: the local development CA behind `tls: auto` — show it, export it, and add it to
// (or remove it from) the system trust store and the users' NSS databases. See docs/cli.md.
#include "commands.h"

#include <portico/tls/local_ca.h>

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace portico::app {
namespace {

namespace fs = std::filesystem;
using portico::tls::LocalCa;

constexpr const char* kSystemCaDir = "/usr/local/share/ca-certificates";
constexpr const char* kSystemCaFile = "portico-local-ca.crt";
/// Every Portico CA's commonName, and so its NSS nickname, starts with this (see tls/local_ca.h).
constexpr const char* kNicknamePrefix = "Portico Local Development CA";

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

std::string errnoText(int e) { return std::error_code(e, std::generic_category()).message(); }

/// The user who ran `sudo portico ...`: their CA and NSS databases are the ones meant, not root's.
struct Invoker {
    uid_t uid = 0;
    gid_t gid = 0;
    std::string name;
    std::string home;
};

/// The invoking user when running as root under sudo (SUDO_UID set and not 0), else nullopt.
std::optional<Invoker> sudoInvoker() {
    if (::geteuid() != 0) return std::nullopt;
    std::string sudoUid = env("SUDO_UID");
    if (sudoUid.empty()) return std::nullopt;
    char* end = nullptr;
    unsigned long uid = std::strtoul(sudoUid.c_str(), &end, 10);
    if (*end != '\0' || uid == 0) return std::nullopt;
    struct passwd pw {};
    struct passwd* found = nullptr;
    std::vector<char> buf(16384);
    if (::getpwuid_r(static_cast<uid_t>(uid), &pw, buf.data(), buf.size(), &found) != 0 || !found)
        return std::nullopt;
    return Invoker{found->pw_uid, found->pw_gid, found->pw_name, found->pw_dir};
}

/// The data directory: as tls::defaultDataDir(), but under sudo the invoking user's.
fs::path dataDir(const std::optional<Invoker>& invoker) {
    if (!invoker || !env("PORTICO_DATA_DIR").empty()) return portico::tls::defaultDataDir();
    std::string xdg = env("XDG_DATA_HOME"); // only still set under `sudo -E`, and then it is theirs
    if (!xdg.empty() && xdg.front() == '/') return fs::path(xdg) / "portico";
    return fs::path(invoker->home) / ".local" / "share" / "portico";
}

/// In a forked child: become `who` (groups, gid, uid; HOME, USER, LOGNAME). False on failure.
bool becomeUser(const Invoker& who) {
    if (::initgroups(who.name.c_str(), who.gid) != 0 || ::setgid(who.gid) != 0 || ::setuid(who.uid) != 0)
        return false;
    ::setenv("HOME", who.home.c_str(), 1);
    ::setenv("USER", who.name.c_str(), 1);
    ::setenv("LOGNAME", who.name.c_str(), 1);
    return true;
}

/// How runProgram treats the child's output.
enum class Output { Inherit, Discard, Capture };

/// Runs `argv` (fork + execvp, no shell) and waits for it. Returns its exit status (128+signal when
/// killed), or -1 with `error` when it could not be started. `as`: run as that user. With
/// Output::Capture its standard output goes to `*captured` and its standard error is discarded.
int runProgram(const std::vector<std::string>& argv, const Invoker* as, Output output, std::string& error,
               std::string* captured = nullptr) {
    int errPipe[2];
    if (::pipe2(errPipe, O_CLOEXEC) != 0) {
        error = "pipe: " + errnoText(errno);
        return -1;
    }
    int outPipe[2] = {-1, -1};
    if (output == Output::Capture && ::pipe2(outPipe, O_CLOEXEC) != 0) {
        error = "pipe: " + errnoText(errno);
        ::close(errPipe[0]);
        ::close(errPipe[1]);
        return -1;
    }
    std::vector<char*> args;
    for (const auto& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::cout.flush();
    pid_t pid = ::fork();
    if (pid < 0) {
        error = "fork: " + errnoText(errno);
        ::close(errPipe[0]);
        ::close(errPipe[1]);
        if (outPipe[0] >= 0) ::close(outPipe[0]), ::close(outPipe[1]);
        return -1;
    }
    if (pid == 0) {
        int e = 0;
        if (output != Output::Inherit) {
            int null = ::open("/dev/null", O_WRONLY);
            if (null >= 0) ::dup2(null, 2);
            ::dup2(output == Output::Capture ? outPipe[1] : null, 1); // dup2 clears O_CLOEXEC
        }
        if (as && !becomeUser(*as)) {
            e = errno;
        } else {
            ::execvp(args[0], args.data());
            e = errno;
        }
        (void)!::write(errPipe[1], &e, sizeof e);
        ::_exit(127);
    }
    ::close(errPipe[1]);
    if (output == Output::Capture) {
        ::close(outPipe[1]);
        char buf[4096];
        ssize_t got;
        while ((got = ::read(outPipe[0], buf, sizeof buf)) > 0 || (got < 0 && errno == EINTR))
            if (got > 0 && captured && captured->size() < (1u << 20)) captured->append(buf, size_t(got));
        ::close(outPipe[0]);
    }
    int childErrno = 0;
    ssize_t n;
    while ((n = ::read(errPipe[0], &childErrno, sizeof childErrno)) < 0 && errno == EINTR) {
    }
    ::close(errPipe[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (n == static_cast<ssize_t>(sizeof childErrno)) {
        error = argv[0] + ": " + errnoText(childErrno);
        return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// Opens (creating if needed) the CA. Under sudo it is created by a child running as the invoking
/// user, so that the files in their home stay theirs; root then only reads them.
std::shared_ptr<LocalCa> openCa() {
    auto invoker = sudoInvoker();
    fs::path dir = dataDir(invoker);
    std::error_code ec;
    bool existed = fs::exists(dir / "ca" / "ca.crt", ec);
    if (invoker && !existed) {
        std::cout.flush();
        pid_t pid = ::fork();
        if (pid == 0) {
            std::string error;
            if (!becomeUser(*invoker)) {
                std::cerr << "portico: cannot switch to user " << invoker->name << ": " << errnoText(errno)
                          << "\n";
                ::_exit(1);
            }
            ::_exit(LocalCa::openOrCreate(dir, error) ? 0 : (std::cerr << "portico: " << error << "\n", 1));
        }
        int status = 0;
        while (pid > 0 && ::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            if (pid < 0) std::cerr << "portico: fork: " << errnoText(errno) << "\n";
            return nullptr;
        }
    }
    std::string error;
    auto ca = LocalCa::openOrCreate(dir, error);
    if (!ca) {
        std::cerr << "portico: " << error << "\n";
        return nullptr;
    }
    if (!existed) std::cerr << "portico: created a new local CA in " << (dir / "ca").string() << "\n";
    return ca;
}

std::string isoDate(std::chrono::system_clock::time_point t) {
    std::time_t tt = std::chrono::system_clock::to_time_t(t);
    struct tm tm {};
    ::gmtime_r(&tt, &tm);
    char buf[16];
    std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
    return buf;
}

/// Writes `data` to `path`. Atomic: through a temporary file in the same directory, renamed over
/// `path`, with `mode` applied exactly (whatever the umask). Otherwise: opened for writing and
/// truncated like a shell redirection (so /dev/stdout works), created with `mode` less the umask.
/// False with `err` (an errno value).
bool writeFile(const fs::path& path, const std::string& data, mode_t mode, bool atomic, int& err) {
    fs::path tmp = path;
    tmp += ".tmp." + std::to_string(::getpid());
    const fs::path& target = atomic ? tmp : path;
    int fd =
        ::open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (atomic ? O_NOFOLLOW : 0), mode);
    if (fd < 0) {
        err = errno;
        return false;
    }
    bool ok = (!atomic || ::fchmod(fd, mode) == 0) &&
              ::write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size());
    err = errno;
    if (ok && atomic && ::fsync(fd) != 0) err = errno, ok = false;
    if (::close(fd) != 0 && ok) err = errno, ok = false;
    if (ok && atomic && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno, ok = false;
    if (!ok && atomic) ::unlink(tmp.c_str());
    return ok;
}

bool isPermissionError(int e) { return e == EACCES || e == EPERM || e == EROFS; }

// ---- the system store (update-ca-certificates) -------------------------------------------------------

fs::path systemCaDir() {
    std::string d = env("PORTICO_SYSTEM_CA_DIR"); // test hook
    return d.empty() ? fs::path(kSystemCaDir) : fs::path(d);
}

std::vector<std::string> updateCaCommand() {
    std::string c = env("PORTICO_UPDATE_CA_COMMAND"); // test hook
    if (!c.empty()) return {c};
    std::error_code ec;
    if (fs::exists("/usr/sbin/update-ca-certificates", ec)) return {"/usr/sbin/update-ca-certificates"};
    return {"update-ca-certificates"};
}

/// Runs update-ca-certificates; false (message printed) if it could not run or failed.
bool runUpdateCa(const fs::path& changedFile) {
    auto cmd = updateCaCommand();
    std::string error;
    int rc = runProgram(cmd, nullptr, Output::Inherit, error);
    if (rc == 0) return true;
    if (rc < 0) {
        std::cerr << "portico: cannot run " << error << " (is the ca-certificates package installed?)\n";
    } else {
        std::cerr << "portico: " << cmd[0] << " failed (exit status " << rc << ")\n";
    }
    std::cerr << "portico: " << changedFile.string()
              << " was changed but the system bundle was not rebuilt\n";
    return false;
}

void sayRerunWithSudo(const char* what) {
    std::cerr << "portico: changing the system trust store needs root: rerun as `sudo portico cert " << what
              << "`\n";
}

// ---- NSS databases (certutil) ---------------------------------------------------------------------------

/// `name` on PATH as an executable regular file, or "".
std::string findOnPath(const std::string& name) {
    std::string path = env("PATH");
    std::size_t start = 0;
    while (start <= path.size()) {
        std::size_t end = path.find(':', start);
        std::string dir = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
        if (!dir.empty()) {
            fs::path candidate = fs::path(dir) / name;
            struct stat st {};
            if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
                ::access(candidate.c_str(), X_OK) == 0)
                return candidate.string();
        }
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return {};
}

std::string userHome(const std::optional<Invoker>& invoker) {
    if (invoker) return invoker->home;
    std::string home = env("HOME");
    if (!home.empty()) return home;
    struct passwd pw {};
    struct passwd* found = nullptr;
    std::vector<char> buf(16384);
    if (::getpwuid_r(::getuid(), &pw, buf.data(), buf.size(), &found) == 0 && found) return found->pw_dir;
    return {};
}

/// The NSS databases of the user: Chrome/Chromium's shared one and each Firefox profile's.
std::vector<fs::path> nssDatabases(const std::string& home) {
    std::vector<fs::path> dbs;
    if (home.empty()) return dbs;
    std::error_code ec;
    fs::path shared = fs::path(home) / ".pki" / "nssdb";
    if (fs::is_directory(shared, ec)) dbs.push_back(shared);
    for (const char* root : {".mozilla/firefox", "snap/firefox/common/.mozilla/firefox"}) {
        for (fs::directory_iterator it(fs::path(home) / root, ec), end; !ec && it != end; it.increment(ec)) {
            std::error_code e2;
            if (fs::exists(it->path() / "cert9.db", e2)) dbs.push_back(it->path());
        }
        ec.clear();
    }
    return dbs;
}

/// Removes every certificate nicknamed `nickname` from `db`; how many were removed.
int nssRemove(const std::string& certutil, const fs::path& db, const std::string& nickname,
              const Invoker* as) {
    int removed = 0;
    std::string error;
    // certutil -D removes one certificate per call; a bound guards against a certutil that never fails.
    while (removed < 16 && runProgram({certutil, "-d", "sql:" + db.string(), "-D", "-n", nickname}, as,
                                      Output::Discard, error) == 0)
        ++removed;
    return removed;
}

/// Nicknames in `db` that are Portico CAs (any user@host), from `certutil -L`. False on failure.
bool nssPorticoNicknames(const std::string& certutil, const fs::path& db, const Invoker* as,
                         std::vector<std::string>& nicknames, std::string& error) {
    std::string listing;
    int rc = runProgram({certutil, "-d", "sql:" + db.string(), "-L"}, as, Output::Capture, error, &listing);
    if (rc != 0) {
        if (rc > 0) error = "certutil -L exit status " + std::to_string(rc);
        return false;
    }
    // Lines are "NICKNAME<spaces>TRUST", TRUST being one token like "C,,".
    std::size_t start = 0;
    while (start < listing.size()) {
        std::size_t end = listing.find('\n', start);
        if (end == std::string::npos) end = listing.size();
        std::string line = listing.substr(start, end - start);
        start = end + 1;
        if (line.rfind(kNicknamePrefix, 0) != 0) continue;
        line.erase(line.find_last_not_of(" \t\r") + 1);
        std::size_t trust = line.find_last_of(" \t");
        if (trust == std::string::npos) continue;
        line.erase(trust);
        line.erase(line.find_last_not_of(" \t") + 1);
        nicknames.push_back(line);
    }
    return true;
}

// ---- subcommands ---------------------------------------------------------------------------------------

struct Options {
    std::string exportFile;
};

int runCa() {
    auto ca = openCa();
    if (!ca) return kExitFailure;
    std::cout << "Certificate: " << ca->certPath().string() << "\n"
              << "Private key: " << ca->keyPath().string() << "\n"
              << "Subject:     CN=" << ca->commonName() << "\n"
              << "Expires:     " << isoDate(ca->notAfter()) << "\n"
              << "SHA-256:     " << ca->fingerprintSha256() << "\n";
    return kExitOk;
}

int runExport(const std::string& file) {
    auto ca = openCa();
    if (!ca) return kExitFailure;
    if (file == "-") {
        std::cout << ca->certPem();
        return std::cout.flush() ? kExitOk : kExitFailure;
    }
    int err = 0;
    if (!writeFile(file, ca->certPem(), 0644, false, err)) {
        std::cerr << "portico: cannot write " << file << ": " << errnoText(err) << "\n";
        return kExitFailure;
    }
    std::cout << "Wrote the local CA certificate to " << file << " (SHA-256 " << ca->fingerprintSha256()
              << ")\n";
    return kExitOk;
}

int runInstall() {
    auto invoker = sudoInvoker();
    auto ca = openCa();
    if (!ca) return kExitFailure;
    const std::string undo = std::string(::geteuid() == 0 ? "sudo " : "") + "portico cert uninstall";
    std::cout << "Local CA \"" << ca->commonName() << "\"\n  " << ca->certPath().string() << "\n  SHA-256 "
              << ca->fingerprintSha256() << "\n";

    // 1. The system store: Debian's update-ca-certificates picks up *.crt in
    // /usr/local/share/ca-certificates.
    fs::path dir = systemCaDir();
    fs::path target = dir / kSystemCaFile;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
        fs::create_directories(dir, ec);
        if (ec) {
            std::cerr << "portico: cannot create " << dir.string() << ": " << ec.message() << "\n";
            if (isPermissionError(ec.value())) sayRerunWithSudo("install");
            return kExitFailure;
        }
    }
    int err = 0;
    if (!writeFile(target, ca->certPem(), 0644, true, err)) {
        std::cerr << "portico: cannot write " << target.string() << ": " << errnoText(err) << "\n";
        if (isPermissionError(err)) sayRerunWithSudo("install");
        return kExitFailure;
    }
    if (!runUpdateCa(target)) return kExitFailure;
    std::cout
        << "System store: copied to " << target.string()
        << " and ran update-ca-certificates\n  (curl, wget and other programs that read /etc/ssl/certs now "
           "trust it)\n";

    // 2. NSS databases, which Chrome/Chromium and Firefox use instead of the system store.
    int status = kExitOk;
    std::string certutil = findOnPath("certutil");
    auto dbs = nssDatabases(userHome(invoker));
    const Invoker* as = invoker ? &*invoker : nullptr;
    if (certutil.empty()) {
        std::cout << "NSS: certutil not found, so Chrome, Chromium and Firefox were not told; install "
                     "libnss3-tools and rerun to add it there too\n";
    } else if (dbs.empty()) {
        std::cout << "NSS: no database in " << userHome(invoker)
                  << "/.pki/nssdb or a Firefox profile (start Chrome or Firefox once, then rerun)\n";
    }
    for (const auto& db : certutil.empty() ? std::vector<fs::path>{} : dbs) {
        nssRemove(certutil, db, ca->commonName(), as); // an older CA under the same nickname
        std::string error;
        int rc = runProgram({certutil, "-d", "sql:" + db.string(), "-A", "-t", "C,,", "-n", ca->commonName(),
                             "-i", ca->certPath().string()},
                            as, Output::Inherit, error);
        if (rc == 0) {
            std::cout << "NSS: added to sql:" << db.string() << " as \"" << ca->commonName() << "\"\n";
        } else {
            std::cerr << "portico: certutil could not add the CA to " << db.string() << ": "
                      << (rc < 0 ? error : "exit status " + std::to_string(rc)) << "\n";
            status = kExitFailure;
        }
    }
    std::cout << "Browsers pick the change up after a restart. To undo: " << undo << "\n";
    return status;
}

int runUninstall() {
    // Needs no CA: it removes whatever Portico CA is installed, even if the data directory is gone.
    auto invoker = sudoInvoker();
    fs::path target = systemCaDir() / kSystemCaFile;
    if (::unlink(target.c_str()) == 0) {
        if (!runUpdateCa(target)) return kExitFailure;
        std::cout << "System store: removed " << target.string() << " and ran update-ca-certificates\n";
    } else if (errno == ENOENT) {
        std::cout << "System store: " << target.string() << " not present; nothing to remove\n";
    } else {
        int e = errno;
        std::cerr << "portico: cannot remove " << target.string() << ": " << errnoText(e) << "\n";
        if (isPermissionError(e)) sayRerunWithSudo("uninstall");
        return kExitFailure;
    }

    std::string certutil = findOnPath("certutil");
    if (certutil.empty()) {
        std::cout << "NSS: certutil not found; browser databases left as they are\n";
        return kExitOk;
    }
    int status = kExitOk;
    const Invoker* as = invoker ? &*invoker : nullptr;
    for (const auto& db : nssDatabases(userHome(invoker))) {
        std::vector<std::string> nicknames;
        std::string error;
        if (!nssPorticoNicknames(certutil, db, as, nicknames, error)) {
            std::cerr << "portico: cannot list sql:" << db.string() << ": " << error << "\n";
            status = kExitFailure;
            continue;
        }
        if (nicknames.empty()) std::cout << "NSS: no Portico CA in sql:" << db.string() << "\n";
        for (const auto& nick : nicknames) {
            if (nssRemove(certutil, db, nick, as) > 0) {
                std::cout << "NSS: removed \"" << nick << "\" from sql:" << db.string() << "\n";
            } else {
                std::cerr << "portico: certutil could not remove \"" << nick << "\" from sql:" << db.string()
                          << "\n";
                status = kExitFailure;
            }
        }
    }
    return status;
}

} // namespace

Command addCertCommand(CLI::App& app) {
    auto* cert =
        app.add_subcommand("cert", "Local development CA for HTTPS (tls: auto): show, export, trust");
    cert->require_subcommand(1);
    auto* ca =
        cert->add_subcommand("ca", "Print the CA certificate's path and SHA-256 fingerprint (creates the "
                                   "CA on first use)");
    auto opts = std::make_shared<Options>();
    auto* exportCmd = cert->add_subcommand("export", "Write the CA certificate (PEM) to FILE");
    exportCmd->add_option("file", opts->exportFile, "Destination (- = standard output)")->required();
    auto* install = cert->add_subcommand(
        "install",
        "Trust the CA: system store (update-ca-certificates; needs root) and NSS databases (certutil)");
    auto* uninstall = cert->add_subcommand("uninstall", "Undo `portico cert install`");
    return {cert, [=] {
                if (ca->parsed()) return runCa();
                if (exportCmd->parsed()) return runExport(opts->exportFile);
                if (install->parsed()) return runInstall();
                if (uninstall->parsed()) return runUninstall();
                return kExitUsage;
            }};
}

} // namespace portico::app
