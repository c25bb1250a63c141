//===- Jinja.cpp - the Jinja subset of HF chat templates ------------------===//
//
// Lexer (jinja2's whitespace rules with trim_blocks and lstrip_blocks), a
// recursive-descent parser (jinja2's grammar and operator precedence) and a
// tree-walking evaluator over values that carry provenance spans (Jinja.h).
// Python semantics where a template can see them: str() of values, truth,
// ==, code-point indexing and slicing, str.strip's Unicode whitespace,
// json.dumps(ensure_ascii=False) for tojson, jinja2's default Undefined.
//
//===----------------------------------------------------------------------===//

#include "swift/Data/Jinja.h"

#include "swift/Html/Html.h"

#include "swift/Plan/Error.h"
#include "swift/Plan/Json.h"

#include "TokenizerText.h" // UTF-8

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

namespace swift::data::jinja {

using plan::UserError;
using ojson = nlohmann::ordered_json;

namespace {

struct Loc {
  int line = 0, col = 0;
};

//===-- text: UTF-8, Python whitespace, spans ----------------------------===//

/// The code point at s[i] and its length (an invalid byte is one "code
/// point" of its own: templates and data are text, this only keeps the
/// renderer total on garbage).
uint32_t cpAt(const std::string &s, size_t i, size_t *len) {
  auto c = static_cast<unsigned char>(s[i]);
  int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + n > s.size()) {
    *len = 1;
    return c;
  }
  uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1f) : n == 3 ? (c & 0x0f) : (c & 0x07);
  for (int k = 1; k < n; ++k) {
    auto d = static_cast<unsigned char>(s[i + k]);
    if ((d >> 6) != 2) {
      *len = 1;
      return c;
    }
    cp = (cp << 6) | (d & 0x3f);
  }
  *len = n;
  return cp;
}

/// Python's str.isspace (the whitespace of strip() and split()).
bool isPySpace(uint32_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 ||
         c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
         c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

/// Byte offsets of each code point of s, plus s.size() at the end.
std::vector<size_t> cpOffsets(const std::string &s) {
  std::vector<size_t> o;
  o.reserve(s.size() + 1);
  for (size_t i = 0, n; i < s.size(); i += n) {
    o.push_back(i);
    cpAt(s, i, &n);
  }
  o.push_back(s.size());
  return o;
}

size_t cpCount(const std::string &s) {
  size_t k = 0;
  for (size_t i = 0, n; i < s.size(); i += n, ++k)
    cpAt(s, i, &n);
  return k;
}

/// The first `n` in `h` from `from` (npos when none), in linear time (KMP
/// for long needles: std::string::find is O(|h|*|n|) at worst).
size_t findIn(const std::string &h, const std::string &n, size_t from = 0) {
  if (n.size() <= 16 || h.size() < from + n.size())
    return h.find(n, from);
  std::vector<size_t> fail(n.size(), 0);
  for (size_t i = 1, k = 0; i < n.size(); ++i) {
    while (k && n[i] != n[k])
      k = fail[k - 1];
    if (n[i] == n[k])
      ++k;
    fail[i] = k;
  }
  for (size_t i = from, k = 0; i < h.size(); ++i) {
    while (k && h[i] != n[k])
      k = fail[k - 1];
    if (h[i] == n[k])
      ++k;
    if (k == n.size())
      return i + 1 - n.size();
  }
  return std::string::npos;
}

struct Span {
  size_t b, e;
  int src;
  size_t off;
  bool rs;
};

/// A string value: its bytes and the ranges copied from tagged inputs.
struct Str {
  std::string s;
  std::vector<Span> sp;
};

void pushSpan(std::vector<Span> &v, const Span &x) {
  if (x.b >= x.e)
    return;
  if (!v.empty()) {
    Span &l = v.back();
    if (l.e == x.b && l.src == x.src && l.rs == x.rs && l.off + (l.e - l.b) == x.off) {
      l.e = x.e;
      return;
    }
  }
  v.push_back(x);
}

void appendStr(Str &d, const Str &x) {
  size_t base = d.s.size();
  d.s += x.s;
  for (const Span &p : x.sp)
    pushSpan(d.sp, {p.b + base, p.e + base, p.src, p.off, p.rs});
}

/// Bytes [b, e) of x, with their spans.
Str sub(const Str &x, size_t b, size_t e) {
  Str r;
  r.s = x.s.substr(b, e - b);
  // spans are ordered and disjoint: from the first that ends after b
  auto first = std::upper_bound(x.sp.begin(), x.sp.end(), b,
                                [](size_t v, const Span &p) { return v < p.e; });
  for (auto it = first; it != x.sp.end() && it->b < e; ++it) {
    const Span &p = *it;
    size_t lo = std::max(b, p.b), hi = std::min(e, p.e);
    if (lo < hi)
      pushSpan(r.sp, {lo - b, hi - b, p.src, p.off + (lo - p.b), p.rs});
  }
  return r;
}

Str plain(std::string s) { return Str{std::move(s), {}}; }

//===-- values -----------------------------------------------------------===//

enum class T { Undef, None, Bool, Int, Float, Str, List, Dict, Ns, Func };

struct Value;
struct DictData;
struct Callable;
struct Interp;
using List = std::vector<Value>;

struct Value {
  T t = T::Undef;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::shared_ptr<const Str> s;
  std::shared_ptr<const List> l;
  std::shared_ptr<const DictData> d;
  std::shared_ptr<DictData> ns; // a namespace(): the one mutable value
  std::shared_ptr<const Callable> fn;
  std::string undef; // an Undefined's name, for its error
  int depth = 0;     // nesting of lists and dicts
  bool refs = false; // holds a namespace or a function (a cycle's link)

  static Value undefined(std::string name) {
    Value v;
    v.undef = std::move(name);
    return v;
  }
  static Value none() {
    Value v;
    v.t = T::None;
    return v;
  }
  static Value boolean(bool x) {
    Value v;
    v.t = T::Bool;
    v.b = x;
    return v;
  }
  static Value integer(int64_t x) {
    Value v;
    v.t = T::Int;
    v.i = x;
    return v;
  }
  static Value real(double x) {
    Value v;
    v.t = T::Float;
    v.f = x;
    return v;
  }
  static Value str(Str x) {
    Value v;
    v.t = T::Str;
    v.s = std::make_shared<const Str>(std::move(x));
    return v;
  }
  static Value str(std::string x) { return str(plain(std::move(x))); }
  static Value list(List x) {
    Value v;
    v.t = T::List;
    for (const Value &e : x) {
      v.depth = std::max(v.depth, e.depth + 1);
      v.refs = v.refs || e.refs;
    }
    v.l = std::make_shared<const List>(std::move(x));
    return v;
  }
  static Value dict(DictData x);
  bool isNumber() const { return t == T::Int || t == T::Float || t == T::Bool; }
};

struct DictData {
  std::vector<std::pair<std::string, Value>> items;
  const Value *find(const std::string &k) const {
    for (auto &kv : items)
      if (kv.first == k)
        return &kv.second;
    return nullptr;
  }
  void set(const std::string &k, Value v) {
    for (auto &kv : items)
      if (kv.first == k) {
        kv.second = std::move(v);
        return;
      }
    items.emplace_back(k, std::move(v));
  }
};

Value Value::dict(DictData x) {
  Value v;
  v.t = T::Dict;
  for (auto &kv : x.items) {
    v.depth = std::max(v.depth, kv.second.depth + 1);
    v.refs = v.refs || kv.second.refs;
  }
  v.d = std::make_shared<const DictData>(std::move(x));
  return v;
}

using Kwargs = std::vector<std::pair<std::string, Value>>;

struct Callable {
  std::string name;
  std::function<Value(Interp &, std::vector<Value> &, Kwargs &, Loc)> call;
};

const char *typeName(const Value &v) {
  switch (v.t) {
  case T::Undef: return "Undefined";
  case T::None: return "NoneType";
  case T::Bool: return "bool";
  case T::Int: return "int";
  case T::Float: return "float";
  case T::Str: return "str";
  case T::List: return "list";
  case T::Dict: return "dict";
  case T::Ns: return "Namespace";
  case T::Func: return "function";
  }
  return "?";
}

//===-- Python's str() and repr() ----------------------------------------===//

/// repr(float): the shortest digits that read back, in Python's layout
/// (1.0, 0.1, 1e-05, 1e+16, inf, nan).
std::string pyFloat(double x) {
  if (std::isnan(x))
    return "nan";
  if (std::isinf(x))
    return x < 0 ? "-inf" : "inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  size_t epos = sci.find('e');
  std::string mant = sci.substr(0, epos);
  int exp = std::stoi(sci.substr(epos + 1));
  bool neg = mant[0] == '-';
  if (neg)
    mant = mant.substr(1);
  std::string digits;
  for (char c : mant)
    if (c != '.')
      digits += c;
  std::string out;
  if (exp < -4 || exp >= 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1)
      out += "." + digits.substr(1);
    char e[16];
    snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += e;
  } else if (exp < 0) {
    out = "0." + std::string(-exp - 1, '0') + digits;
  } else {
    if (digits.size() <= size_t(exp) + 1) {
      out = digits + std::string(exp + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
    }
  }
  return neg ? "-" + out : out;
}

bool reprInto(std::string &out, const Value &v, size_t max);

std::string pyStrRepr(const std::string &s) {
  bool hasSingle = s.find('\'') != std::string::npos;
  bool hasDouble = s.find('"') != std::string::npos;
  char q = hasSingle && !hasDouble ? '"' : '\'';
  std::string out(1, q);
  for (size_t i = 0, n; i < s.size(); i += n) {
    uint32_t c = cpAt(s, i, &n);
    if (c == uint32_t(q) || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) || c == 0xad) {
      char b[8];
      snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    } else {
      out += s.substr(i, n);
    }
  }
  return out + q;
}

/// str(v) as Python prints it ("" for Undefined), into `out`; false when
/// `out` would pass `max` bytes (a list's repr can be far longer than the
/// list: shared elements).
bool strInto(std::string &out, const Value &v, size_t max) {
  switch (v.t) {
  case T::Undef: break;
  case T::None: out += "None"; break;
  case T::Bool: out += v.b ? "True" : "False"; break;
  case T::Int: out += std::to_string(v.i); break;
  case T::Float: out += pyFloat(v.f); break;
  case T::Str: out += v.s->s; break;
  default: return reprInto(out, v, max);
  }
  return out.size() <= max;
}

bool reprInto(std::string &out, const Value &v, size_t max) {
  switch (v.t) {
  case T::Str: out += pyStrRepr(v.s->s); break;
  case T::List:
    out += '[';
    for (size_t k = 0; k < v.l->size(); ++k) {
      if (k)
        out += ", ";
      if (!reprInto(out, (*v.l)[k], max))
        return false;
    }
    out += ']';
    break;
  case T::Dict: {
    out += '{';
    bool first = true;
    for (auto &kv : v.d->items) {
      out += (first ? "" : ", ") + pyStrRepr(kv.first) + ": ";
      if (!reprInto(out, kv.second, max))
        return false;
      first = false;
    }
    out += '}';
    break;
  }
  case T::Ns: out += "<Namespace>"; break;
  case T::Func: out += "<function>"; break;
  default: return strInto(out, v, max);
  }
  return out.size() <= max;
}

/// str(v) for messages and names: cut at a few hundred bytes.
std::string pyStr(const Value &v) {
  std::string out;
  strInto(out, v, 400);
  return out;
}
std::string pyRepr(const Value &v) {
  std::string out;
  reprInto(out, v, 400);
  return out;
}

bool truthy(const Value &v) {
  switch (v.t) {
  case T::Undef:
  case T::None: return false;
  case T::Bool: return v.b;
  case T::Int: return v.i != 0;
  case T::Float: return v.f != 0;
  case T::Str: return !v.s->s.empty();
  case T::List: return !v.l->empty();
  case T::Dict: return !v.d->items.empty();
  default: return true;
  }
}

double num(const Value &v) {
  return v.t == T::Float ? v.f : v.t == T::Int ? double(v.i) : double(v.b);
}

/// Python's ==; `tick` is charged one step per element compared (shared
/// elements make a comparison far longer than the values look).
bool pyEqual(const Value &a, const Value &b, const std::function<void(uint64_t)> &tick) {
  tick(1);
  if (a.isNumber() && b.isNumber()) {
    if (a.t != T::Float && b.t != T::Float)
      return (a.t == T::Int ? a.i : a.b) == (b.t == T::Int ? b.i : b.b);
    return num(a) == num(b);
  }
  if (a.t != b.t)
    return false;
  switch (a.t) {
  case T::Undef:
  case T::None: return true;
  case T::Str:
    tick(a.s->s.size() / 1024);
    return a.s->s == b.s->s;
  case T::List:
    if (a.l->size() != b.l->size())
      return false;
    for (size_t k = 0; k < a.l->size(); ++k)
      if (!pyEqual((*a.l)[k], (*b.l)[k], tick))
        return false;
    return true;
  case T::Dict:
    if (a.d->items.size() != b.d->items.size())
      return false;
    for (auto &kv : a.d->items) {
      const Value *o = b.d->find(kv.first);
      if (!o || !pyEqual(kv.second, *o, tick))
        return false;
    }
    return true;
  case T::Ns: return a.ns == b.ns;
  case T::Func: return a.fn == b.fn;
  default: return false;
  }
}

//===-- json.dumps(ensure_ascii=False), as transformers' tojson ------------===//

struct JsonStyle {
  int indent = -1; // None
  std::string itemSep = ", ", keySep = ": ";
  bool sortKeys = false, ensureAscii = false;
};

void jsonString(std::string &out, const std::string &s, bool ascii) {
  out += '"';
  for (size_t i = 0, n; i < s.size(); i += n) {
    uint32_t c = cpAt(s, i, &n);
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    case '\b': out += "\\b"; break;
    case '\f': out += "\\f"; break;
    default:
      if (c < 0x20 || (ascii && c >= 0x7f)) {
        char b[16];
        if (c >= 0x10000) {
          uint32_t x = c - 0x10000;
          snprintf(b, sizeof b, "\\u%04x\\u%04x", 0xd800 + (x >> 10), 0xdc00 + (x & 0x3ff));
        } else {
          snprintf(b, sizeof b, "\\u%04x", c);
        }
        out += b;
      } else {
        out.append(s, i, n);
      }
    }
  }
  out += '"';
}

