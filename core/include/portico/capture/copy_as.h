// A captured request as something to paste elsewhere: a curl or HTTPie command line, a Python
// script, a fetch() call. Text only: nothing is sent.
#pragma once

#include <portico/capture/exchange.h>

#include <string>
#include <string_view>

namespace portico::capture {

/// A shell command (POSIX sh quoting) that repeats the request: curl -X ... 'URL' -H ... --data-binary ...
/// `baseUrl` replaces scheme://authority when non-empty. Bodies that are not printable go through
/// `printf` escapes. `caFile` (PEM), for an https URL, becomes `--cacert 'caFile'`: Portico's own
/// listeners with `tls: auto` have certificates curl does not trust until the CA is installed.
std::string toCurl(const Exchange& e, std::string_view baseUrl = {}, std::string_view caFile = {});

/// The same request as a Python 3 script using only the standard library (urllib.request, ssl):
/// method, URL, headers (Host, Content-Length and connection fields left to urllib), the body as
/// a bytes literal; prints the status and the body. `baseUrl` and `caFile` as for toCurl().
std::string toPython(const Exchange& e, std::string_view baseUrl = {}, std::string_view caFile = {});

/// The same request as JavaScript: `fetch(url, {method, headers, body})` then the status and the
/// body printed, for a browser console or Node 18+. Header values are byte strings (bytes ≥ 0x80 as
/// \xHH); a body that is not printable UTF-8 is a Uint8Array. Client-owned fields (Host,
/// Content-Length, connection fields, pseudo-headers) are left to fetch; a GET or HEAD body, which
/// fetch refuses, is left out with a comment. With `caFile` (https), a comment says Node needs
/// NODE_EXTRA_CA_CERTS=caFile (a browser needs the CA installed: `portico cert install`).
std::string toFetch(const Exchange& e, std::string_view baseUrl = {}, std::string_view caFile = {});

/// The same request as an HTTPie command (POSIX sh quoting): `http METHOD 'URL' 'Name:value' ...`,
/// an empty value as `Name;`, a value starting with `=` escaped (`Name:\=...`); a printable body
/// with `--raw` (HTTPie 3), any other through `printf` escapes on stdin. With `caFile` (https),
/// `--verify='caFile'`.
std::string toHttpie(const Exchange& e, std::string_view baseUrl = {}, std::string_view caFile = {});

} // namespace portico::capture
