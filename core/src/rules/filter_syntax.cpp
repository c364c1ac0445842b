// The Traffic filter language's syntax (filter_syntax.h).
#include <portico/rules/filter_syntax.h>

#include <portico/http/ascii.h>
#include <portico/http/spelling.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace portico::rules {

namespace {
bool space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// A status value: "404", ">=400", "<300", "!200", "5xx". False when it is none of those.
bool parseStatus(Term& t) {
    std::string_view v = t.value;
    if (v.size() == 3 && std::isdigit(static_cast<unsigned char>(v[0])) && (v[1] == 'x' || v[1] == 'X') &&
        (v[2] == 'x' || v[2] == 'X')) {
        t.op = Term::Op::Class;
        t.number = v[0] - '0';
        return true;
    }
    constexpr std::pair<std::string_view, Term::Op> kOps[] = {
        {">=", Term::Op::Ge}, {"<=", Term::Op::Le}, {"!=", Term::Op::Ne}, {">", Term::Op::Gt},
        {"<", Term::Op::Lt},  {"!", Term::Op::Ne},  {"=", Term::Op::Eq}};
    for (const auto& [text, op] : kOps)
        if (v.starts_with(text)) {
            t.op = op;
            v.remove_prefix(text.size());
            break;
        }
    auto r = std::from_chars(v.data(), v.data() + v.size(), t.number);
    return r.ec == std::errc() && r.ptr == v.data() + v.size() && t.number >= 0 && t.number <= 999;
}
} // namespace

bool statusMatches(const Term& t, int status) {
    switch (t.op) {
    case Term::Op::Eq:
        return status == t.number;
    case Term::Op::Ne:
        return status != t.number;
    case Term::Op::Lt:
        return status < t.number;
    case Term::Op::Le:
        return status <= t.number;
    case Term::Op::Gt:
        return status > t.number;
    case Term::Op::Ge:
        return status >= t.number;
    case Term::Op::Class:
        return status / 100 == t.number;
    }
    return false;
}

std::string termError(const Term& t, const std::string& message) {
    return "column " + std::to_string(t.column + 1) + ": " + message;
}

std::optional<std::vector<Term>> parseTerms(std::string_view expr, std::span<const std::string_view> keys,
                                            std::string& error) {
    std::vector<Term> terms;
    std::size_t i = 0;
    auto fail = [&](std::size_t col, const std::string& msg) {
        error = "column " + std::to_string(col + 1) + ": " + msg;
        return std::nullopt;
    };
    while (i < expr.size()) {
        if (space(expr[i])) {
            ++i;
            continue;
        }
        Term t;
        t.column = i;
        if (expr[i] == '-') {
            t.negate = true;
            ++i;
        }
        std::size_t j = i; // a key or a word
        while (j < expr.size() && !space(expr[j]) && expr[j] != ':' && expr[j] != '"')
            ++j;
        const std::string_view word = expr.substr(i, j - i);
        if (j < expr.size() && expr[j] == ':') {
            t.key = http::lower(word);
            if (std::find(keys.begin(), keys.end(), t.key) == keys.end()) {
                std::string hint;
                if (auto k = http::closestWord(t.key, keys); !k.empty())
                    hint = " (did you mean '" + std::string(k) + "'?)";
                return fail(i, "unknown key '" + std::string(word) + "'" + hint);
            }
            i = j + 1;
        }
        if (i < expr.size() && expr[i] == '"') {
            const auto close = expr.find('"', i + 1);
            if (close == std::string_view::npos) return fail(i, "unterminated quote");
            t.value = std::string(expr.substr(i + 1, close - i - 1));
            i = close + 1;
        } else {
            j = i;
            while (j < expr.size() && !space(expr[j]))
                ++j;
            t.value = std::string(expr.substr(i, j - i));
            i = j;
        }
        if (t.value.empty())
            return fail(t.column, t.key.empty() ? "empty term" : "missing value after '" + t.key + ":'");
        if (t.key == "status" && !parseStatus(t))
            return fail(t.column, "status: expected a number, a comparison (>=400) or a class (4xx), got '" +
                                      t.value + "'");
        terms.push_back(std::move(t));
    }
    return terms;
}

} // namespace portico::rules