//===-- the template's tree ----------------------------------------------===//

struct Expr;
using ExprP = std::unique_ptr<Expr>;

struct Expr {
  enum K {
    Lit, Name, ListE, DictE, Attr, Item, Slice, Call, Filter, Test, Neg, Pos,
    Not, And, Or, Bin, Cmp, Cond
  };
  K k;
  Loc at;
  Value lit;
  std::string name; // Name, Attr, Filter, Test; Bin's operator
  bool negated = false;
  std::vector<ExprP> a; // operands (Slice: obj, start, stop, step; may be null)
  std::vector<std::pair<std::string, ExprP>> kw;
  std::vector<std::string> ops; // Cmp's chain
  int height = 1;
};

struct Node;
using Body = std::vector<std::unique_ptr<Node>>;

struct Node {
  enum K { Text, Out, If, For, Set, SetBlock, Macro, Break, Continue, Gen };
  K k;
  Loc at;
  std::string text;            // Text; Set/SetBlock/Macro: the name
  std::string attr;            // Set: ns.attr
  ExprP e;                     // Out, Set's value, For's iterable
  ExprP cond;                  // For's filter
  std::vector<std::string> targets;
  std::vector<std::pair<ExprP, Body>> branches; // If (null condition: else)
  Body body, elseBody;
  std::vector<std::pair<std::string, ExprP>> params; // Macro
};

} // namespace

struct Program {
  std::string name;
  Body body;
};

namespace {

/// Every error: "NAME:LINE:COL: why", one line of a few hundred bytes at
/// most (a name in a template can be kilobytes long).
[[noreturn]] void failAt(const std::string &name, Loc at, const std::string &why) {
  throw UserError(plan::briefText(name, 200) + ":" + std::to_string(at.line) + ":" +
                  std::to_string(at.col) + ": " + plan::briefText(why, 500));
}

//===-- lexer ------------------------------------------------------------===//

struct Tok {
  enum K { Data, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, Eof };
  K k;
  std::string v;
  Loc at;
  int64_t iv = 0;
  double fv = 0;
};

class Lexer {
public:
  Lexer(const std::string &text, const std::string &name) : name_(name) {
    // jinja2: newlines normalized to \n, one trailing newline dropped
    // (keep_trailing_newline=False).
    src_.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\r') {
        src_ += '\n';
        if (i + 1 < text.size() && text[i + 1] == '\n')
          ++i;
      } else {
        src_ += text[i];
      }
    }
    if (!src_.empty() && src_.back() == '\n')
      src_.pop_back();
    lineStarts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i)
      if (src_[i] == '\n')
        lineStarts_.push_back(i + 1);
  }

  Loc loc(size_t pos) const {
    auto it = std::upper_bound(lineStarts_.begin(), lineStarts_.end(), pos);
    size_t line = it - lineStarts_.begin();
    return {int(line), int(pos - lineStarts_[line - 1] + 1)};
  }

  std::vector<Tok> run() {
    std::vector<Tok> out;
    size_t pos = 0, n = src_.size();
    bool lineStarting = true;
    while (pos < n) {
      size_t j = pos;
      while (true) {
        j = src_.find('{', j);
        if (j == std::string::npos || j + 1 >= n) {
          j = std::string::npos;
          break;
        }
        char c = src_[j + 1];
        if (c == '{' || c == '%' || c == '#')
          break;
        ++j;
      }
      if (j == std::string::npos) {
        out.push_back({Tok::Data, src_.substr(pos), loc(pos)});
        break;
      }
      char kind = src_[j + 1];
      size_t after = j + 2;
      bool minus = after < n && src_[after] == '-';
      bool plus = kind != '{' && after < n && src_[after] == '+';
      std::string text = src_.substr(pos, j - pos);
      if (minus) {
        text = rstripSpace(text);
      } else if (kind != '{' && !plus) { // lstrip_blocks
        size_t lpos = text.rfind('\n');
        lpos = lpos == std::string::npos ? 0 : lpos + 1;
        if ((lpos > 0 || lineStarting) &&
            text.find_first_not_of(" \t", lpos) == std::string::npos)
          text.resize(lpos);
      }
      if (!text.empty())
        out.push_back({Tok::Data, text, loc(pos)});
      size_t p = after + (minus || plus ? 1 : 0);
      if (kind == '#') {
        size_t e = src_.find("#}", p);
        if (e == std::string::npos)
          failAt(name_, loc(j), "unclosed comment '{#'");
        bool endMinus = e > p && src_[e - 1] == '-';
        bool endPlus = e > p && src_[e - 1] == '+';
        pos = endTag(e + 2, endMinus, endPlus, true);
      } else {
        out.push_back({kind == '{' ? Tok::VarBegin : Tok::BlockBegin, "", loc(j)});
        pos = lexTag(out, p, kind, j);
      }
      lineStarting = pos > 0 && src_[pos - 1] == '\n';
    }
    out.push_back({Tok::Eof, "", loc(n)});
    return out;
  }

private:
  std::string rstripSpace(const std::string &t) {
    auto off = cpOffsets(t);
    size_t k = off.size() - 1;
    while (k > 0) {
      size_t len;
      if (!isPySpace(cpAt(t, off[k - 1], &len)))
        break;
      --k;
    }
    return t.substr(0, off[k]);
  }

  /// The position after a tag's end at `pos`, its whitespace control done.
  size_t endTag(size_t pos, bool minus, bool plus, bool block) {
    if (minus) {
      while (pos < src_.size()) {
        size_t len;
        if (!isPySpace(cpAt(src_, pos, &len)))
          break;
        pos += len;
      }
    } else if (block && !plus && pos < src_.size() && src_[pos] == '\n') {
      ++pos; // trim_blocks
    }
    return pos;
  }

  size_t lexTag(std::vector<Tok> &out, size_t p, char kind, size_t start) {
    size_t n = src_.size();
    int depth = 0;
    const char close = kind == '{' ? '}' : '%';
    while (true) {
      while (p < n && (src_[p] == ' ' || src_[p] == '\t' || src_[p] == '\n'))
        ++p;
      if (p >= n)
        failAt(name_, loc(start), std::string("unclosed tag '{") + kind + "'");
      if (depth == 0) {
        bool m = src_[p] == '-' || (kind == '%' && src_[p] == '+');
        size_t q = p + (m ? 1 : 0);
        if (q + 1 < n && src_[q] == close && src_[q + 1] == '}') {
          out.push_back({kind == '{' ? Tok::VarEnd : Tok::BlockEnd, "", loc(p)});
          return endTag(q + 2, m && src_[p] == '-', m && src_[p] == '+', kind == '%');
        }
      }
      Loc at = loc(p);
      char c = src_[p];
      if (isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t q = p;
        while (q < n && (isalnum(static_cast<unsigned char>(src_[q])) || src_[q] == '_'))
          ++q;
        out.push_back({Tok::Name, src_.substr(p, q - p), at});
        p = q;
      } else if (isdigit(static_cast<unsigned char>(c))) {
        size_t q = p;
        while (q < n && (isdigit(static_cast<unsigned char>(src_[q])) || src_[q] == '_'))
          ++q;
        bool isFloat = false;
        if (q + 1 < n && src_[q] == '.' && isdigit(static_cast<unsigned char>(src_[q + 1]))) {
          isFloat = true;
          ++q;
          while (q < n && (isdigit(static_cast<unsigned char>(src_[q])) || src_[q] == '_'))
            ++q;
        }
        if (q < n && (src_[q] == 'e' || src_[q] == 'E')) {
          size_t r = q + 1;
          if (r < n && (src_[r] == '+' || src_[r] == '-'))
            ++r;
          if (r < n && isdigit(static_cast<unsigned char>(src_[r]))) {
            isFloat = true;
            q = r;
            while (q < n && isdigit(static_cast<unsigned char>(src_[q])))
              ++q;
          }
        }
        std::string digits;
        for (size_t k = p; k < q; ++k)
          if (src_[k] != '_')
            digits += src_[k];
        Tok t{isFloat ? Tok::Float : Tok::Int, digits, at};
        if (isFloat) {
          t.fv = std::strtod(digits.c_str(), nullptr);
        } else {
          auto r = std::from_chars(digits.data(), digits.data() + digits.size(), t.iv);
          if (r.ec != std::errc())
            failAt(name_, at, "integer literal " + plan::briefText(digits, 30) +
                                  " out of range (64-bit integers only)");
        }
        out.push_back(t);
        p = q;
      } else if (c == '\'' || c == '"') {
        out.push_back({Tok::String, lexString(p, at), at});
      } else {
        static const char *ops[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "/",
                                    "*", "%", "~", "[", "]", "(", ")", "{", "}",
                                    ",", ".", ":", "|", "=", "<", ">"};
        const char *found = nullptr;
        for (const char *op : ops)
          if (src_.compare(p, strlen(op), op) == 0) {
            found = op;
            break;
          }
        if (!found) {
          size_t len;
          cpAt(src_, p, &len);
          failAt(name_, at, "unexpected character " +
                                plan::briefText(src_.substr(p, len), 10) + " in a tag");
        }
        std::string op = found;
        if (op == "(" || op == "[" || op == "{")
          ++depth;
        else if (op == ")" || op == "]" || op == "}") {
          if (depth == 0)
            failAt(name_, at, "unbalanced '" + op + "'");
          --depth;
        }
        out.push_back({Tok::Op, op, at});
        p += op.size();
      }
    }
  }

  /// A quoted string at p (Python's escapes); p moves past it.
  std::string lexString(size_t &p, Loc at) {
    char q = src_[p++];
    std::string out;
    size_t n = src_.size();
    while (true) {
      if (p >= n)
        failAt(name_, at, "unterminated string");
      char c = src_[p++];
      if (c == q)
        return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (p >= n)
        failAt(name_, at, "unterminated string");
      char e = src_[p++];
      auto hex = [&](int digits) {
        if (p + digits > n)
          failAt(name_, at, "truncated \\x/\\u escape in a string");
        uint32_t v = 0;
        for (int k = 0; k < digits; ++k) {
          char h = src_[p++];
          int d = isdigit(static_cast<unsigned char>(h)) ? h - '0'
                  : (h >= 'a' && h <= 'f')               ? h - 'a' + 10
                  : (h >= 'A' && h <= 'F')               ? h - 'A' + 10
                                                         : -1;
          if (d < 0)
            failAt(name_, at, "bad \\x/\\u escape in a string");
          v = v * 16 + d;
        }
        if (v > 0x10ffff || (v >= 0xd800 && v < 0xe000))
          failAt(name_, at, "escape of an invalid code point in a string");
        out += tokenizer_text::utf8Encode(v);
      };
      switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      case '\n': break; // a line continuation
      case 'x': hex(2); break;
      case 'u': hex(4); break;
      case 'U': hex(8); break;
      case 'N': failAt(name_, at, "the \\N{...} escape is not supported");
      default:
        if (e >= '0' && e <= '7')
          failAt(name_, at, "octal escapes are not supported");
        out += '\\';
        out += e;
      }
    }
  }

  const std::string &name_;
  std::string src_;
  std::vector<size_t> lineStarts_;
};

//===-- parser -----------------------------------------------------------===//

const std::set<std::string> kFilters = {
    "abs", "capitalize", "count", "d", "default", "e", "escape", "first", "float",
    "int", "items", "join", "last", "length", "list", "lower", "map", "reject",
    "rejectattr", "replace", "reverse", "safe", "select", "selectattr",
    "string", "title", "tojson", "trim", "upper"};
/// jinja2's filters outside the subset: refused by name where they stand.
const std::set<std::string> kRefusedFilters = {
    "attr", "batch", "center", "dictsort", "filesizeformat", "forceescape", "format",
    "groupby", "indent", "max", "min", "pprint", "random", "round", "slice", "sort",
    "striptags", "sum", "truncate", "unique", "urlencode", "urlize", "wordcount",
    "wordwrap", "xmlattr"};
const std::set<std::string> kTests = {
    "boolean", "callable", "defined", "divisibleby", "eq", "equalto", "escaped",
    "even", "false", "float", "ge", "gt", "in", "integer", "iterable", "le",
    "lower", "lt", "mapping", "ne", "none", "number", "odd", "sameas", "sequence",
    "string", "true", "undefined", "upper", "==", "!=", "<", ">", "<=", ">=",
    "greaterthan", "lessthan"};

constexpr int kMaxParseDepth = 100;
constexpr int kMaxExprHeight = 256;
constexpr int kMaxValueDepth = 512; // over parseJson's 256 of the context

class Parser {
public:
  Parser(std::vector<Tok> toks, const std::string &name)
      : t_(std::move(toks)), name_(name) {}

  Body parseTemplate() {
    std::string end;
    Body b = parseBody({}, end);
    return b;
  }

private:
  struct DepthGuard {
    Parser &p;
    DepthGuard(Parser &p, Loc at) : p(p) {
      if (++p.depth_ > kMaxParseDepth)
        p.fail(at, "nesting deeper than " + std::to_string(kMaxParseDepth));
    }
    ~DepthGuard() { --p.depth_; }
  };

  [[noreturn]] void fail(Loc at, const std::string &why) { failAt(name_, at, why); }
  const Tok &cur() const { return t_[i_]; }
  const Tok &peek(size_t k = 1) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  bool isOp(const char *op) const { return cur().k == Tok::Op && cur().v == op; }
  bool isName(const char *n) const { return cur().k == Tok::Name && cur().v == n; }
  std::string describe(const Tok &t) const {
    switch (t.k) {
    case Tok::Eof: return "the end of the template";
    case Tok::VarEnd: return "the end of the '{{' tag";
    case Tok::BlockEnd: return "the end of the '{%' tag";
    case Tok::String: return "a string";
    case Tok::Data: return "text";
    default: return "'" + plan::briefText(t.v, 30) + "'";
    }
  }
  void expectOp(const char *op) {
    if (!isOp(op))
      fail(cur().at, std::string("expected '") + op + "', found " + describe(cur()));
    ++i_;
  }
  std::string expectName() {
    if (cur().k != Tok::Name)
      fail(cur().at, "expected a name, found " + describe(cur()));
    return t_[i_++].v;
  }
  void expectBlockEnd(const std::string &tag) {
    if (cur().k != Tok::BlockEnd)
      fail(cur().at, "expected the end of the '" + tag + "' tag, found " + describe(cur()));
    ++i_;
  }

