// A small filter language over captured exchanges, shared by the CLI (`--filter`) and the GUI.
//
//   expr    := term { WS term }          all terms must match (AND)
//   term    := ["-"] key ":" value       "-" negates
//            | ["-"] word                 substring of the URL (case-insensitive)
//   key     := status | method | path | url | host | vhost | route | protocol | client | error | header
//            | source | process | rule
//   value   := word | '"' chars '"'
//
//   status:404  status:>=400  status:<300  status:5xx  status:!200
//   method:POST (case-insensitive; "method:GET,HEAD" = any of them)
//   path:/api   (prefix of the path, query excluded)     url:token (substring)
//   host:localhost (substring of the Host/:authority)    vhost:NAME route:NAME (exact)
//   protocol:h1|h2|ws|grpc   client:127.0.0.1 (prefix)   error:yes|no
//   header:NAME (request or response header present) / header:NAME=VALUE (substring)
//   source:server|forward|intercepted|tunnel (Exchange::source)   process:curl (substring of
//   Exchange::clientProcess, "PID COMMAND")   rule:NAME (substring of the name of a rule that
//   changed the exchange, Exchange::rules; -rule:NAME: no such rule did)
#pragma once

#include <portico/capture/exchange.h>
#include <portico/rules/filter_syntax.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace portico::capture {

class Filter {
public:
    /// Parses `expr`; nullopt with `error` ("column 8: unknown key 'stauts' (did you mean 'status'?)").
    /// The empty expression matches everything.
    static std::optional<Filter> parse(std::string_view expr, std::string& error);
    bool matches(const Exchange& e) const;
    bool empty() const { return terms_.empty(); }
    /// True when a term reads headers (`header:`) or the rules that changed the exchange
    /// (`rule:`): matching needs the full record, not a row.
    bool readsHeaders() const {
        for (const auto& t : terms_)
            if (t.key == "header" || t.key == "rule") return true;
        return false;
    }

    using Term = rules::Term; ///< the syntax is shared with rules' matches (rules/filter_syntax.h)

private:
    std::vector<Term> terms_;
};

} // namespace portico::capture