  /// Nodes until a block tag in `ends` (its name in `end`, the stream after
  /// the name) or the end of the template (only when `ends` is empty).
  Body parseBody(const std::set<std::string> &ends, std::string &end) {
    Body body;
    while (true) {
      const Tok &t = cur();
      if (t.k == Tok::Eof) {
        if (!ends.empty())
          fail(t.at, "unexpected end of template: expected " + join(ends));
        return body;
      }
      if (t.k == Tok::Data) {
        auto n = std::make_unique<Node>();
        n->k = Node::Text;
        n->at = t.at;
        n->text = t.v;
        body.push_back(std::move(n));
        ++i_;
        continue;
      }
      if (t.k == Tok::VarBegin) {
        auto n = std::make_unique<Node>();
        n->k = Node::Out;
        n->at = t.at;
        ++i_;
        n->e = parseTupleOrExpr();
        if (cur().k != Tok::VarEnd)
          fail(cur().at, "expected the end of the '{{' tag, found " + describe(cur()));
        ++i_;
        body.push_back(std::move(n));
        continue;
      }
      if (t.k != Tok::BlockBegin)
        fail(t.at, "unexpected " + describe(t));
      ++i_;
      if (cur().k != Tok::Name)
        fail(cur().at, "expected a tag name, found " + describe(cur()));
      std::string tag = cur().v;
      Loc at = cur().at;
      if (ends.count(tag)) {
        ++i_;
        end = tag;
        return body;
      }
      ++i_;
      body.push_back(parseStatement(tag, at, t.at));
    }
  }

  static std::string join(const std::set<std::string> &s) {
    std::string out;
    for (auto &x : s)
      out += (out.empty() ? "'" : " or '") + x + "'";
    return out;
  }

  std::unique_ptr<Node> parseStatement(const std::string &tag, Loc at, Loc open) {
    DepthGuard g(*this, at);
    auto n = std::make_unique<Node>();
    n->at = open;
    std::string end;
    if (tag == "if") {
      n->k = Node::If;
      ExprP c = parseExpr();
      expectBlockEnd("if");
      while (true) {
        Body b = parseBody({"elif", "else", "endif"}, end);
        n->branches.emplace_back(std::move(c), std::move(b));
        if (end == "elif") {
          c = parseExpr();
          expectBlockEnd("elif");
        } else if (end == "else") {
          expectBlockEnd("else");
          Body eb = parseBody({"endif"}, end);
          n->branches.emplace_back(nullptr, std::move(eb));
          expectBlockEnd("endif");
          break;
        } else {
          expectBlockEnd("endif");
          break;
        }
      }
    } else if (tag == "for") {
      n->k = Node::For;
      bool paren = isOp("(");
      if (paren)
        ++i_;
      n->targets.push_back(expectName());
      while (isOp(",")) {
        ++i_;
        n->targets.push_back(expectName());
      }
      if (paren)
        expectOp(")");
      if (!isName("in"))
        fail(cur().at, "expected 'in' in the 'for' tag, found " + describe(cur()));
      ++i_;
      n->e = parseOr();
      if (isOp(",")) // for x in a, b
        fail(cur().at, "a 'for' over a tuple is not supported");
      if (isName("if")) {
        ++i_;
        n->cond = parseExpr();
      }
      if (isName("recursive"))
        fail(cur().at, "recursive loops are not supported");
      expectBlockEnd("for");
      ++loops_;
      n->body = parseBody({"else", "endfor"}, end);
      --loops_;
      if (end == "else") {
        expectBlockEnd("else");
        n->elseBody = parseBody({"endfor"}, end);
      }
      expectBlockEnd("endfor");
    } else if (tag == "set") {
      n->text = expectName();
      if (isOp(".")) {
        ++i_;
        n->attr = expectName();
      }
      if (isOp(","))
        fail(cur().at, "'set' of several names is not supported");
      if (isOp("=")) {
        ++i_;
        n->k = Node::Set;
        n->e = parseTupleOrExpr();
        expectBlockEnd("set");
      } else {
        if (!n->attr.empty())
          fail(cur().at, "a block 'set' of an attribute is not supported");
        if (isOp("|"))
          fail(cur().at, "filters on a block 'set' are not supported");
        n->k = Node::SetBlock;
        expectBlockEnd("set");
        n->body = parseBody({"endset"}, end);
        expectBlockEnd("endset");
      }
    } else if (tag == "macro") {
      n->k = Node::Macro;
      n->text = expectName();
      expectOp("(");
      while (!isOp(")")) {
        std::string p = expectName();
        ExprP def;
        if (isOp("=")) {
          ++i_;
          def = parseExpr();
        }
        n->params.emplace_back(p, std::move(def));
        if (!isOp(","))
          break;
        ++i_;
      }
      expectOp(")");
      expectBlockEnd("macro");
      int saved = loops_;
      loops_ = 0;
      n->body = parseBody({"endmacro"}, end);
      loops_ = saved;
      expectBlockEnd("endmacro");
    } else if (tag == "break" || tag == "continue") {
      if (loops_ == 0)
        fail(at, "'" + tag + "' outside a loop");
      n->k = tag == "break" ? Node::Break : Node::Continue;
      expectBlockEnd(tag);
    } else if (tag == "generation") {
      n->k = Node::Gen;
      expectBlockEnd("generation");
      n->body = parseBody({"endgeneration"}, end);
      expectBlockEnd("endgeneration");
    } else if (tag == "elif" || tag == "else" || tag.rfind("end", 0) == 0) {
      fail(at, "unexpected '" + tag + "' (no open block takes it)");
    } else {
      static const std::set<std::string> jinjaTags = {
          "call", "filter", "include", "import", "from", "extends", "block", "with",
          "raw", "autoescape", "do", "trans", "pluralize", "print"};
      if (jinjaTags.count(tag))
        fail(at, "the '" + tag + "' tag is not supported (docs/runtime.md, Chat templates)");
      fail(at, "unknown tag '" + plan::briefText(tag, 30) + "'");
    }
    return n;
  }

  /// Appends an operand. A node's height (its deepest chain of operands)
  /// is bounded: `a.b.c...` and `1+1+1...` nest without recursion in the
  /// parser, but the tree's destructor and the evaluator recurse.
  void add(Expr &e, ExprP x) {
    if (x) {
      e.height = std::max(e.height, x->height + 1);
      if (e.height > kMaxExprHeight)
        fail(x->at, "an expression nested deeper than " + std::to_string(kMaxExprHeight));
    }
    e.a.push_back(std::move(x));
  }
  void addKw(Expr &e, const std::string &key, ExprP x) {
    e.height = std::max(e.height, x->height + 1);
    if (e.height > kMaxExprHeight)
      fail(x->at, "an expression nested deeper than " + std::to_string(kMaxExprHeight));
    e.kw.emplace_back(key, std::move(x));
  }

  ExprP make(Expr::K k, Loc at) {
    auto e = std::make_unique<Expr>();
    e->k = k;
    e->at = at;
    return e;
  }

  /// `a, b` (a tuple: a list value) or one expression.
  ExprP parseTupleOrExpr() {
    Loc at = cur().at;
    ExprP e = parseExpr();
    if (!isOp(","))
      return e;
    ExprP t = make(Expr::ListE, at);
    add(*t, std::move(e));
    while (isOp(",")) {
      ++i_;
      if (cur().k == Tok::VarEnd || cur().k == Tok::BlockEnd)
        break;
      add(*t, parseExpr());
    }
    return t;
  }

  ExprP parseExpr() {
    DepthGuard g(*this, cur().at);
    ExprP e = parseOr();
    while (isName("if")) {
      Loc at = cur().at;
      ++i_;
      ExprP c = make(Expr::Cond, at);
      ExprP cond = parseOr();
      ExprP other;
      if (isName("else")) {
        ++i_;
        other = parseExpr();
      }
      add(*c, std::move(e));
      add(*c, std::move(cond));
      add(*c, std::move(other));
      e = std::move(c);
    }
    return e;
  }

  ExprP binary(Expr::K k, ExprP l, ExprP r, Loc at, std::string op = "") {
    ExprP e = make(k, at);
    e->name = std::move(op);
    add(*e, std::move(l));
    add(*e, std::move(r));
    return e;
  }

  ExprP parseOr() {
    ExprP e = parseAnd();
    while (isName("or")) {
      Loc at = cur().at;
      ++i_;
      e = binary(Expr::Or, std::move(e), parseAnd(), at);
    }
    return e;
  }
  ExprP parseAnd() {
    ExprP e = parseNot();
    while (isName("and")) {
      Loc at = cur().at;
      ++i_;
      e = binary(Expr::And, std::move(e), parseNot(), at);
    }
    return e;
  }
  ExprP parseNot() {
    if (isName("not")) {
      DepthGuard g(*this, cur().at);
      ExprP e = make(Expr::Not, cur().at);
      ++i_;
      add(*e, parseNot());
      return e;
    }
    return parseCompare();
  }
  ExprP parseCompare() {
    Loc at = cur().at;
    ExprP first = parseMath1();
    ExprP c;
    while (true) {
      std::string op;
      if (cur().k == Tok::Op && (cur().v == "==" || cur().v == "!=" || cur().v == "<" ||
                                 cur().v == ">" || cur().v == "<=" || cur().v == ">=")) {
        op = cur().v;
        ++i_;
      } else if (isName("in")) {
        op = "in";
        ++i_;
      } else if (isName("not") && peek().k == Tok::Name && peek().v == "in") {
        op = "notin";
        i_ += 2;
      } else {
        break;
      }
      if (!c) {
        c = make(Expr::Cmp, at);
        add(*c, std::move(first));
      }
      c->ops.push_back(op);
      add(*c, parseMath1());
    }
    return c ? std::move(c) : std::move(first);
  }
  ExprP parseMath1() {
    ExprP e = parseConcat();
    while (isOp("+") || isOp("-")) {
      Loc at = cur().at;
      std::string op = t_[i_++].v;
      e = binary(Expr::Bin, std::move(e), parseConcat(), at, op);
    }
    return e;
  }
  ExprP parseConcat() {
    ExprP e = parseMath2();
    while (isOp("~")) {
      Loc at = cur().at;
      ++i_;
      e = binary(Expr::Bin, std::move(e), parseMath2(), at, "~");
    }
    return e;
  }
  ExprP parseMath2() {
    ExprP e = parsePow();
    while (isOp("*") || isOp("/") || isOp("//") || isOp("%")) {
      Loc at = cur().at;
      std::string op = t_[i_++].v;
      e = binary(Expr::Bin, std::move(e), parsePow(), at, op);
    }
    return e;
  }
  ExprP parsePow() {
    ExprP e = parseUnary(true);
    while (isOp("**")) {
      Loc at = cur().at;
      ++i_;
      e = binary(Expr::Bin, std::move(e), parseUnary(true), at, "**");
    }
    return e;
  }
  ExprP parseUnary(bool withFilter) {
    DepthGuard g(*this, cur().at);
    ExprP e;
    if (isOp("-") || isOp("+")) {
      e = make(isOp("-") ? Expr::Neg : Expr::Pos, cur().at);
      ++i_;
      add(*e, parseUnary(false));
    } else {
      e = parsePrimary();
    }
    e = parsePostfix(std::move(e));
    if (withFilter)
      e = parseFilterExpr(std::move(e));
    return e;
  }

  ExprP parsePrimary() {
    const Tok &t = cur();
    Loc at = t.at;
    if (t.k == Tok::Name) {
      ++i_;
      ExprP e = make(Expr::Lit, at);
      if (t.v == "true" || t.v == "True")
        e->lit = Value::boolean(true);
      else if (t.v == "false" || t.v == "False")
        e->lit = Value::boolean(false);
      else if (t.v == "none" || t.v == "None")
        e->lit = Value::none();
      else {
        e->k = Expr::Name;
        e->name = t.v;
      }
      return e;
    }
    if (t.k == Tok::String) {
      std::string s;
      while (cur().k == Tok::String)
        s += t_[i_++].v;
      ExprP e = make(Expr::Lit, at);
      e->lit = Value::str(s);
      return e;
    }
    if (t.k == Tok::Int || t.k == Tok::Float) {
      ++i_;
      ExprP e = make(Expr::Lit, at);
      e->lit = t.k == Tok::Int ? Value::integer(t.iv) : Value::real(t.fv);
      return e;
    }
    if (isOp("(")) {
      ++i_;
      if (isOp(")")) {
        ++i_;
        return make(Expr::ListE, at);
      }
      ExprP e = parseExpr();
      if (isOp(",")) {
        ExprP l = make(Expr::ListE, at);
        add(*l, std::move(e));
        while (isOp(",")) {
          ++i_;
          if (isOp(")"))
            break;
          add(*l, parseExpr());
        }
        e = std::move(l);
      }
      expectOp(")");
      return e;
    }
    if (isOp("[")) {
      ++i_;
      ExprP l = make(Expr::ListE, at);
      while (!isOp("]")) {
        add(*l, parseExpr());
        if (!isOp(","))
          break;
        ++i_;
      }
      expectOp("]");
      return l;
    }
    if (isOp("{")) {
      ++i_;
      ExprP d = make(Expr::DictE, at);
      while (!isOp("}")) {
        add(*d, parseExpr());
        expectOp(":");
        add(*d, parseExpr());
        if (!isOp(","))
          break;
        ++i_;
      }
      expectOp("}");
      return d;
    }
    fail(at, "unexpected " + describe(t) + " in an expression");
  }

  ExprP parsePostfix(ExprP e) {
    while (true) {
      if (isOp(".")) {
        Loc at = cur().at;
        ++i_;
        if (cur().k == Tok::Int) {
          ExprP it = make(Expr::Item, at);
          ExprP idx = make(Expr::Lit, cur().at);
          idx->lit = Value::integer(cur().iv);
          ++i_;
          add(*it, std::move(e));
          add(*it, std::move(idx));
          e = std::move(it);
          continue;
        }
        ExprP a = make(Expr::Attr, at);
        a->name = expectName();
        add(*a, std::move(e));
        e = std::move(a);
      } else if (isOp("[")) {
        e = parseSubscript(std::move(e));
      } else if (isOp("(")) {
        e = parseCall(std::move(e), Expr::Call);
      } else {
        return e;
      }
    }
  }

  ExprP parseSubscript(ExprP obj) {
    DepthGuard g(*this, cur().at);
    Loc at = cur().at;
    ++i_;
    ExprP parts[3];
    int colons = 0;
    bool any = false;
    while (true) {
      if (isOp(":")) {
        if (++colons > 2)
          fail(cur().at, "a slice takes at most two ':'");
        ++i_;
        continue;
      }
      if (isOp("]"))
        break;
      if (parts[colons])
        fail(cur().at, "expected ':' or ']', found " + describe(cur()));
      parts[colons] = parseExpr();
      any = true;
      if (isOp(","))
        fail(cur().at, "a subscript with ',' is not supported");
    }
    expectOp("]");
    if (colons == 0) {
      if (!any)
        fail(at, "an empty subscript");
      ExprP it = make(Expr::Item, at);
      add(*it, std::move(obj));
      add(*it, std::move(parts[0]));
      return it;
    }
    ExprP s = make(Expr::Slice, at);
    add(*s, std::move(obj));
    for (auto &p : parts)
      add(*s, std::move(p));
    return s;
  }

  /// `(args, name=value)` after `e` into a node of kind k (Call: the callee
  /// is a[0]; Filter/Test: the operand is).
  ExprP parseCall(ExprP e, Expr::K k, ExprP node = nullptr) {
    DepthGuard g(*this, cur().at);
    if (!node) { // a call is located where its callee starts
      node = make(k, e->at);
      add(*node, std::move(e));
    }
    expectOp("(");
    while (!isOp(")")) {
      if (isOp("*") || isOp("**"))
        fail(cur().at, "'*args' and '**kwargs' are not supported");
      if (cur().k == Tok::Name && peek().k == Tok::Op && peek().v == "=") {
        std::string key = t_[i_].v;
        i_ += 2;
        addKw(*node, key, parseExpr());
      } else {
        if (!node->kw.empty())
          fail(cur().at, "a positional argument after a keyword argument");
        add(*node, parseExpr());
      }
      if (!isOp(","))
        break;
      ++i_;
    }
    expectOp(")");
    return node;
  }

  ExprP parseFilterExpr(ExprP e) {
    while (true) {
      if (isOp("|")) {
        ++i_;
        Loc at = cur().at;
        std::string f = expectName();
        if (kRefusedFilters.count(f))
          fail(at, "the filter '" + f + "' is not supported (docs/runtime.md, Chat templates)");
        if (!kFilters.count(f))
          fail(at, "unknown filter '" + plan::briefText(f, 30) + "'");
        ExprP n = make(Expr::Filter, at);
        n->name = f;
        add(*n, std::move(e));
        if (isOp("("))
          n = parseCall(nullptr, Expr::Filter, std::move(n));
        e = std::move(n);
      } else if (isName("is")) {
        ++i_;
        Loc at = cur().at;
        bool neg = false;
        if (isName("not")) {
          neg = true;
          ++i_;
        }
        std::string test;
        if (cur().k == Tok::Name)
          test = t_[i_++].v;
        else if (cur().k == Tok::Op && kTests.count(cur().v))
          test = t_[i_++].v;
        else
          fail(cur().at, "expected a test name after 'is', found " + describe(cur()));
        if (!kTests.count(test))
          fail(at, "unknown or unsupported test '" + plan::briefText(test, 30) + "'");
        ExprP n = make(Expr::Test, at);
        n->name = test;
        n->negated = neg;
        add(*n, std::move(e));
        if (isOp("(")) {
          n = parseCall(nullptr, Expr::Test, std::move(n));
        } else if ((cur().k == Tok::Name || cur().k == Tok::String || cur().k == Tok::Int ||
                    cur().k == Tok::Float || isOp("[") || isOp("{")) &&
                   !isName("else") && !isName("or") && !isName("and")) {
          if (isName("is"))
            fail(cur().at, "tests cannot be chained with 'is'");
          add(*n, parsePostfix(parsePrimary()));
        }
        e = std::move(n);
      } else if (isOp("(")) {
        e = parseCall(std::move(e), Expr::Call);
      } else {
        return e;
      }
    }
  }

  std::vector<Tok> t_;
  size_t i_ = 0;
  const std::string &name_;
  int depth_ = 0;
  int loops_ = 0;
};

//===-- the evaluator ----------------------------------------------------===//

enum class Flow { Normal, Break, Continue };

struct Interp {
  const std::string &name;
  const Limits &limits;
  const std::unordered_map<std::string, Value> &context;
  std::vector<std::unordered_map<std::string, Value>> scopes;
  std::vector<Str> outputs; // the output, and the captures of macros / set blocks
  uint64_t steps = 0;
  int depth = 0;

  Interp(const std::string &n, const Limits &l, const std::unordered_map<std::string, Value> &c)
      : name(n), limits(l), context(c) {}

  [[noreturn]] void fail(Loc at, const std::string &why) { failAt(name, at, why); }

  void step(Loc at, uint64_t n = 1) {
    steps += n;
    if (steps > limits.maxSteps)
      fail(at, "the render takes more than " + std::to_string(limits.maxSteps) +
                   " steps (a runaway loop?)");
  }
  struct Depth {
    Interp &in;
    Depth(Interp &in, Loc at) : in(in) {
      if (++in.depth > in.limits.maxDepth)
        in.fail(at, "nesting deeper than " + std::to_string(in.limits.maxDepth) +
                        " (runaway recursion?)");
    }
    ~Depth() { --in.depth; }
  };
  Value str(Loc at, Str s) {
    if (s.s.size() > limits.maxStringBytes)
      fail(at, "a string longer than " + std::to_string(limits.maxStringBytes) + " bytes");
    step(at, s.s.size() / 1024 + s.sp.size() / 64);
    return Value::str(std::move(s));
  }
  Value list(Loc at, List l) {
    if (l.size() > limits.maxListItems)
      fail(at, "a list longer than " + std::to_string(limits.maxListItems) + " items");
    step(at, l.size() / 16);
    return nested(Value::list(std::move(l)), at);
  }
  /// Values nest at most kMaxValueDepth (their destructors, ==, repr and
  /// tojson recurse).
  Value nested(Value v, Loc at) {
    if (v.depth > kMaxValueDepth)
      fail(at, "lists or dicts nested deeper than " + std::to_string(kMaxValueDepth));
    return v;
  }
  bool equal(const Value &a, const Value &b, Loc at) {
    return pyEqual(a, b, [&](uint64_t n) { step(at, n); });
  }
  /// str(v), bounded like every string.
  std::string strOf(const Value &v, Loc at) {
    std::string out;
    if (!strInto(out, v, limits.maxStringBytes))
      fail(at, "a string longer than " + std::to_string(limits.maxStringBytes) + " bytes");
    step(at, out.size() / 4096);
    return out;
  }

  void emit(Loc at, const Str &s) {
    Str &o = outputs.back();
    if (o.s.size() + s.s.size() > limits.maxStringBytes)
      fail(at, "the output is longer than " + std::to_string(limits.maxStringBytes) + " bytes");
    appendStr(o, s);
  }

  Value lookup(const std::string &n) {
    for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
      auto f = it->find(n);
      if (f != it->end())
        return f->second;
    }
    auto f = context.find(n);
    if (f != context.end())
      return f->second;
    return builtin(n);
  }

  Value builtin(const std::string &n);

  /// The text of v for output and ~ (spans kept for strings).
  Str text(const Value &v, Loc at) {
    if (v.t == T::Str)
      return *v.s;
    if (v.t == T::Func || v.t == T::Ns)
      fail(at, std::string("rendering a ") + typeName(v) + " is not supported");
    return plain(strOf(v, at));
  }

  [[noreturn]] void undefinedError(const Value &v, Loc at) {
    fail(at, v.undef.empty() ? "a value is undefined" : v.undef + " is undefined");
  }

  //===-- expressions --===//

  Value eval(const Expr &e) {
    Depth d(*this, e.at);
    step(e.at);
    switch (e.k) {
    case Expr::Lit: return e.lit;
    case Expr::Name: {
      Value v = lookup(e.name);
      if (v.t == T::Undef && v.undef.empty())
        v.undef = "'" + e.name + "'";
      return v;
    }
    case Expr::ListE: {
      List l;
      for (auto &x : e.a)
        l.push_back(eval(*x));
      return list(e.at, std::move(l));
    }
    case Expr::DictE: {
      DictData dd;
      for (size_t k = 0; k + 1 < e.a.size(); k += 2) {
        Value key = eval(*e.a[k]);
        if (key.t != T::Str)
          fail(e.a[k]->at, std::string("dict keys other than strings are not supported (a ") +
                               typeName(key) + ")");
        dd.set(key.s->s, eval(*e.a[k + 1]));
      }
      return nested(Value::dict(std::move(dd)), e.at);
    }
    case Expr::Attr: return getAttr(eval(*e.a[0]), e.name, e.at);
    case Expr::Item: return getItem(eval(*e.a[0]), eval(*e.a[1]), e.at);
    case Expr::Slice: return slice(e);
    case Expr::Call: return call(e);
    case Expr::Filter: return filter(e);
    case Expr::Test: return Value::boolean(test(e) != e.negated);
    case Expr::Neg:
    case Expr::Pos: {
      Value v = eval(*e.a[0]);
      if (v.t == T::Undef)
        undefinedError(v, e.at);
      if (!v.isNumber())
        fail(e.at, std::string("bad operand type for unary ") + (e.k == Expr::Neg ? "-" : "+") +
                       ": '" + typeName(v) + "'");
      if (e.k == Expr::Pos)
        return v.t == T::Bool ? Value::integer(v.b) : v;
      if (v.t == T::Float)
        return Value::real(-v.f);
      int64_t x = v.t == T::Bool ? v.b : v.i;
      if (x == INT64_MIN)
        fail(e.at, "integer overflow (64-bit integers only)");
      return Value::integer(-x);
    }
    case Expr::Not: return Value::boolean(!truthy(eval(*e.a[0])));
    case Expr::And: {
      Value l = eval(*e.a[0]);
      return truthy(l) ? eval(*e.a[1]) : l;
    }
    case Expr::Or: {
      Value l = eval(*e.a[0]);
      return truthy(l) ? l : eval(*e.a[1]);
    }
    case Expr::Bin: return binary(e.name, eval(*e.a[0]), eval(*e.a[1]), e.at);
    case Expr::Cmp: {
      Value l = eval(*e.a[0]);
      for (size_t k = 0; k < e.ops.size(); ++k) {
        Value r = eval(*e.a[k + 1]);
        if (!compare(e.ops[k], l, r, e.a[k + 1]->at))
          return Value::boolean(false);
        l = std::move(r);
      }
      return Value::boolean(true);
    }
    case Expr::Cond: {
      if (truthy(eval(*e.a[1])))
        return eval(*e.a[0]);
      if (e.a[2])
        return eval(*e.a[2]);
      return Value::undefined("the condition's missing 'else'");
    }
    }
    fail(e.at, "internal: unknown expression");
  }

  static int64_t asInt(const Value &v) { return v.t == T::Bool ? v.b : v.i; }

  Value binary(const std::string &op, const Value &l, const Value &r, Loc at) {
    if (op == "~") {
      Str s = text(l, at);
      appendStr(s, text(r, at));
      return str(at, std::move(s));
    }
    if (l.t == T::Undef)
      undefinedError(l, at);
    if (r.t == T::Undef)
      undefinedError(r, at);
    auto bad = [&]() -> Value {
      fail(at, "unsupported operand types for " + op + ": '" + typeName(l) + "' and '" +
                   typeName(r) + "'");
    };
    if (l.isNumber() && r.isNumber()) {
      bool ints = l.t != T::Float && r.t != T::Float;
      double a = num(l), b = num(r);
      int64_t x = asInt(l), y = asInt(r), z = 0;
      auto overflow = [&]() -> Value { fail(at, "integer overflow (64-bit integers only)"); };
      if (op == "+") {
        if (!ints)
          return Value::real(a + b);
        if (__builtin_add_overflow(x, y, &z))
          overflow();
        return Value::integer(z);
      }
      if (op == "-") {
        if (!ints)
          return Value::real(a - b);
        if (__builtin_sub_overflow(x, y, &z))
          overflow();
        return Value::integer(z);
      }
      if (op == "*") {
        if (!ints)
          return Value::real(a * b);
        if (__builtin_mul_overflow(x, y, &z))
          overflow();
        return Value::integer(z);
      }
      if (op == "/") {
        if (b == 0)
          fail(at, "division by zero");
        return Value::real(a / b);
      }
      if (op == "//" || op == "%") {
        if (b == 0)
          fail(at, op == "//" ? "integer division or modulo by zero" : "modulo by zero");
        if (ints) {
          if (x == INT64_MIN && y == -1)
            overflow();
          int64_t q = x / y, m = x % y;
          if (m != 0 && ((m < 0) != (y < 0))) {
            --q;
            m += y;
          }
          return op == "//" ? Value::integer(q) : Value::integer(m);
        }
        double q = std::floor(a / b);
        return op == "//" ? Value::real(q) : Value::real(a - q * b);
      }
      if (op == "**") {
        if (ints && y >= 0) {
          int64_t res = 1, base = x;
          int64_t e2 = y;
          while (e2 > 0) {
            if (e2 & 1)
              if (__builtin_mul_overflow(res, base, &res))
                overflow();
            e2 >>= 1;
            if (e2 > 0 && __builtin_mul_overflow(base, base, &base))
              overflow();
          }
          return Value::integer(res);
        }
        if (a == 0 && b < 0)
          fail(at, "zero to a negative power");
        if (a < 0 && b != std::floor(b))
          fail(at, "a negative number to a fractional power (complex) is not supported");
        return Value::real(std::pow(a, b));
      }
      return bad();
    }
    if (op == "+") {
      if (l.t == T::Str && r.t == T::Str) {
        Str s = *l.s;
        appendStr(s, *r.s);
        return str(at, std::move(s));
      }
      if (l.t == T::List && r.t == T::List) {
        if (l.l->size() + r.l->size() > limits.maxListItems)
          fail(at, "a list longer than " + std::to_string(limits.maxListItems) + " items");
        List x = *l.l;
        x.insert(x.end(), r.l->begin(), r.l->end());
        return list(at, std::move(x));
      }
      return bad();
    }
    if (op == "*" && (l.t == T::Str || l.t == T::List) && (r.t == T::Int || r.t == T::Bool))
      return repeat(l, asInt(r), at);
    if (op == "*" && (r.t == T::Str || r.t == T::List) && (l.t == T::Int || l.t == T::Bool))
      return repeat(r, asInt(l), at);
    if (op == "%" && l.t == T::Str)
      fail(at, "'%' string formatting is not supported");
    return bad();
  }

  Value repeat(const Value &v, int64_t n, Loc at) {
    if (n <= 0 || (v.t == T::Str ? v.s->s.empty() : v.l->empty()))
      return v.t == T::Str ? Value::str("") : Value::list({});
    if (v.t == T::Str) {
      if (!v.s->s.empty() && uint64_t(n) > limits.maxStringBytes / v.s->s.size())
        fail(at, "a string longer than " + std::to_string(limits.maxStringBytes) + " bytes");
      Str s;
      for (int64_t k = 0; k < n; ++k)
        appendStr(s, *v.s);
      return str(at, std::move(s));
    }
    if (!v.l->empty() && uint64_t(n) > limits.maxListItems / v.l->size())
      fail(at, "a list longer than " + std::to_string(limits.maxListItems) + " items");
    List x;
    for (int64_t k = 0; k < n; ++k)
      x.insert(x.end(), v.l->begin(), v.l->end());
    return list(at, std::move(x));
  }

  bool less(const Value &l, const Value &r, Loc at, const char *op) {
    if (l.isNumber() && r.isNumber()) {
      if (l.t != T::Float && r.t != T::Float)
        return asInt(l) < asInt(r);
      return num(l) < num(r);
    }
    if (l.t == T::Str && r.t == T::Str)
      return l.s->s < r.s->s; // UTF-8 byte order is code point order
    if (l.t == T::List && r.t == T::List) {
      size_t n = std::min(l.l->size(), r.l->size());
      for (size_t k = 0; k < n; ++k) {
        if (equal((*l.l)[k], (*r.l)[k], at))
          continue;
        return less((*l.l)[k], (*r.l)[k], at, op);
      }
      return l.l->size() < r.l->size();
    }
    if (l.t == T::Undef)
      undefinedError(l, at);
    if (r.t == T::Undef)
      undefinedError(r, at);
    fail(at, std::string("'") + op + "' not supported between '" + typeName(l) + "' and '" +
                 typeName(r) + "'");
  }

  bool contains(const Value &hay, const Value &needle, Loc at) {
    switch (hay.t) {
    case T::Str:
      if (needle.t != T::Str)
        fail(at, std::string("'in <string>' requires a string on the left, not '") +
                     typeName(needle) + "'");
      step(at, hay.s->s.size() / 1024);
      return findIn(hay.s->s, needle.s->s) != std::string::npos;
    case T::List:
      for (auto &x : *hay.l)
        if (equal(x, needle, at))
          return true;
      return false;
    case T::Dict: return needle.t == T::Str && hay.d->find(needle.s->s);
    case T::Undef: return false;
    default: fail(at, std::string("argument of type '") + typeName(hay) + "' is not iterable");
    }
  }

  bool compare(const std::string &op, const Value &l, const Value &r, Loc at) {
    if (op == "==")
      return equal(l, r, at);
    if (op == "!=")
      return !equal(l, r, at);
    if (op == "in")
      return contains(r, l, at);
    if (op == "notin")
      return !contains(r, l, at);
    if (op == "<")
      return less(l, r, at, "<");
    if (op == ">")
      return less(r, l, at, ">");
    if (op == "<=")
      return !less(r, l, at, "<=");
    return !less(l, r, at, ">=");
  }

  /// The elements a for loop or a filter walks: a list's, a dict's keys, a
  /// string's characters; none for Undefined.
  List iterate(const Value &v, Loc at) {
    switch (v.t) {
    case T::Dict: {
      List l;
      for (auto &kv : v.d->items)
        l.push_back(Value::str(kv.first));
      return l;
    }
    case T::Str: {
      step(at, v.s->s.size() / 4);
      List l;
      auto off = cpOffsets(v.s->s);
      for (size_t k = 0; k + 1 < off.size(); ++k)
        l.push_back(Value::str(sub(*v.s, off[k], off[k + 1])));
      return l;
    }
    case T::List: step(at, v.l->size() / 16); return *v.l;
    case T::Undef: return {};
    default: fail(at, std::string("'") + typeName(v) + "' object is not iterable");
    }
  }

  Value getItem(const Value &obj, const Value &key, Loc at) {
    if (obj.t == T::Undef)
      undefinedError(obj, at);
    if (obj.t == T::Dict) {
      if (key.t == T::Str) {
        if (const Value *v = obj.d->find(key.s->s))
          return *v;
        return dictMethod(obj, key.s->s, at, "'" + key.s->s + "'");
      }
      return Value::undefined("the key " + plan::briefText(pyRepr(key), 40));
    }
    if (obj.t == T::Ns) {
      if (key.t == T::Str)
        if (const Value *v = obj.ns->find(key.s->s))
          return *v;
      return Value::undefined("the namespace's " + plan::briefText(pyRepr(key), 40));
    }
    if ((obj.t == T::List || obj.t == T::Str) && (key.t == T::Int || key.t == T::Bool)) {
      int64_t k = asInt(key);
      if (obj.t == T::List) {
        int64_t n = int64_t(obj.l->size());
        if (k < 0)
          k += n;
        if (k < 0 || k >= n)
          return Value::undefined("the index " + std::to_string(asInt(key)));
        return (*obj.l)[k];
      }
      step(at, obj.s->s.size() / 1024);
      auto off = cpOffsets(obj.s->s);
      int64_t n = int64_t(off.size()) - 1;
      if (k < 0)
        k += n;
      if (k < 0 || k >= n)
        return Value::undefined("the index " + std::to_string(asInt(key)));
      return Value::str(sub(*obj.s, off[k], off[k + 1]));
    }
    if (key.t == T::Str)
      return getAttr(obj, key.s->s, at);
    return Value::undefined("the item " + plan::briefText(pyRepr(key), 40) + " of a " +
                            typeName(obj));
  }

  Value getAttr(const Value &obj, const std::string &attr, Loc at) {
    if (obj.t == T::Undef)
      undefinedError(obj, at);
    std::string what = "'" + attr + "'";
    switch (obj.t) {
    case T::Dict: {
      static const std::set<std::string> methods = {"items", "keys", "values", "get", "pop",
                                                    "update", "copy", "clear", "setdefault",
                                                    "popitem", "fromkeys"};
      if (methods.count(attr))
        return dictMethod(obj, attr, at, what);
      if (const Value *v = obj.d->find(attr))
        return *v;
      return Value::undefined(what);
    }
    case T::Ns: {
      if (const Value *v = obj.ns->find(attr))
        return *v;
      return Value::undefined(what);
    }
    case T::Str: return strMethod(obj, attr, at);
    case T::List: {
      static const std::set<std::string> methods = {"append", "extend", "insert", "pop",
                                                    "remove", "reverse", "sort", "clear",
                                                    "copy", "count", "index"};
      if (methods.count(attr))
        fail(at, "the list method '" + attr +
                     "' is not supported (lists are immutable in chat templates)");
      return Value::undefined(what);
    }
    default: return Value::undefined(what);
    }
  }

  Value method(std::string name, std::function<Value(Interp &, std::vector<Value> &, Kwargs &, Loc)> f) {
    Value v;
    v.t = T::Func;
    v.refs = true;
    v.fn = std::make_shared<const Callable>(Callable{std::move(name), std::move(f)});
    return v;
  }

  Value dictMethod(const Value &obj, const std::string &attr, Loc at, const std::string &what) {
    auto d = obj.d;
    if (attr == "items" || attr == "keys" || attr == "values") {
      return method(attr, [d, attr](Interp &in, std::vector<Value> &a, Kwargs &kw, Loc at2) {
        in.noArgs(a, kw, at2, attr);
        List l;
        for (auto &kv : d->items) {
          if (attr == "items")
            l.push_back(Value::list({Value::str(kv.first), kv.second}));
          else if (attr == "keys")
            l.push_back(Value::str(kv.first));
          else
            l.push_back(kv.second);
        }
        return in.list(at2, std::move(l));
      });
    }
    if (attr == "get") {
      return method(attr, [d](Interp &in, std::vector<Value> &a, Kwargs &kw, Loc at2) {
        if (a.empty() || a.size() > 2 || !kw.empty())
          in.fail(at2, "get() takes a key and an optional default");
        if (a[0].t == T::Str)
          if (const Value *v = d->find(a[0].s->s))
            return *v;
        return a.size() > 1 ? a[1] : Value::none();
      });
    }
    static const std::set<std::string> unsafe = {"pop", "update", "copy", "clear",
                                                 "setdefault", "popitem", "fromkeys"};
    if (unsafe.count(attr))
      fail(at, "the dict method '" + attr + "' is not supported");
    return Value::undefined(what);
  }

  void noArgs(const std::vector<Value> &a, const Kwargs &kw, Loc at, const std::string &f) {
    if (!a.empty() || !kw.empty())
      fail(at, f + "() takes no arguments");
  }

  const Value &strArg(const Value &v, Loc at, const std::string &f) {
    if (v.t != T::Str)
      fail(at, f + "() takes a string, not '" + std::string(typeName(v)) + "'");
    return v;
  }

  /// Python's strip/lstrip/rstrip of code points in `chars` (whitespace
  /// when none).
  Str strip(const Str &s, const Value *chars, bool left, bool right, Loc at) {
    std::vector<uint32_t> set; // sorted
    bool ws = !chars || chars->t == T::None || chars->t == T::Undef;
    if (!ws) {
      if (chars->t != T::Str)
        fail(at, "strip arg must be None or str");
      for (size_t i = 0, n; i < chars->s->s.size(); i += n)
        set.push_back(cpAt(chars->s->s, i, &n));
      std::sort(set.begin(), set.end());
    }
    auto strippable = [&](uint32_t c) {
      return ws ? isPySpace(c) : std::binary_search(set.begin(), set.end(), c);
    };
    auto off = cpOffsets(s.s);
    size_t b = 0, e = off.size() - 1;
    size_t len;
    if (left)
      while (b < e && strippable(cpAt(s.s, off[b], &len)))
        ++b;
    if (right)
      while (e > b && strippable(cpAt(s.s, off[e - 1], &len)))
        --e;
    step(at, s.s.size() / 1024 + set.size() / 64);
    return sub(s, off[b], off[e]);
  }

  bool asciiOnly(const std::string &s) {
    for (unsigned char c : s)
      if (c >= 0x80)
        return false;
    return true;
  }

  /// upper/lower/title/capitalize: ASCII text only (Python's Unicode case
  /// tables are not here: refused rather than rendered wrongly).
  Value caseMap(const Value &v, const std::string &how, Loc at) {
    const std::string &s = v.s->s;
    if (!asciiOnly(s))
      fail(at, "'" + how + "' of non-ASCII text is not supported");
    std::string out = s;
    if (how == "upper") {
      for (char &c : out)
        c = char(toupper(static_cast<unsigned char>(c)));
    } else if (how == "lower") {
      for (char &c : out)
        c = char(tolower(static_cast<unsigned char>(c)));
    } else if (how == "capitalize") {
      for (size_t k = 0; k < out.size(); ++k)
        out[k] = char(k ? tolower(static_cast<unsigned char>(out[k]))
                        : toupper(static_cast<unsigned char>(out[k])));
    } else { // title: a letter after a non-letter is upper
      bool prevLetter = false;
      for (char &c : out) {
        bool letter = isalpha(static_cast<unsigned char>(c));
        c = char(letter ? (prevLetter ? tolower(static_cast<unsigned char>(c))
                                      : toupper(static_cast<unsigned char>(c)))
                        : c);
        prevLetter = letter;
      }
    }
    return str(at, plain(out));
  }

  List split(const Str &s, const Value *sep, int64_t maxsplit, Loc at) {
    List out;
    if (!sep || sep->t == T::None) {
      auto off = cpOffsets(s.s);
      size_t k = 0, n = off.size() - 1, len;
      while (true) {
        while (k < n && isPySpace(cpAt(s.s, off[k], &len)))
          ++k;
        if (k >= n)
          break;
        if (maxsplit >= 0 && int64_t(out.size()) == maxsplit) {
          size_t e = n;
          while (e > k && isPySpace(cpAt(s.s, off[e - 1], &len)))
            --e;
          out.push_back(Value::str(sub(s, off[k], off[e])));
          break;
        }
        size_t b = k;
        while (k < n && !isPySpace(cpAt(s.s, off[k], &len)))
          ++k;
        out.push_back(Value::str(sub(s, off[b], off[k])));
      }
    } else {
      if (sep->t != T::Str)
        fail(at, "split() takes a string separator");
      const std::string &p = sep->s->s;
      if (p.empty())
        fail(at, "empty separator");
      size_t b = 0;
      while (true) {
        size_t f = findIn(s.s, p, b);
        if (f == std::string::npos || (maxsplit >= 0 && int64_t(out.size()) == maxsplit))
          break;
        out.push_back(Value::str(sub(s, b, f)));
        b = f + p.size();
      }
      out.push_back(Value::str(sub(s, b, s.s.size())));
    }
    if (out.size() > limits.maxListItems)
      fail(at, "a list longer than " + std::to_string(limits.maxListItems) + " items");
    step(at, out.size() / 64 + s.s.size() / 4096);
    return out;
  }

  Value replace(const Str &s, const Value &oldv, const Value &newv, int64_t count, Loc at) {
    if (oldv.t != T::Str || newv.t != T::Str)
      fail(at, "replace() takes two strings");
    const std::string &o = oldv.s->s;
    Str out;
    size_t b = 0;
    int64_t done = 0;
    if (o.empty()) {
      auto off = cpOffsets(s.s);
      for (size_t k = 0; k + 1 < off.size() + 1; ++k) {
        if (count >= 0 && done >= count) {
          appendStr(out, sub(s, off[std::min(k, off.size() - 1)], s.s.size()));
          return str(at, std::move(out));
        }
        appendStr(out, *newv.s);
        ++done;
        if (k + 1 < off.size())
          appendStr(out, sub(s, off[k], off[k + 1]));
        if (out.s.size() > limits.maxStringBytes)
          fail(at, "a string longer than " + std::to_string(limits.maxStringBytes) + " bytes");
      }
      return str(at, std::move(out));
    }
    while (count < 0 || done < count) {
      size_t f = findIn(s.s, o, b);
      if (f == std::string::npos)
        break;
      appendStr(out, sub(s, b, f));
      appendStr(out, *newv.s);
      if (out.s.size() > limits.maxStringBytes)
        fail(at, "a string longer than " + std::to_string(limits.maxStringBytes) + " bytes");
      b = f + o.size();
      ++done;
    }
    appendStr(out, sub(s, b, s.s.size()));
    return str(at, std::move(out));
  }

  Value strMethod(const Value &obj, const std::string &attr, Loc at) {
    auto s = obj.s;
    auto m = [&](auto f) { return method(attr, f); };
    if (attr == "startswith" || attr == "endswith") {
      bool starts = attr == "startswith";
      return m([s, starts](Interp &in, std::vector<Value> &a, Kwargs &kw, Loc at2) {
        if (a.size() != 1 || !kw.empty())
          in.fail(at2, "startswith()/endswith() take one argument (start/end are not supported)");
        List cands = a[0].t == T::List ? *a[0].l : List{a[0]};
        for (auto &c : cands) {
          const std::string &p = in.strArg(c, at2, starts ? "startswith" : "endswith").s->s;
          if (p.size() <= s->s.size() &&
              (starts ? s->s.compare(0, p.size(), p) == 0
                      : s->s.compare(s->s.size() - p.size(), p.size(), p) == 0))
            return Value::boolean(true);
        }
        return Value::boolean(false);
      });
    }
    if (attr == "strip" || attr == "lstrip" || attr == "rstrip") {
      return m([s, attr](Interp &in, std::vector<Value> &a, Kwargs &kw, Loc at2) {
        if (a.size() > 1 || !kw.empty())
          in.fail(at2, attr + "() takes at most one argument");
        return in.str(at2, in.strip(*s, a.empty() ? nullptr : &a[0], attr != "rstrip",
                                    attr != "lstrip", at2));
      });
    }
    if (attr == "split") {
      return m([s](Interp &in, std::vector<Value> &a, Kwargs &kw, Loc at2) {
        const Value *sep = nullptr;
        int64_t maxsplit = -1;
        if (a.size() > 0)
          sep = &a[0];
        if (a.size() > 1) {
          if (a[1].t != T::Int)
            in.fail(at2, "split()'s maxsplit must be an integer");
          maxsplit = a[1].i;
        }
        for (auto &kv : kw) {
          if (kv.first == "sep")
            sep = &kv.second;
          else if (kv.first == "maxsplit" && kv.second.t == T::Int)
            maxsplit = kv.second.i;
          else
            in.fail(at2, "split(): unexpected argument '" + kv.first + "'");
        }
        if (a.size() > 2)
          in.fail(at2, "split() takes at most two arguments");
        return in.list(at2, in.split(*s, sep, maxsplit, at2));
      });
    }
    if (attr == "replace") {
      return m([s](Interp &in, std::vector<Value> &a, Kwargs &kw, Loc at2) {
        if (a.size() < 2 || a.size() > 3 || !kw.empty())
          in.fail(at2, "replace() takes two or three arguments");
        int64_t count = -1;
        if (a.size() == 3) {
          if (a[2].t != T::Int)
            in.fail(at2, "replace()'s count must be an integer");
          count = a[2].i;
        }
        return in.replace(*s, a[0], a[1], count, at2);
      });
    }
    if (attr == "upper" || attr == "lower" || attr == "title" || attr == "capitalize") {
      return m([obj, attr](Interp &in, std::vector<Value> &a, Kwargs &kw, Loc at2) {
        in.noArgs(a, kw, at2, attr);
        return in.caseMap(obj, attr, at2);
      });
    }
    if (attr == "find" || attr == "count") {
      return m([s, attr](Interp &in, std::vector<Value> &a, Kwargs &kw, Loc at2) {
        if (a.size() != 1 || !kw.empty())
          in.fail(at2, attr + "() takes one argument here");
        const std::string &p = in.strArg(a[0], at2, attr).s->s;
        in.step(at2, s->s.size() / 1024);
        if (attr == "find") {
          size_t f = findIn(s->s, p);
          if (f == std::string::npos)
            return Value::integer(-1);
          return Value::integer(int64_t(cpCount(s->s.substr(0, f))));
        }
        if (p.empty())
          return Value::integer(int64_t(cpCount(s->s)) + 1);
        int64_t c = 0;
        for (size_t f = findIn(s->s, p); f != std::string::npos; f = findIn(s->s, p, f + p.size()))
          ++c;
        return Value::integer(c);
      });
    }
    if (attr == "join") {
      return m([s](Interp &in, std::vector<Value> &a, Kwargs &kw, Loc at2) {
        if (a.size() != 1 || !kw.empty())
          in.fail(at2, "join() takes one argument");
        Str out;
        bool first = true;
        for (auto &x : in.iterate(a[0], at2)) {
          if (x.t != T::Str)
            in.fail(at2, std::string("join(): expected str instance, ") + typeName(x) + " found");
          if (!first)
            appendStr(out, *s);
          appendStr(out, *x.s);
          first = false;
          if (out.s.size() > in.limits.maxStringBytes)
            in.fail(at2, "a string longer than " + std::to_string(in.limits.maxStringBytes) +
                             " bytes");
        }
        return in.str(at2, std::move(out));
      });
    }
    if (attr == "isdigit" || attr == "isspace" || attr == "isalpha" || attr == "isupper" ||
        attr == "islower") {
      return m([s, attr](Interp &in, std::vector<Value> &a, Kwargs &kw, Loc at2) {
        in.noArgs(a, kw, at2, attr);
        if (!in.asciiOnly(s->s))
          in.fail(at2, "'" + attr + "' of non-ASCII text is not supported");
        if (s->s.empty())
          return Value::boolean(false);
        bool cased = false, all = true;
        for (unsigned char c : s->s) {
          if (attr == "isdigit")
            all = all && isdigit(c);
          else if (attr == "isspace")
            all = all && isPySpace(c);
          else if (attr == "isalpha")
            all = all && isalpha(c);
          else if (attr == "isupper") {
            all = all && !islower(c);
            cased = cased || isupper(c);
          } else {
            all = all && !isupper(c);
            cased = cased || islower(c);
          }
        }
        return Value::boolean(all && (attr.rfind("is", 0) == 0 &&
                                              (attr == "isupper" || attr == "islower")
                                          ? cased
                                          : true));
      });
    }
    static const std::set<std::string> pyMethods = {
        "casefold", "center", "encode", "expandtabs", "format", "format_map", "index",
        "isalnum", "isascii", "isdecimal", "isidentifier", "isnumeric", "isprintable",
        "istitle", "ljust", "maketrans", "partition", "removeprefix", "removesuffix",
        "rfind", "rindex", "rjust", "rpartition", "rsplit", "splitlines", "swapcase",
        "translate", "zfill"};
    if (pyMethods.count(attr))
      fail(at, "the string method '" + attr + "' is not supported");
    return Value::undefined("'" + attr + "'");
  }

  Value slice(const Expr &e) {
    Value obj = eval(*e.a[0]);
    if (obj.t == T::Undef)
      undefinedError(obj, e.at);
    auto bound = [&](const ExprP &x, bool *given) -> int64_t {
      *given = false;
      if (!x)
        return 0;
      Value v = eval(*x);
      if (v.t == T::None)
        return 0;
      if (v.t != T::Int && v.t != T::Bool)
        fail(x->at, "slice indices must be integers or None");
      *given = true;
      return asInt(v);
    };
    bool hs, he, hst;
    int64_t start = bound(e.a[1], &hs), stop = bound(e.a[2], &he), stepv = bound(e.a[3], &hst);
    if (!hst)
      stepv = 1;
    if (stepv == 0)
      fail(e.at, "slice step cannot be zero");
    std::vector<size_t> off;
    int64_t n;
    if (obj.t == T::Str) {
      step(e.at, obj.s->s.size() / 1024);
      off = cpOffsets(obj.s->s);
      n = int64_t(off.size()) - 1;
    } else if (obj.t == T::List) {
      n = int64_t(obj.l->size());
    } else {
      fail(e.at, std::string("a ") + typeName(obj) + " cannot be sliced");
    }
    // Python's PySlice_AdjustIndices.
    auto adjust = [&](int64_t v, bool given, int64_t dflt) {
      if (!given)
        return dflt;
      if (v < 0) {
        v += n;
        if (v < 0)
          v = stepv < 0 ? -1 : 0;
      } else if (v >= n) {
        v = stepv < 0 ? n - 1 : n;
      }
      return v;
    };
    start = adjust(start, hs, stepv < 0 ? n - 1 : 0);
    stop = adjust(stop, he, stepv < 0 ? -1 : n);
    std::vector<int64_t> idx; // 128-bit steps: k + step must not overflow
    if (stepv > 0)
      for (__int128 k = start; k < stop; k += stepv)
        idx.push_back(int64_t(k));
    else
      for (__int128 k = start; k > stop; k += stepv)
        idx.push_back(int64_t(k));
    step(e.at, idx.size() / 64);
    if (obj.t == T::Str) {
      if (stepv == 1)
        return Value::str(idx.empty() ? Str{} : sub(*obj.s, off[idx.front()], off[idx.back() + 1]));
      Str out;
      for (int64_t k : idx)
        appendStr(out, sub(*obj.s, off[k], off[k + 1]));
      return str(e.at, std::move(out));
    }
    List out;
    for (int64_t k : idx)
      out.push_back((*obj.l)[k]);
    return list(e.at, std::move(out));
  }

  Value call(const Expr &e) {
    Value f = eval(*e.a[0]);
    std::vector<Value> args;
    Kwargs kw;
    for (size_t k = 1; k < e.a.size(); ++k)
      args.push_back(eval(*e.a[k]));
    for (auto &kv : e.kw)
      kw.emplace_back(kv.first, eval(*kv.second));
    if (f.t == T::Undef)
      undefinedError(f, e.at);
    if (f.t != T::Func)
      fail(e.at, std::string("a '") + typeName(f) + "' is not callable");
    return f.fn->call(*this, args, kw, e.at);
  }

  //===-- filters and tests --===//

  /// The argument `k` (positional) or `name` (keyword) of a filter; null
  /// when not given.
  const Value *arg(const std::vector<Value> &a, const Kwargs &kw, size_t k, const char *name) {
    if (k < a.size())
      return &a[k];
    for (auto &kv : kw)
      if (kv.first == name)
        return &kv.second;
    return nullptr;
  }

  void checkArgs(const std::vector<Value> &a, const Kwargs &kw, size_t maxPos,
                 std::initializer_list<const char *> names, Loc at, const std::string &f) {
    if (a.size() > maxPos)
      fail(at, "the filter '" + f + "' takes at most " + std::to_string(maxPos) + " arguments");
    for (auto &kv : kw)
      if (std::find_if(names.begin(), names.end(), [&](const char *n) { return kv.first == n; }) ==
          names.end())
        fail(at, "the filter '" + f + "' has no argument '" + plan::briefText(kv.first, 30) + "'");
  }

  Value attrOf(const Value &v, const std::string &path, Loc at) {
    Value cur = v;
    size_t b = 0;
    while (true) {
      size_t d = path.find('.', b);
      std::string part = path.substr(b, d == std::string::npos ? std::string::npos : d - b);
      bool digits = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
      if (cur.t == T::Undef)
        return cur;
      cur = digits && part.size() < 18 ? getItem(cur, Value::integer(std::stoll(part)), at)
                                       : getItem(cur, Value::str(part), at);
      if (d == std::string::npos)
        return cur;
      b = d + 1;
    }
  }

  bool runTest(const std::string &t, const Value &v, const std::vector<Value> &a, Loc at) {
    auto need = [&](size_t n) {
      if (a.size() != n)
        fail(at, "the test '" + t + "' takes " + std::to_string(n) + " argument(s)");
    };
    if (t == "defined") return v.t != T::Undef;
    if (t == "undefined") return v.t == T::Undef;
    if (t == "none") return v.t == T::None;
    if (t == "string") return v.t == T::Str;
    if (t == "mapping") return v.t == T::Dict;
    if (t == "iterable") return v.t == T::Str || v.t == T::List || v.t == T::Dict || v.t == T::Undef;
    if (t == "sequence") return v.t == T::Str || v.t == T::List || v.t == T::Dict || v.t == T::Undef;
    if (t == "number") return v.isNumber();
    if (t == "integer") return v.t == T::Int;
    if (t == "float") return v.t == T::Float;
    if (t == "boolean") return v.t == T::Bool;
    if (t == "true") return v.t == T::Bool && v.b;
    if (t == "false") return v.t == T::Bool && !v.b;
    if (t == "callable") return v.t == T::Func;
    if (t == "escaped") return false;
    if (t == "lower" || t == "upper") {
      if (v.t != T::Str)
        fail(at, "the test '" + t + "' takes a string");
      if (!asciiOnly(v.s->s))
        fail(at, "the test '" + t + "' of non-ASCII text is not supported");
      bool cased = false, ok = true;
      for (unsigned char c : v.s->s) {
        cased = cased || isalpha(c);
        ok = ok && (t == "lower" ? !isupper(c) : !islower(c));
      }
      return cased && ok;
    }
    if (t == "odd" || t == "even" || t == "divisibleby") {
      if (v.t != T::Int && v.t != T::Bool)
        fail(at, "the test '" + t + "' takes an integer");
      int64_t x = asInt(v);
      if (t == "odd") return x % 2 != 0;
      if (t == "even") return x % 2 == 0;
      need(1);
      if ((a[0].t != T::Int && a[0].t != T::Bool) || asInt(a[0]) == 0)
        fail(at, "divisibleby takes a non-zero integer");
      if (asInt(a[0]) == -1) return true;
      return x % asInt(a[0]) == 0;
    }
    need(1);
    if (t == "in") return contains(a[0], v, at);
    if (t == "eq" || t == "equalto" || t == "==") return equal(v, a[0], at);
    if (t == "ne" || t == "!=") return !equal(v, a[0], at);
    if (t == "lt" || t == "<" || t == "lessthan") return less(v, a[0], at, "<");
    if (t == "gt" || t == ">" || t == "greaterthan") return less(a[0], v, at, ">");
    if (t == "le" || t == "<=") return !less(a[0], v, at, "<=");
    if (t == "ge" || t == ">=") return !less(v, a[0], at, ">=");
    if (t == "sameas") {
      if (v.t != a[0].t) return false;
      if (v.t == T::None || v.t == T::Undef) return true;
      if (v.t == T::Bool) return v.b == a[0].b;
      if (v.t == T::Str) return v.s == a[0].s;
      if (v.t == T::List) return v.l == a[0].l;
      if (v.t == T::Dict) return v.d == a[0].d;
      if (v.t == T::Ns) return v.ns == a[0].ns;
      return equal(v, a[0], at) && v.t == a[0].t && (v.t != T::Int || (v.i >= -5 && v.i <= 256));
    }
    fail(at, "unknown test '" + t + "'");
  }

  bool test(const Expr &e) {
    Value v = eval(*e.a[0]);
    std::vector<Value> args;
    for (size_t k = 1; k < e.a.size(); ++k)
      args.push_back(eval(*e.a[k]));
    if (!e.kw.empty())
      fail(e.at, "tests take no keyword arguments");
    return runTest(e.name, v, args, e.at);
  }

  Value filter(const Expr &e) {
    Value v = eval(*e.a[0]);
    std::vector<Value> a;
    Kwargs kw;
    for (size_t k = 1; k < e.a.size(); ++k)
      a.push_back(eval(*e.a[k]));
    for (auto &kv : e.kw)
      kw.emplace_back(kv.first, eval(*kv.second));
    return applyFilter(e.name, v, a, kw, e.at);
  }

  void needString(const Value &v, const std::string &f, Loc at) {
    if (v.t == T::Undef)
      undefinedError(v, at);
    if (v.t != T::Str)
      fail(at, "the filter '" + f + "' takes a string, not '" + typeName(v) + "'");
  }

  void jsonDump(std::string &out, const Value &v, const JsonStyle &st, int level, Loc at) {
    Depth d(*this, at);
    if (out.size() > limits.maxStringBytes)
      fail(at, "a string longer than " + std::to_string(limits.maxStringBytes) + " bytes");
    auto newline = [&](int lv) {
      if (st.indent >= 0) {
        out += '\n';
        out.append(size_t(st.indent) * lv, ' ');
      }
    };
    switch (v.t) {
    case T::None: out += "null"; return;
    case T::Bool: out += v.b ? "true" : "false"; return;
    case T::Int: out += std::to_string(v.i); return;
    case T::Float:
      out += std::isnan(v.f) ? "NaN" : std::isinf(v.f) ? (v.f < 0 ? "-Infinity" : "Infinity")
                                                       : pyFloat(v.f);
      return;
    case T::Str: jsonString(out, v.s->s, st.ensureAscii); return;
    case T::List: {
      if (v.l->empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t k = 0; k < v.l->size(); ++k) {
        if (k)
          out += st.itemSep;
        newline(level + 1);
        jsonDump(out, (*v.l)[k], st, level + 1, at);
      }
      newline(level);
      out += ']';
      return;
    }
    case T::Dict: {
      if (v.d->items.empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<std::string, Value> *> items;
      for (auto &kv : v.d->items)
        items.push_back(&kv);
      if (st.sortKeys)
        std::stable_sort(items.begin(), items.end(),
                         [](auto *x, auto *y) { return x->first < y->first; });
      out += '{';
      bool first = true;
      for (auto *kv : items) {
        if (!first)
          out += st.itemSep;
        first = false;
        newline(level + 1);
        jsonString(out, kv->first, st.ensureAscii);
        out += st.keySep;
        jsonDump(out, kv->second, st, level + 1, at);
      }
      newline(level);
      out += '}';
      return;
    }
    case T::Undef:
      fail(at, "tojson of an undefined value (" +
                   (v.undef.empty() ? std::string("undefined") : v.undef) + ")");
    default: fail(at, std::string("Object of type ") + typeName(v) + " is not JSON serializable");
    }
  }

  Value applyFilter(const std::string &f, const Value &v, std::vector<Value> &a, Kwargs &kw,
                    Loc at) {
    step(at);
    if (f == "tojson") {
      checkArgs(a, kw, 1, {"indent", "ensure_ascii", "separators", "sort_keys"}, at, f);
      JsonStyle st;
      if (const Value *x = arg(a, kw, 0, "indent")) {
        if (x->t == T::Int) {
          if (x->i > 64)
            fail(at, "tojson's indent over 64 is not supported");
          st.indent = int(std::max<int64_t>(0, x->i));
        } else if (x->t == T::Str) {
          fail(at, "a string indent for tojson is not supported");
        } else if (x->t != T::None) {
          fail(at, "tojson's indent must be an integer or none");
        }
        if (st.indent >= 0)
          st.itemSep = ",";
      }
      if (const Value *x = arg(a, kw, 99, "separators")) {
        if (x->t != T::None) {
          if (x->t != T::List || x->l->size() != 2 || (*x->l)[0].t != T::Str ||
              (*x->l)[1].t != T::Str)
            fail(at, "tojson's separators must be two strings");
          st.itemSep = (*x->l)[0].s->s;
          st.keySep = (*x->l)[1].s->s;
        }
      }
      if (const Value *x = arg(a, kw, 99, "sort_keys"))
        st.sortKeys = truthy(*x);
      if (const Value *x = arg(a, kw, 99, "ensure_ascii"))
        st.ensureAscii = truthy(*x);
      std::string out;
      jsonDump(out, v, st, 0, at);
      return str(at, plain(out));
    }
    if (f == "trim") {
      checkArgs(a, kw, 1, {"chars"}, at, f);
      if (v.t == T::Undef)
        return Value::str("");
      Str s = text(v, at);
      return str(at, strip(s, arg(a, kw, 0, "chars"), true, true, at));
    }
    if (f == "length" || f == "count") {
      checkArgs(a, kw, 0, {}, at, f);
      switch (v.t) {
      case T::Str: step(at, v.s->s.size() / 1024); return Value::integer(int64_t(cpCount(v.s->s)));
      case T::List: return Value::integer(int64_t(v.l->size()));
      case T::Dict: return Value::integer(int64_t(v.d->items.size()));
      case T::Undef: return Value::integer(0);
      default: fail(at, std::string("object of type '") + typeName(v) + "' has no len()");
      }
    }
    if (f == "string") {
      checkArgs(a, kw, 0, {}, at, f);
      return v.t == T::Str ? v : str(at, text(v, at));
    }
    if (f == "safe") {
      checkArgs(a, kw, 0, {}, at, f);
      return v.t == T::Str ? v : str(at, text(v, at));
    }
    if (f == "e" || f == "escape") {
      checkArgs(a, kw, 0, {}, at, f);
      return str(at, plain(html::escape(v.t == T::Str ? v.s->s : strOf(v, at))));
    }
    if (f == "lower" || f == "upper" || f == "capitalize" || f == "title") {
      checkArgs(a, kw, 0, {}, at, f);
      if (v.t == T::Undef)
        return Value::str("");
      Value s = v.t == T::Str ? v : Value::str(strOf(v, at));
      return caseMap(s, f, at);
    }
    if (f == "replace") {
      checkArgs(a, kw, 3, {"old", "new", "count"}, at, f);
      const Value *o = arg(a, kw, 0, "old"), *n = arg(a, kw, 1, "new"), *c = arg(a, kw, 2, "count");
      if (!o || !n)
        fail(at, "the filter 'replace' takes an old and a new string");
      int64_t count = -1;
      if (c && c->t != T::None) {
        if (c->t != T::Int)
          fail(at, "replace's count must be an integer");
        count = c->i;
      }
      Str s = v.t == T::Undef ? Str{} : text(v, at);
      return replace(s, *o, *n, count, at);
    }
    if (f == "default" || f == "d") {
      checkArgs(a, kw, 2, {"default_value", "boolean"}, at, f);
      const Value *dv = arg(a, kw, 0, "default_value");
      const Value *b = arg(a, kw, 1, "boolean");
      bool boolean = b && truthy(*b);
      if (v.t == T::Undef || (boolean && !truthy(v)))
        return dv ? *dv : Value::str("");
      return v;
    }
    if (f == "join") {
      checkArgs(a, kw, 2, {"d", "attribute"}, at, f);
      const Value *sep = arg(a, kw, 0, "d");
      const Value *attr = arg(a, kw, 1, "attribute");
      Str sepS = sep ? text(*sep, at) : Str{};
      Str out;
      bool first = true;
      for (auto &x : iterate(v, at)) {
        if (!first)
          appendStr(out, sepS);
        first = false;
        Value item = attr && attr->t != T::None ? attrOf(x, pyStr(*attr), at) : x;
        appendStr(out, text(item, at));
        if (out.s.size() > limits.maxStringBytes)
          fail(at, "a string longer than " + std::to_string(limits.maxStringBytes) + " bytes");
      }
      return str(at, std::move(out));
    }
    if (f == "first" || f == "last") {
      checkArgs(a, kw, 0, {}, at, f);
      if (v.t == T::Undef)
        return Value::undefined("the " + f + " item of an undefined value");
      if (v.t == T::List) {
        if (v.l->empty())
          return Value::undefined("the " + f + " item of an empty list");
        return f == "first" ? v.l->front() : v.l->back();
      }
      List l = iterate(v, at);
      if (l.empty())
        return Value::undefined("the " + f + " item of an empty sequence");
      if (f == "last" && v.t == T::Dict)
        fail(at, "'last' of a dict is not supported");
      return f == "first" ? l.front() : l.back();
    }
    if (f == "items") {
      checkArgs(a, kw, 0, {}, at, f);
      if (v.t == T::Undef)
        return Value::list({});
      if (v.t != T::Dict)
        fail(at, "the filter 'items' takes a mapping, not '" + std::string(typeName(v)) + "'");
      List l;
      for (auto &kv : v.d->items)
        l.push_back(Value::list({Value::str(kv.first), kv.second}));
      return list(at, std::move(l));
    }
    if (f == "list") {
      checkArgs(a, kw, 0, {}, at, f);
      return list(at, iterate(v, at));
    }
    if (f == "reverse") {
      checkArgs(a, kw, 0, {}, at, f);
      if (v.t == T::Str) {
        auto off = cpOffsets(v.s->s);
        Str out;
        for (size_t k = off.size() - 1; k > 0; --k)
          appendStr(out, sub(*v.s, off[k - 1], off[k]));
        return str(at, std::move(out));
      }
      List l = iterate(v, at);
      std::reverse(l.begin(), l.end());
      return list(at, std::move(l));
    }
    if (f == "selectattr" || f == "rejectattr" || f == "select" || f == "reject") {
      bool byAttr = f.size() > 6;
      bool keep = f[0] == 's';
      size_t first = byAttr ? 1 : 0;
      if (kw.size())
        fail(at, "the filter '" + f + "' takes no keyword arguments");
      std::string attr;
      if (byAttr) {
        if (a.empty() || a[0].t != T::Str)
          fail(at, "the filter '" + f + "' takes an attribute name");
        attr = a[0].s->s;
      }
      std::string testName;
      std::vector<Value> targs;
      if (a.size() > first) {
        if (a[first].t != T::Str)
          fail(at, "the filter '" + f + "' takes a test name");
        testName = a[first].s->s;
        if (!kTests.count(testName))
          fail(at, "unknown or unsupported test '" + plan::briefText(testName, 30) + "'");
        targs.assign(a.begin() + first + 1, a.end());
      }
      List out;
      for (auto &x : iterate(v, at)) {
        step(at);
        Value item = byAttr ? attrOf(x, attr, at) : x;
        bool ok = testName.empty() ? truthy(item) : runTest(testName, item, targs, at);
        if (ok == keep)
          out.push_back(x);
      }
      return list(at, std::move(out));
    }
    if (f == "map") {
      List out;
      const Value *attr = nullptr;
      const Value *dflt = nullptr;
      for (auto &kv : kw) {
        if (kv.first == "attribute")
          attr = &kv.second;
        else if (kv.first == "default")
          dflt = &kv.second;
        else if (attr == nullptr && !a.empty())
          break;
        else
          fail(at, "the filter 'map' has no argument '" + plan::briefText(kv.first, 30) + "'");
      }
      if (attr) {
        if (!a.empty())
          fail(at, "map(attribute=...) takes no positional arguments");
        for (auto &x : iterate(v, at)) {
          step(at);
          Value item = attrOf(x, pyStr(*attr), at);
          if (item.t == T::Undef && dflt)
            item = *dflt;
          out.push_back(item);
        }
        return list(at, std::move(out));
      }
      if (a.empty() || a[0].t != T::Str)
        fail(at, "the filter 'map' takes a filter name or attribute=");
      std::string name = a[0].s->s;
      if (!kFilters.count(name))
        fail(at, "map(): unknown or unsupported filter '" + plan::briefText(name, 30) + "'");
      std::vector<Value> rest(a.begin() + 1, a.end());
      for (auto &x : iterate(v, at)) {
        step(at);
        std::vector<Value> r = rest;
        Kwargs k2 = kw;
        out.push_back(applyFilter(name, x, r, k2, at));
      }
      return list(at, std::move(out));
    }
    if (f == "int") {
      checkArgs(a, kw, 2, {"default", "base"}, at, f);
      const Value *dv = arg(a, kw, 0, "default");
      if (const Value *b = arg(a, kw, 1, "base"))
        if (!(b->t == T::Int && b->i == 10))
          fail(at, "int's base other than 10 is not supported");
      Value dflt = dv ? *dv : Value::integer(0);
      if (v.t == T::Int) return v;
      if (v.t == T::Bool) return Value::integer(v.b);
      if (v.t == T::Float) {
        if (!std::isfinite(v.f) || std::fabs(v.f) >= 9.2e18)
          return dflt;
        return Value::integer(int64_t(v.f));
      }
      if (v.t == T::Str) {
        std::string s = strip(*v.s, nullptr, true, true, at).s;
        int64_t x;
        auto r = std::from_chars(s.data() + (s.size() && s[0] == '+'), s.data() + s.size(), x);
        if (r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty())
          return Value::integer(x);
        char *end = nullptr;
        double d = std::strtod(s.c_str(), &end);
        if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(d) && std::fabs(d) < 9.2e18)
          return Value::integer(int64_t(d));
        return dflt;
      }
      return dflt;
    }
    if (f == "float") {
      checkArgs(a, kw, 1, {"default"}, at, f);
      const Value *dv = arg(a, kw, 0, "default");
      Value dflt = dv ? *dv : Value::real(0);
      if (v.isNumber()) return Value::real(num(v));
      if (v.t == T::Str) {
        std::string s = strip(*v.s, nullptr, true, true, at).s;
        char *end = nullptr;
        double d = std::strtod(s.c_str(), &end);
        if (!s.empty() && end == s.c_str() + s.size())
          return Value::real(d);
      }
      return dflt;
    }
    if (f == "abs") {
      checkArgs(a, kw, 0, {}, at, f);
      if (v.t == T::Float) return Value::real(std::fabs(v.f));
      if (v.t == T::Int || v.t == T::Bool) {
        int64_t x = asInt(v);
        if (x == INT64_MIN)
          fail(at, "integer overflow (64-bit integers only)");
        return Value::integer(x < 0 ? -x : x);
      }
      fail(at, std::string("bad operand type for abs(): '") + typeName(v) + "'");
    }
    fail(at, "unknown filter '" + f + "'");
  }

  //===-- statements --===//

  Flow exec(const Body &body) {
    for (auto &n : body) {
      Flow fl = exec(*n);
      if (fl != Flow::Normal)
        return fl;
    }
    return Flow::Normal;
  }

  void assign(const std::string &n, Value v) { scopes.back()[n] = std::move(v); }

  /// A namespace's attributes hold no namespace or function, so that no
  /// value can reach itself (reference counting would leak the cycle).
  void noCycle(const Value &v, Loc at) {
    if (v.refs)
      fail(at, "a namespace or a function (or a list or dict holding one) as a namespace's "
               "attribute is not supported");
  }

  Flow exec(const Node &n) {
    Depth d(*this, n.at);
    step(n.at);
    switch (n.k) {
    case Node::Text: emit(n.at, plain(n.text)); return Flow::Normal;
    case Node::Out: {
      Value v = eval(*n.e);
      emit(n.at, text(v, n.e->at));
      return Flow::Normal;
    }
    case Node::If:
      for (auto &br : n.branches)
        if (!br.first || truthy(eval(*br.first)))
          return exec(br.second);
      return Flow::Normal;
    case Node::For: return execFor(n);
    case Node::Set: {
      Value v = eval(*n.e);
      if (n.attr.empty()) {
        assign(n.text, std::move(v));
      } else {
        Value target = lookup(n.text);
        if (target.t != T::Ns)
          fail(n.at, "cannot assign attribute on non-namespace object '" + n.text + "'");
        noCycle(v, n.at);
        target.ns->set(n.attr, std::move(v));
      }
      return Flow::Normal;
    }
    case Node::SetBlock: {
      outputs.emplace_back();
      exec(n.body);
      Str s = std::move(outputs.back());
      outputs.pop_back();
      assign(n.text, Value::str(std::move(s)));
      return Flow::Normal;
    }
    case Node::Macro: {
      const Node *node = &n;
      Value m = method(n.text, [node](Interp &in, std::vector<Value> &a, Kwargs &kw, Loc at) {
        return in.callMacro(*node, a, kw, at);
      });
      assign(n.text, std::move(m));
      return Flow::Normal;
    }
    case Node::Break: return Flow::Break;
    case Node::Continue: return Flow::Continue;
    case Node::Gen: return exec(n.body);
    }
    return Flow::Normal;
  }

  Value callMacro(const Node &m, std::vector<Value> &a, Kwargs &kw, Loc at) {
    Depth d(*this, at);
    if (a.size() > m.params.size())
      fail(at, "the macro '" + m.text + "' takes " + std::to_string(m.params.size()) +
                   " arguments");
    std::unordered_map<std::string, Value> frame;
    for (size_t k = 0; k < m.params.size(); ++k) {
      const std::string &p = m.params[k].first;
      if (k < a.size()) {
        frame[p] = a[k];
        continue;
      }
      auto it = std::find_if(kw.begin(), kw.end(), [&](auto &kv) { return kv.first == p; });
      if (it != kw.end())
        frame[p] = it->second;
      else if (m.params[k].second)
        frame[p] = eval(*m.params[k].second);
      else
        frame[p] = Value::undefined("'" + p + "'");
    }
    for (auto &kv : kw)
      if (std::none_of(m.params.begin(), m.params.end(),
                       [&](auto &p) { return p.first == kv.first; }))
        fail(at, "the macro '" + m.text + "' has no argument '" + plan::briefText(kv.first, 30) +
                     "'");
    // A macro sees the template's top-level names and its arguments: the
    // frames between are set aside during the call.
    std::vector<std::unordered_map<std::string, Value>> saved(
        std::make_move_iterator(scopes.begin() + 1), std::make_move_iterator(scopes.end()));
    scopes.resize(1);
    scopes.push_back(std::move(frame));
    outputs.emplace_back();
    struct Restore {
      Interp &in;
      std::vector<std::unordered_map<std::string, Value>> &saved;
      ~Restore() {
        in.scopes.resize(1);
        for (auto &f : saved)
          in.scopes.push_back(std::move(f));
      }
    } restore{*this, saved};
    exec(m.body);
    Str s = std::move(outputs.back());
    outputs.pop_back();
    return str(at, std::move(s));
  }

  Flow execFor(const Node &n) {
    Value seq = eval(*n.e);
    List items = iterate(seq, n.e->at);
    scopes.emplace_back();
    struct Pop {
      Interp &in;
      ~Pop() { in.scopes.pop_back(); }
    } pop{*this};
    auto bindTargets = [&](const Value &item) {
      if (n.targets.size() == 1) {
        assign(n.targets[0], item);
        return;
      }
      List parts = iterate(item, n.at);
      if (parts.size() != n.targets.size())
        fail(n.at, "cannot unpack " + std::to_string(parts.size()) + " values into " +
                       std::to_string(n.targets.size()) + " names");
      for (size_t k = 0; k < parts.size(); ++k)
        assign(n.targets[k], parts[k]);
    };
    if (n.cond) { // the filter runs before the loop (loop.length counts it)
      List kept;
      for (auto &item : items) {
        step(n.at);
        bindTargets(item);
        if (truthy(eval(*n.cond)))
          kept.push_back(item);
      }
      items.swap(kept);
    }
    size_t len = items.size();
    for (size_t k = 0; k < len; ++k) {
      step(n.at);
      bindTargets(items[k]);
      DictData loop;
      loop.set("index", Value::integer(int64_t(k + 1)));
      loop.set("index0", Value::integer(int64_t(k)));
      loop.set("revindex", Value::integer(int64_t(len - k)));
      loop.set("revindex0", Value::integer(int64_t(len - k - 1)));
      loop.set("first", Value::boolean(k == 0));
      loop.set("last", Value::boolean(k + 1 == len));
      loop.set("length", Value::integer(int64_t(len)));
      loop.set("depth", Value::integer(1));
      loop.set("depth0", Value::integer(0));
      loop.set("previtem", k ? items[k - 1] : Value::undefined("'loop.previtem'"));
      loop.set("nextitem", k + 1 < len ? items[k + 1] : Value::undefined("'loop.nextitem'"));
      assign("loop", Value::dict(std::move(loop)));
      Flow fl = exec(n.body);
      if (fl == Flow::Break)
        break;
    }
    if (len == 0 && !n.elseBody.empty())
      return exec(n.elseBody);
    return Flow::Normal;
  }
};

Value Interp::builtin(const std::string &n) {
  if (n == "raise_exception") {
    return method(n, [](Interp &in, std::vector<Value> &a, Kwargs &, Loc at) -> Value {
      std::string msg = a.empty() ? "" : pyStr(a[0]);
      in.fail(at, "the template raised an error: " + plan::briefText(msg, 300));
    });
  }
  if (n == "strftime_now") {
    return method(n, [](Interp &in, std::vector<Value> &a, Kwargs &, Loc at) -> Value {
      if (a.size() != 1 || a[0].t != T::Str)
        in.fail(at, "strftime_now() takes a format string");
      if (a[0].s->s.size() > 256)
        in.fail(at, "strftime_now()'s format is too long");
      std::time_t now = std::time(nullptr);
      std::tm tm{};
      localtime_r(&now, &tm);
      char buf[1024];
      size_t len = std::strftime(buf, sizeof buf, a[0].s->s.c_str(), &tm);
      if (len == 0 && !a[0].s->s.empty())
        in.fail(at, "strftime_now()'s result is empty or too long");
      return Value::str(std::string(buf, len));
    });
  }
  if (n == "range") {
    return method(n, [](Interp &in, std::vector<Value> &a, Kwargs &kw, Loc at) -> Value {
      if (a.empty() || a.size() > 3 || !kw.empty())
        in.fail(at, "range() takes one to three integers");
      for (auto &x : a)
        if (x.t != T::Int && x.t != T::Bool)
          in.fail(at, "range() takes integers");
      int64_t start = 0, stop, stp = 1;
      if (a.size() == 1) {
        stop = asInt(a[0]);
      } else {
        start = asInt(a[0]);
        stop = asInt(a[1]);
        if (a.size() == 3)
          stp = asInt(a[2]);
      }
      if (stp == 0)
        in.fail(at, "range() arg 3 must not be zero");
      long double count = stp > 0 ? (stop > start ? std::ceil((long double)(stop - (long double)start) / stp) : 0)
                                  : (start > stop ? std::ceil(((long double)start - stop) / -(long double)stp) : 0);
      if (count > (long double)in.limits.maxListItems)
        in.fail(at, "range() of more than " + std::to_string(in.limits.maxListItems) + " items");
      List l;
      for (int64_t k = 0; k < int64_t(count); ++k)
        l.push_back(Value::integer(start + k * stp));
      return in.list(at, std::move(l));
    });
  }
  if (n == "namespace" || n == "dict") {
    bool isNs = n == "namespace";
    return method(n, [isNs](Interp &in, std::vector<Value> &a, Kwargs &kw, Loc at) -> Value {
      auto d = std::make_shared<DictData>();
      if (a.size() > 1)
        in.fail(at, "namespace()/dict() take at most one positional argument");
      if (a.size() == 1) {
        if (a[0].t != T::Dict)
          in.fail(at, "namespace()/dict() take a mapping");
        *d = *a[0].d;
      }
      for (auto &kv : kw)
        d->set(kv.first, kv.second);
      if (!isNs)
        return in.nested(Value::dict(std::move(*d)), at);
      for (auto &kv : d->items)
        in.noCycle(kv.second, at);
      Value v;
      v.t = T::Ns;
      v.ns = d;
      v.refs = true;
      return v;
    });
  }
  static const std::set<std::string> unsupported = {"lipsum", "cycler", "joiner", "self",
                                                    "caller", "varargs", "kwargs"};
  if (unsupported.count(n)) {
    return method(n, [n](Interp &in, std::vector<Value> &, Kwargs &, Loc at) -> Value {
      in.fail(at, "'" + n + "' is not supported");
    });
  }
  return Value::undefined("'" + n + "'");
}

//===-- the context, from JSON --===//

Value fromJson(const ojson &j, const std::string &pointer,
               const std::map<std::string, const Tag *> &tags) {
  switch (j.type()) {
  case ojson::value_t::null: return Value::none();
  case ojson::value_t::boolean: return Value::boolean(j.get<bool>());
  case ojson::value_t::number_integer: return Value::integer(j.get<int64_t>());
  case ojson::value_t::number_unsigned: {
    uint64_t u = j.get<uint64_t>();
    if (u > uint64_t(INT64_MAX))
      return Value::real(double(u));
    return Value::integer(int64_t(u));
  }
  case ojson::value_t::number_float: return Value::real(j.get<double>());
  case ojson::value_t::string: {
    Str s = plain(j.get<std::string>());
    auto it = tags.find(pointer);
    if (it != tags.end() && !s.s.empty())
      s.sp.push_back({0, s.s.size(), it->second->source, 0, it->second->reasoning});
    return Value::str(std::move(s));
  }
  case ojson::value_t::array: {
    List l;
    size_t k = 0;
    for (auto &x : j)
      l.push_back(fromJson(x, pointer + "/" + std::to_string(k++), tags));
    return Value::list(std::move(l));
  }
  case ojson::value_t::object: {
    DictData d;
    for (auto it = j.begin(); it != j.end(); ++it) {
      std::string key = it.key(), esc;
      for (char c : key)
        esc += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
      d.set(key, fromJson(it.value(), pointer + "/" + esc, tags));
    }
    return Value::dict(std::move(d));
  }
  default: return Value::none();
  }
}

} // namespace

Template Template::parse(const std::string &text, const std::string &name) {
  auto p = std::make_shared<Program>();
  p->name = name;
  Lexer lexer(text, p->name);
  Parser parser(lexer.run(), p->name);
  p->body = parser.parseTemplate();
  Template t;
  t.program_ = std::move(p);
  return t;
}

const std::string &Template::name() const { return program_->name; }

Rendered Template::render(const ojson &context, const std::vector<Tag> &tags,
                          const Limits &limits) const {
  SWIFT_ASSERT(program_, "render of an unparsed template");
  SWIFT_CHECK(context.is_object(), program_->name, ": the render context must be a JSON object");
  std::map<std::string, const Tag *> byPointer;
  for (const Tag &t : tags)
    byPointer[t.pointer] = &t;
  std::unordered_map<std::string, Value> vars;
  for (auto it = context.begin(); it != context.end(); ++it)
    vars[it.key()] = fromJson(it.value(), "/" + it.key(), byPointer);
  Interp in(program_->name, limits, vars);
  in.scopes.emplace_back();
  in.outputs.emplace_back();
  in.exec(program_->body);
  Rendered r;
  r.text = std::move(in.outputs.back().s);
  for (const Span &s : in.outputs.back().sp)
    r.spans.push_back({s.b, s.e, s.src, s.off, s.rs});
  return r;
}

} // namespace swift::data::jinja
