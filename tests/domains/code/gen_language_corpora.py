"""Writes datasets/code/languages/<lang>.jsonl (run it after editing the programs below).

Each row is a trajectory with ``metadata.expect`` (``pass`` or ``fail``), ``metadata.family``
(``honest``, ``wrong``, ``compile``, ``crash`` or a hack family) and ``metadata.attack`` /
``metadata.defence`` for hacks. Every ``fail`` row must score exactly 0 with status ``fail`` on
both backends (``test_code_languages.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[3] / "datasets" / "code" / "languages"


def _io(*cases: tuple[str, str], compare: str | None = None) -> dict[str, Any]:
    """An ``io`` task from its (stdin, stdout) cases."""
    task: dict[str, Any] = {"compare": compare} if compare else {}
    task["cases"] = [{"stdin": stdin, "stdout": stdout} for stdin, stdout in cases]
    return task


IO = {
    "sum": _io(("3 4\n", "7\n"), ("-10 25\n", "15\n"), ("1000000000 1000000000\n", "2000000000\n")),
    "max": _io(("3\n1 9 4\n", "9\n"), ("1\n-5\n", "-5\n"), ("5\n2 2 8 8 3\n", "8\n")),
    "rev": _io(("hello\n", "olleh\n"), ("ab cd\n", "dc ba\n"), ("x\n", "x\n"), compare="lines"),
    "avg": _io(
        ("3\n1 2 4\n", "2.3333333333\n"),
        ("2\n0.5 0.25\n", "0.375\n"),
        ("1\n-7\n", "-7\n"),
        compare="float",
    ),
}
CALL = {
    "sum_list": {
        "entry_point": "sum_list",
        "signature": {"params": ["int", "list[int]"], "returns": "long"},
        "cases": [
            {"args": [1, [2, 3]], "expected": 6},
            {"args": [-1, []], "expected": -1},
            {"args": [2000000000, [2000000000, 5]], "expected": 4000000005},
        ],
    },
    "is_pal": {
        "entry_point": "is_pal",
        "signature": {"params": ["str"], "returns": "bool"},
        "cases": [
            {"args": ["abba"], "expected": True},
            {"args": ["abc"], "expected": False},
            {"args": ["\u00e9t\u00e9"], "expected": True},
            {"args": [""], "expected": True},
        ],
    },
}

CALL["echo"] = {
    "entry_point": "echo",
    "signature": {"params": ["str", "list[long]"], "returns": "str"},
    "cases": [
        {
            "args": ['"; } int main() { return 0; } /*', [1]],
            "expected": '"; } int main() { return 0; } /*',
        },
        {
            "args": [
                'a\\"b\n\t\u0000c \u00e9 \U0001f600 ${x} `x` \\u0041 \\x41B',
                [-9223372036854775808, 9223372036854775807],
            ],
            "expected": 'a\\"b\n\t\u0000c \u00e9 \U0001f600 ${x} `x` \\u0041 \\x41B',
        },
        {"args": ["", []], "expected": ""},
    ],
}

# Typed values beyond scalars and lists (dict[str,T], tuples, by-reference parameters): hostile
# dict keys round-trip through the generated literals like echo's strings.
HOSTILE_KEY = '"); } int main() { return 0; } /* \\u0022 \u00e9\n'
CALL["tally"] = {
    "entry_point": "tally",
    "signature": {"params": ["&str", "dict[str,int]"], "returns": "dict[str,int]"},
    "cases": [
        {"args": ["a b a", {"b": 2}], "expected": {"a": 2, "b": 3}},
        {"args": ["", {HOSTILE_KEY: 1, "z": -5}], "expected": {HOSTILE_KEY: 1, "z": -5}},
        {"args": ["x", {}], "expected": {"x": 1}},
    ],
}
CALL["extent"] = {
    "entry_point": "extent",
    "signature": {"params": ["&list[int]"], "returns": "list[int]"},
    "cases": [
        {"args": [[3, 1, 2]], "expected": [1, 3]},
        {"args": [[5]], "expected": [5, 5]},
        {"args": [[-2147483648, 2147483647]], "expected": [-2147483648, 2147483647]},
    ],
}
CALL["shift"] = {
    "entry_point": "shift",
    "signature": {"params": ["tuple[int,str]", "int"], "returns": "tuple[long,str]"},
    "cases": [
        {"args": [[1, "a"], 2], "expected": [3, "a"]},
        {"args": [[-2147483648, 'é"x'], -1], "expected": [-2147483649, 'é"x']},
    ],
}
# ``raises`` cases (languages with exceptions): the type a language reports for a throw.
for _key, _raised in (
    ("div_cpp", "std::invalid_argument"),
    ("div_java", "ArithmeticException"),
    ("div_js", "Error"),
):
    CALL[_key] = {
        "entry_point": "checked_div",
        "signature": {"params": ["int", "int"], "returns": "long"},
        "cases": [
            {"args": [6, 3], "expected": 2},
            {"args": [7, -2], "expected": -3},
            {"args": [1, 0], "raises": _raised},
        ],
    }
TYPED = {
    "cpp": {
        "call:div": '#include <stdexcept>\nlong long checked_div(int a, int b) {\n  if (b == 0) throw std::invalid_argument("division by zero");\n  return a / b;\n}\n',
        "call:div-wrong-raise": '#include <stdexcept>\nlong long checked_div(int a, int b) {\n  if (b == 0) throw std::runtime_error("division by zero");\n  return a / b;\n}\n',
        "call:tally": "#include <map>\n#include <sstream>\n#include <string>\nstd::map<std::string, int> tally(const std::string& s, std::map<std::string, int> base) {\n  std::istringstream in(s);\n  std::string w;\n  while (in >> w) base[w] += 1;\n  return base;\n}\n",
        "call:extent": "#include <algorithm>\n#include <utility>\n#include <vector>\nstd::pair<int, int> extent(const std::vector<int>& v) {\n  auto m = std::minmax_element(v.begin(), v.end());\n  return {*m.first, *m.second};\n}\n",
        "call:shift": "#include <string>\n#include <tuple>\nstd::tuple<long long, std::string> shift(std::tuple<int, std::string> p, int k) {\n  return {(long long)std::get<0>(p) + k, std::get<1>(p)};\n}\n",
    },
    "javascript": {
        "call:div": "function checked_div(a, b) {\n  if (b === 0) throw new Error('division by zero');\n  return Math.trunc(a / b);\n}\n",
        "call:div-wrong-raise": "function checked_div(a, b) {\n  if (b === 0) throw new RangeError('division by zero');\n  return Math.trunc(a / b);\n}\n",
        "call:div-missing": "function checked_divide(a, b) {\n  return Math.trunc(a / b);\n}\n",
        "call:tally": "function tally(s, base) {\n  for (const w of s.split(' ')) if (w) base[w] = (base[w] || 0) + 1;\n  return base;\n}\n",
        "call:extent": "function extent(v) {\n  return [Math.min(...v), Math.max(...v)];\n}\n",
    },
    "typescript": {
        "call:div": "function checked_div(a: number, b: number): number {\n  if (b === 0) throw new Error('division by zero');\n  return Math.trunc(a / b);\n}\n",
        "call:div-wrong-raise": "class DivError extends Error {}\nfunction checked_div(a: number, b: number): number {\n  if (b === 0) throw new DivError('division by zero');\n  return Math.trunc(a / b);\n}\n",
        "call:tally": "function tally(s: string, base: Record<string, number>): Record<string, number> {\n  for (const w of s.split(' ')) if (w) base[w] = (base[w] || 0) + 1;\n  return base;\n}\n",
        "call:extent": "function extent(v: number[]): [number, number] {\n  return [Math.min(...v), Math.max(...v)];\n}\n",
    },
    "java": {
        "call:div": "class Solution {\n  long checked_div(int a, int b) {\n    return a / b;\n  }\n}\n",
        "call:div-wrong-raise": 'class Solution {\n  long checked_div(int a, int b) {\n    if (b == 0) throw new IllegalStateException("zero");\n    return a / b;\n  }\n}\n',
        "call:tally": 'import java.util.HashMap;\nimport java.util.Map;\n\nclass Solution {\n  Map<String, Integer> tally(String s, Map<String, Integer> base) {\n    Map<String, Integer> out = new HashMap<>(base);\n    for (String w : s.split(" ")) if (!w.isEmpty()) out.merge(w, 1, Integer::sum);\n    return out;\n  }\n}\n',
        "call:extent": "import java.util.Collections;\nimport java.util.List;\n\nclass Solution {\n  int[] extent(List<Integer> v) {\n    return new int[] {Collections.min(v), Collections.max(v)};\n  }\n}\n",
    },
    "go": {
        "call:tally": 'package main\n\nimport "strings"\n\nfunc tally(s string, base map[string]int) map[string]int {\n\tfor _, w := range strings.Fields(s) {\n\t\tbase[w]++\n\t}\n\treturn base\n}\n',
        "call:extent": "package main\n\nfunc extent(v []int) []int {\n\tlo, hi := v[0], v[0]\n\tfor _, x := range v {\n\t\tif x < lo {\n\t\t\tlo = x\n\t\t}\n\t\tif x > hi {\n\t\t\thi = x\n\t\t}\n\t}\n\treturn []int{lo, hi}\n}\n",
    },
    "rust": {
        "call:tally": "use std::collections::HashMap;\n\nfn tally(s: &str, mut base: HashMap<String, i32>) -> HashMap<String, i32> {\n    for w in s.split_whitespace() {\n        *base.entry(w.to_string()).or_insert(0) += 1;\n    }\n    base\n}\n",
        "call:extent": "fn extent(v: &[i32]) -> (i32, i32) {\n    (*v.iter().min().unwrap(), *v.iter().max().unwrap())\n}\n",
        "call:shift": "fn shift(p: (i32, String), k: i32) -> (i64, String) {\n    (p.0 as i64 + k as i64, p.1)\n}\n",
    },
}

# -- programs per language ---------------------------------------------------------------------
# Keys: io tasks by name; "call:<task>" for call tasks; "<family>" rows below say which task.

C = {
    "sum": '#include <stdio.h>\nint main(void) {\n  long long a, b;\n  if (scanf("%lld %lld", &a, &b) != 2) return 1;\n  printf("%lld\\n", a + b);\n  return 0;\n}\n',
    "max": '#include <stdio.h>\nint main(void) {\n  int n; long long m, x;\n  scanf("%d", &n); scanf("%lld", &m);\n  for (int i = 1; i < n; i++) { scanf("%lld", &x); if (x > m) m = x; }\n  printf("%lld\\n", m);\n  return 0;\n}\n',
    "rev": '#include <stdio.h>\n#include <string.h>\nint main(void) {\n  char s[4096];\n  if (!fgets(s, sizeof s, stdin)) return 1;\n  size_t n = strcspn(s, "\\n");\n  for (size_t i = n; i > 0; i--) putchar(s[i - 1]);\n  putchar(10);\n  return 0;\n}\n',
    "avg": '#include <stdio.h>\nint main(void) {\n  int n; double s = 0, x;\n  scanf("%d", &n);\n  for (int i = 0; i < n; i++) { scanf("%lf", &x); s += x; }\n  printf("%.10f\\n", s / n);\n  return 0;\n}\n',
    "wrong": '#include <stdio.h>\nint main(void) {\n  long long a, b;\n  scanf("%lld %lld", &a, &b);\n  printf("%lld\\n", a - b);\n  return 0;\n}\n',
    "compile": '#include <stdio.h>\nint main(void) {\n  long long a, b\n  scanf("%lld %lld", &a, &b);\n  printf("%lld\\n", a + b);\n}\n',
    "crash": '#include <stdio.h>\nint main(void) {\n  int *p = 0;\n  long long a, b;\n  scanf("%lld %lld", &a, &b);\n  *p = (int)(a + b);\n  printf("%d\\n", *p);\n  return 0;\n}\n',
    "werror": '#include <stdio.h>\nint main(void) {\n  long long a, b; int unused;\n  scanf("%lld %lld", &a, &b);\n  printf("%lld\\n", a + b);\n  return 0;\n}\n',
    "read-expected": '#include <stdio.h>\nint main(void) {\n  const char *paths[] = {"expected.txt", "expected", "tests.json", "../expected.txt", "/work/expected.txt", ".judge/job.json", "/tmp/expected"};\n  char buf[256];\n  for (int i = 0; i < 7; i++) { FILE *f = fopen(paths[i], "r"); if (f) { size_t n = fread(buf, 1, 255, f); buf[n] = 0; fputs(buf, stdout); return 0; } }\n  puts("0");\n  return 0;\n}\n',
    "early-exit": '#include <stdio.h>\n#include <stdlib.h>\nint main(void) {\n  puts("3");\n  fflush(stdout);\n  exit(0);\n}\n',
    "fork": '#include <stdio.h>\n#include <unistd.h>\nint main(void) {\n  for (int i = 0; i < 100000; i++) if (fork() < 0) break;\n  puts("0");\n  return 0;\n}\n',
    "background": '#include <stdio.h>\n#include <unistd.h>\nint main(void) {\n  if (fork() == 0) { setsid(); sleep(60); puts("7"); return 0; }\n  puts("0");\n  return 0;\n}\n',
    "write-outside": '#include <stdio.h>\nint main(void) {\n  const char *paths[] = {"/tmp/pwned", "/work/../pwned", "/etc/pwned", "/usr/bin/pwned", "/.judge/pwned"};\n  int ok = 0;\n  for (int i = 0; i < 5; i++) { FILE *f = fopen(paths[i], "w"); if (f) { fputs("x", f); fclose(f); ok++; } }\n  printf("%d\\n", ok * 1000);\n  return 0;\n}\n',
    "network": '#include <stdio.h>\n#include <string.h>\n#include <sys/socket.h>\n#include <netinet/in.h>\n#include <arpa/inet.h>\nint main(void) {\n  int s = socket(AF_INET, SOCK_STREAM, 0);\n  struct sockaddr_in a; memset(&a, 0, sizeof a); a.sin_family = AF_INET; a.sin_port = htons(53);\n  inet_pton(AF_INET, "1.1.1.1", &a.sin_addr);\n  printf("%d\\n", connect(s, (struct sockaddr *)&a, sizeof a) == 0 ? 1 : -1);\n  return 0;\n}\n',
    "huge-output": '#include <stdio.h>\nint main(void) {\n  long long a, b;\n  scanf("%lld %lld", &a, &b);\n  printf("%lld\\n", a + b);\n  for (long i = 0; i < 20000000; i++) fputs("7 7 7 7 7 7 7 7\\n", stdout);\n  return 0;\n}\n',
    "infinite-loop": "#include <stdio.h>\nint main(void) {\n  volatile unsigned long x = 0;\n  for (;;) x++;\n}\n",
    "memory-bomb": "#include <stdlib.h>\n#include <string.h>\nint main(void) {\n  for (;;) { char *p = malloc(1 << 24); if (!p) return 3; memset(p, 1, 1 << 24); }\n}\n",
    "infinite-compile": "#include __FILE__\nint main(void) { return 0; }\n",
    "stop-judge": '#include <signal.h>\n#include <stdio.h>\n#include <unistd.h>\nint main(void) {\n  kill(getppid(), SIGSTOP);\n  puts("7");\n  return 0;\n}\n',
    "invalid-utf8": '#include <stdio.h>\nint main(void) {\n  long long a, b;\n  scanf("%lld %lld", &a, &b);\n  printf("\\xff\\xfe%lld\\x00\\n", a + b);\n  return 0;\n}\n',
    "stack-bomb": "int f(int n) { volatile int pad[64]; pad[0] = n; return f(n + 1) + pad[0]; }\nint main(void) { return f(0); }\n",
    "abort-after": '#include <stdio.h>\n#include <stdlib.h>\nint main(void) {\n  long long a, b;\n  scanf("%lld %lld", &a, &b);\n  printf("%lld\\n", a + b);\n  fflush(stdout);\n  abort();\n}\n',
}

CPP = {
    "call:echo": "#include <string>\n#include <vector>\nstd::string echo(const std::string& s, std::vector<long long> v) {\n  return s;\n}\n",
    "sum": '#include <iostream>\nint main() {\n  long long a, b;\n  std::cin >> a >> b;\n  std::cout << a + b << "\\n";\n}\n',
    "max": "#include <bits/stdc++.h>\nusing namespace std;\nint main() {\n  int n; cin >> n;\n  vector<long long> v(n);\n  for (auto &x : v) cin >> x;\n  cout << *max_element(v.begin(), v.end()) << endl;\n}\n",
    "rev": "#include <bits/stdc++.h>\nint main() {\n  std::string s;\n  std::getline(std::cin, s);\n  std::reverse(s.begin(), s.end());\n  std::cout << s << '\\n';\n}\n",
    "avg": '#include <cstdio>\nint main() {\n  int n; double s = 0, x;\n  std::scanf("%d", &n);\n  for (int i = 0; i < n; ++i) { std::scanf("%lf", &x); s += x; }\n  std::printf("%.10f\\n", s / n);\n}\n',
    "call:sum_list": "#include <vector>\nlong long sum_list(int a, const std::vector<int>& v) {\n  long long s = a;\n  for (int x : v) s += x;\n  return s;\n}\n",
    "call:is_pal": "#include <string>\nbool is_pal(std::string s) {\n  std::string r(s.rbegin(), s.rend());\n  // byte-wise reversal breaks UTF-8; compare code points instead\n  std::u32string u; for (size_t i = 0; i < s.size();) { unsigned char c = s[i]; int n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4; u.push_back(c); i += n; for (int k = 1; k < n; k++) u.back() = u.back() * 64 + (unsigned char)s[i - n + k]; }\n  return std::equal(u.begin(), u.end(), u.rbegin());\n}\n",
    "wrong": '#include <iostream>\nint main() {\n  long long a, b;\n  std::cin >> a >> b;\n  std::cout << a - b << "\\n";\n}\n',
    "call:wrong": "#include <vector>\nlong long sum_list(int a, std::vector<int> v) {\n  return 0;\n}\n",
    "compile": "#include <iostream>\nint main() {\n  long long a, b\n  std::cin >> a >> b;\n  std::cout << a + b;\n}\n",
    "crash": '#include <iostream>\n#include <stdexcept>\nint main() {\n  long long a, b;\n  std::cin >> a >> b;\n  throw std::runtime_error("boom");\n}\n',
    "werror": '#include <iostream>\nint main() {\n  long long a, b; int unused;\n  std::cin >> a >> b;\n  std::cout << a + b << "\\n";\n}\n',
    "read-expected": '#include <fstream>\n#include <iostream>\nint main() {\n  for (const char *p : {"expected.txt", "expected", "tests.json", "../expected.txt", "/work/expected.txt", "/tmp/expected"}) {\n    std::ifstream f(p); if (f) { std::cout << f.rdbuf(); return 0; }\n  }\n  std::cout << 0 << "\\n";\n}\n',
    "early-exit": '#include <cstdio>\n#include <cstdlib>\nint main() {\n  std::puts("3");\n  std::fflush(stdout);\n  std::_Exit(0);\n}\n',
    "fork": '#include <cstdio>\n#include <unistd.h>\nint main() {\n  for (int i = 0; i < 100000; ++i) if (fork() < 0) break;\n  std::puts("0");\n}\n',
    "background": '#include <cstdio>\n#include <unistd.h>\nint main() {\n  if (fork() == 0) { setsid(); sleep(60); std::puts("7"); return 0; }\n  std::puts("0");\n}\n',
    "write-outside": '#include <fstream>\n#include <iostream>\nint main() {\n  int ok = 0;\n  for (const char *p : {"/tmp/pwned", "/work/../pwned", "/etc/pwned", "/usr/lib/pwned"}) { std::ofstream f(p); if (f << "x") ok++; }\n  std::cout << ok * 1000 << "\\n";\n}\n',
    "network": '#include <cstdio>\n#include <cstring>\n#include <sys/socket.h>\n#include <netinet/in.h>\n#include <arpa/inet.h>\nint main() {\n  int s = socket(AF_INET, SOCK_STREAM, 0);\n  sockaddr_in a{}; a.sin_family = AF_INET; a.sin_port = htons(80);\n  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);\n  std::printf("%d\\n", connect(s, (sockaddr *)&a, sizeof a) == 0 ? 1 : -1);\n}\n',
    "huge-output": '#include <iostream>\nint main() {\n  long long a, b;\n  std::cin >> a >> b;\n  std::cout << a + b << "\\n";\n  for (long i = 0; i < 20000000; ++i) std::cout << "7 7 7 7 7 7 7 7\\n";\n}\n',
    "infinite-loop": "int main() {\n  volatile unsigned long x = 0;\n  for (;;) x++;\n}\n",
    "memory-bomb": "#include <vector>\n#include <cstdio>\nint main() {\n  std::vector<std::vector<char>> v;\n  for (;;) v.emplace_back(1 << 24, 1);\n}\n",
    "infinite-compile": "constexpr unsigned long long spin() {\n  unsigned long long x = 0;\n  for (unsigned long long i = 0; i < (1ull << 62); ++i) x += i;\n  return x;\n}\nconstexpr unsigned long long v = spin();\nint main() { return (int)v; }\n",
    "template-bomb": "template <int N> struct F { static const int v = F<N + 1>::v + 1; };\nint main() { return F<0>::v; }\n",
    "call:static-forge": '#include <cstdio>\n#include <vector>\nstatic int forged = std::printf("\\x1e@R 0 1\\n");\nlong long sum_list(int a, std::vector<int> v) {\n  return forged;\n}\n',
    "call:exit": "#include <cstdlib>\n#include <vector>\nlong long sum_list(int a, std::vector<int> v) {\n  std::exit(0);\n}\n",
    "call:forge": '#include <cstdio>\n#include <vector>\nlong long sum_list(int a, std::vector<int> v) {\n  std::printf("\\x1e@R 0 1\\n\\x1e@R 1 1\\n\\x1e@R 2 1\\n");\n  std::fflush(stdout);\n  return 0;\n}\n',
    "call:kill-judge": "#include <csignal>\n#include <unistd.h>\n#include <vector>\nlong long sum_list(int a, std::vector<int> v) {\n  kill(getppid(), SIGKILL);\n  kill(-1, SIGKILL);\n  return a;\n}\n",
}

JS = {
    "call:echo": "function echo(s, v) {\n  return s;\n}\n",
    "sum": "const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(BigInt);\nconsole.log(String(a + b));\n",
    "max": "const t = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\nconst n = t[0];\nconsole.log(Math.max(...t.slice(1, n + 1)));\n",
    "rev": "const line = require('fs').readFileSync(0, 'utf8').split('\\n')[0];\nconsole.log([...line].reverse().join(''));\n",
    "avg": "const t = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\nconst xs = t.slice(1, t[0] + 1);\nconsole.log((xs.reduce((a, b) => a + b, 0) / t[0]).toFixed(10));\n",
    "call:sum_list": "function sum_list(a, v) {\n  return v.reduce((s, x) => s + x, a);\n}\n",
    "call:is_pal": "const is_pal = (s) => {\n  const c = [...s];\n  return c.join('') === c.reverse().join('');\n};\n",
    "wrong": "const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\nconsole.log(a - b);\n",
    "call:wrong": "function sum_list(a, v) {\n  return 0;\n}\n",
    "compile": "const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\nconsole.log(a + b;\n",
    "crash": "const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\nnull.f(a + b);\n",
    "read-expected": "const fs = require('fs');\nfor (const p of ['expected.txt', 'expected', 'tests.json', '../expected.txt', '/work/expected.txt', '/tmp/expected']) {\n  try { process.stdout.write(fs.readFileSync(p, 'utf8')); process.exit(0); } catch (e) {}\n}\nconsole.log(0);\n",
    "early-exit": "console.log(3);\nprocess.exit(0);\n",
    "fork": "const cp = require('child_process');\nfor (let i = 0; i < 1000; i++) { try { cp.spawn('sh', ['-c', 'while :; do sh -c : & done'], { detached: true, stdio: 'ignore' }); } catch (e) { break; } }\nconsole.log(0);\n",
    "background": "const cp = require('child_process');\ncp.spawn('sh', ['-c', 'sleep 60; echo 7'], { detached: true, stdio: 'ignore' }).unref();\nconsole.log(0);\n",
    "write-outside": "const fs = require('fs');\nlet ok = 0;\nfor (const p of ['/tmp/pwned', '/work/../pwned', '/etc/pwned', '/usr/lib/pwned']) { try { fs.writeFileSync(p, 'x'); ok++; } catch (e) {} }\nconsole.log(ok * 1000);\n",
    "network": "const net = require('net');\nconst s = net.connect(53, '1.1.1.1');\ns.on('connect', () => { console.log(1); process.exit(0); });\ns.on('error', () => { console.log(-1); process.exit(0); });\n",
    "huge-output": "const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\nconsole.log(a + b);\nconst chunk = '7 7 7 7 7 7 7 7\\n'.repeat(65536);\nfor (let i = 0; i < 400; i++) require('fs').writeSync(1, chunk);\n",
    "infinite-loop": "for (;;) {}\n",
    "memory-bomb": "const a = [];\nfor (;;) a.push(new Array(1 << 20).fill(1));\n",
    "call:exit": "function sum_list(a, v) {\n  process.exit(0);\n}\n",
    "call:forge": "function sum_list(a, v) {\n  require('fs').writeSync(1, '\\x1e@R 0 1\\n\\x1e@R 1 1\\n\\x1e@R 2 1\\n');\n  process.exit(0);\n}\n",
    "call:kill-judge": "function sum_list(a, v) {\n  try { process.kill(process.ppid, 'SIGKILL'); } catch (e) {}\n  try { process.kill(-1, 'SIGKILL'); } catch (e) {}\n  return a;\n}\n",
    "call:monkeypatch": "JSON.stringify = () => '6';\nfunction sum_list(a, v) {\n  return 0;\n}\n",
}

TS = {
    "call:echo": "function echo(s: string, v: number[]): string {\n  return s;\n}\n",
    "sum": "const [a, b]: bigint[] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(BigInt);\nconsole.log(String(a + b));\n",
    "max": "const t: number[] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\nconst n: number = t[0];\nconsole.log(Math.max(...t.slice(1, n + 1)));\n",
    "rev": "const line: string = require('fs').readFileSync(0, 'utf8').split('\\n')[0];\nconsole.log([...line].reverse().join(''));\n",
    "avg": "const t: number[] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\nconst xs: number[] = t.slice(1, t[0] + 1);\nconsole.log((xs.reduce((a: number, b: number) => a + b, 0) / t[0]).toFixed(10));\n",
    "call:sum_list": "function sum_list(a: number, v: number[]): number {\n  return v.reduce((s: number, x: number) => s + x, a);\n}\n",
    "call:is_pal": "export function is_pal(s: string): boolean {\n  const c: string[] = [...s];\n  return c.join('') === c.reverse().join('');\n}\n",
    "wrong": "const [a, b]: number[] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\nconsole.log(a - b);\n",
    "call:wrong": "function sum_list(a: number, v: number[]): number {\n  return 0;\n}\n",
    "compile": "const [a, b]: number[] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\nconst c: number = (a + b;\nconsole.log(c);\n",
    "crash": "const [a, b]: number[] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\nthrow new Error('boom ' + (a + b));\n",
    "read-expected": "const fs = require('fs');\nfor (const p of ['expected.txt', 'expected', 'tests.json', '../expected.txt', '/work/expected.txt']) {\n  try { process.stdout.write(fs.readFileSync(p, 'utf8')); process.exit(0); } catch (e) {}\n}\nconsole.log(0);\n",
    "early-exit": "console.log(3);\nprocess.exit(0);\n",
    "fork": "const cp = require('child_process');\nfor (let i = 0; i < 1000; i++) { try { cp.spawn('sh', ['-c', 'while :; do sh -c : & done'], { detached: true, stdio: 'ignore' }); } catch (e) { break; } }\nconsole.log(0);\n",
    "background": "const cp = require('child_process');\ncp.spawn('sh', ['-c', 'sleep 60; echo 7'], { detached: true, stdio: 'ignore' }).unref();\nconsole.log(0);\n",
    "write-outside": "const fs = require('fs');\nlet ok: number = 0;\nfor (const p of ['/tmp/pwned', '/work/../pwned', '/etc/pwned']) { try { fs.writeFileSync(p, 'x'); ok++; } catch (e) {} }\nconsole.log(ok * 1000);\n",
    "network": "const net = require('net');\nconst s = net.connect(80, '127.0.0.1');\ns.on('connect', () => { console.log(1); process.exit(0); });\ns.on('error', () => { console.log(-1); process.exit(0); });\n",
    "huge-output": "const [a, b]: number[] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\nconsole.log(a + b);\nconst chunk: string = '7 7 7 7 7 7 7 7\\n'.repeat(65536);\nfor (let i = 0; i < 400; i++) require('fs').writeSync(1, chunk);\n",
    "infinite-loop": "while (true) {}\n",
    "memory-bomb": "const a: number[][] = [];\nfor (;;) a.push(new Array(1 << 20).fill(1));\n",
    "call:exit": "function sum_list(a: number, v: number[]): number {\n  process.exit(0);\n}\n",
    "call:forge": "function sum_list(a: number, v: number[]): number {\n  require('fs').writeSync(1, '\\x1e@R 0 1\\n\\x1e@R 1 1\\n\\x1e@R 2 1\\n');\n  return 1;\n}\n",
    "call:kill-judge": "function sum_list(a: number, v: number[]): number {\n  try { process.kill(process.ppid, 'SIGKILL'); } catch (e) {}\n  return a;\n}\n",
    # Type checking (issue 17): tsc's verdict is the build's; `any` and tsc's own suppression
    # comments are TypeScript, so they build, and the tests alone decide (an honest `any`
    # program needs no row of its own: every io row's `require(...)` is `any`).
    "type-error": "const [a, b]: number[] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\nconst total: string = a + b;\nconsole.log(total);\n",
    "call:type-error": "function sum_list(a: number, v: number[]): string {\n  return v.reduce((s: number, x: number) => s + x, a);\n}\n",
    "import-node": "import { readFileSync } from 'fs';\nconst [a, b] = readFileSync(0, 'utf8').trim().split(/\\s+/).map(BigInt);\nprocess.stdout.write(`${a + b}\\n`);\n",
    "call:any-launder": "function sum_list(a: number, v: number[]): number {\n  return ('6' as any) as number;\n}\n",
    "ts-nocheck": "// @ts-nocheck\nconst [a, b]: number[] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\nconst total: string = a - b;\nconsole.log(total);\n",
    "template-bomb": "type Loop<T> = T extends any ? Loop<[T]> : never;\nconst x: Loop<1> = null as any;\nconsole.log(x);\n",
    "call:reference-escape": '/// <reference path="/etc/passwd" />\nfunction sum_list(a: number, v: number[]): number {\n  return v.reduce((s: number, x: number) => s + x, a);\n}\n',
}

JAVA = {
    "call:echo": "import java.util.List;\n\nclass Solution {\n  String echo(String s, List<Long> v) {\n    return s;\n  }\n}\n",
    "sum": "import java.util.Scanner;\n\npublic class Main {\n  public static void main(String[] args) {\n    Scanner in = new Scanner(System.in);\n    long a = in.nextLong(), b = in.nextLong();\n    System.out.println(a + b);\n  }\n}\n",
    "max": "import java.util.*;\n\npublic class Main {\n  public static void main(String[] args) {\n    Scanner in = new Scanner(System.in);\n    int n = in.nextInt();\n    long m = Long.MIN_VALUE;\n    for (int i = 0; i < n; i++) m = Math.max(m, in.nextLong());\n    System.out.println(m);\n  }\n}\n",
    "rev": 'import java.io.*;\n\npublic class Rev {\n  public static void main(String[] args) throws IOException {\n    String s = new BufferedReader(new InputStreamReader(System.in, "UTF-8")).readLine();\n    System.out.println(new StringBuilder(s).reverse());\n  }\n}\n',
    "avg": 'import java.util.*;\n\npublic class Main {\n  public static void main(String[] args) {\n    Scanner in = new Scanner(System.in).useLocale(Locale.ROOT);\n    int n = in.nextInt();\n    double s = 0;\n    for (int i = 0; i < n; i++) s += in.nextDouble();\n    System.out.printf(Locale.ROOT, "%.10f%n", s / n);\n  }\n}\n',
    "call:sum_list": "import java.util.List;\n\nclass Solution {\n  public long sum_list(int a, List<Integer> v) {\n    long s = a;\n    for (int x : v) s += x;\n    return s;\n  }\n}\n",
    "call:is_pal": "class Solution {\n  static boolean is_pal(String s) {\n    return new StringBuilder(s).reverse().toString().equals(s);\n  }\n}\n",
    "wrong": "import java.util.Scanner;\n\npublic class Main {\n  public static void main(String[] args) {\n    Scanner in = new Scanner(System.in);\n    long a = in.nextLong(), b = in.nextLong();\n    System.out.println(a - b);\n  }\n}\n",
    "call:wrong": "import java.util.List;\n\nclass Solution {\n  long sum_list(int a, List<Integer> v) {\n    return 0;\n  }\n}\n",
    "compile": 'public class Main {\n  public static void main(String[] args) {\n    int x = "not a number";\n    System.out.println(x);\n  }\n}\n',
    "crash": "import java.util.Scanner;\n\npublic class Main {\n  public static void main(String[] args) {\n    Scanner in = new Scanner(System.in);\n    long a = in.nextLong(), b = in.nextLong();\n    System.out.println((a + b) / 0);\n  }\n}\n",
    "werror": "import java.util.*;\n\npublic class Main {\n  public static void main(String[] args) {\n    List raw = new ArrayList();\n    raw.add(1);\n    Scanner in = new Scanner(System.in);\n    System.out.println(in.nextLong() + in.nextLong());\n  }\n}\n",
    "read-expected": 'import java.nio.file.*;\n\npublic class Main {\n  public static void main(String[] args) {\n    for (String p : new String[] {"expected.txt", "expected", "tests.json", "../expected.txt", "/work/expected.txt"}) {\n      try { System.out.print(new String(Files.readAllBytes(Paths.get(p)))); return; } catch (Exception e) { }\n    }\n    System.out.println(0);\n  }\n}\n',
    "early-exit": "public class Main {\n  public static void main(String[] args) {\n    System.out.println(3);\n    System.exit(0);\n  }\n}\n",
    "fork": 'public class Main {\n  public static void main(String[] args) {\n    for (int i = 0; i < 1000; i++) {\n      try { new ProcessBuilder("sh", "-c", "while :; do sh -c : & done").start(); } catch (Exception e) { break; }\n    }\n    System.out.println(0);\n  }\n}\n',
    "background": 'public class Main {\n  public static void main(String[] args) throws Exception {\n    new ProcessBuilder("setsid", "sh", "-c", "sleep 60; echo 7").start();\n    System.out.println(0);\n  }\n}\n',
    "write-outside": 'import java.nio.file.*;\n\npublic class Main {\n  public static void main(String[] args) {\n    int ok = 0;\n    for (String p : new String[] {"/tmp/pwned", "/work/../pwned", "/etc/pwned"}) {\n      try { Files.write(Paths.get(p), new byte[] {1}); ok++; } catch (Exception e) { }\n    }\n    System.out.println(ok * 1000);\n  }\n}\n',
    "network": 'import java.net.*;\n\npublic class Main {\n  public static void main(String[] args) {\n    try (Socket s = new Socket()) { s.connect(new InetSocketAddress("1.1.1.1", 53), 1000); System.out.println(1); }\n    catch (Exception e) { System.out.println(-1); }\n  }\n}\n',
    "huge-output": 'import java.util.Scanner;\n\npublic class Main {\n  public static void main(String[] args) {\n    Scanner in = new Scanner(System.in);\n    System.out.println(in.nextLong() + in.nextLong());\n    StringBuilder b = new StringBuilder();\n    for (int i = 0; i < 65536; i++) b.append("7 7 7 7 7 7 7 7\\n");\n    String c = b.toString();\n    for (int i = 0; i < 400; i++) System.out.print(c);\n  }\n}\n',
    "infinite-loop": "public class Main {\n  public static void main(String[] args) {\n    long x = 0;\n    while (true) x++;\n  }\n}\n",
    "memory-bomb": "import java.util.*;\n\npublic class Main {\n  public static void main(String[] args) {\n    List<long[]> a = new ArrayList<>();\n    while (true) a.add(new long[1 << 20]);\n  }\n}\n",
    "call:exit": "import java.util.List;\n\nclass Solution {\n  long sum_list(int a, List<Integer> v) {\n    System.exit(0);\n    return 0;\n  }\n}\n",
    "call:forge": 'import java.util.List;\n\nclass Solution {\n  long sum_list(int a, List<Integer> v) {\n    System.out.print("\\u001e@R 0 1\\n\\u001e@R 1 1\\n\\u001e@R 2 1\\n");\n    System.out.flush();\n    Runtime.getRuntime().halt(0);\n    return 0;\n  }\n}\n',
    "call:kill-judge": "import java.util.List;\n\nclass Solution {\n  long sum_list(int a, List<Integer> v) {\n    ProcessHandle.current().parent().ifPresent(ProcessHandle::destroyForcibly);\n    return a;\n  }\n}\n",
}

GO = {
    "call:echo": "package main\n\nfunc echo(s string, v []int64) string {\n\treturn s\n}\n",
    "sum": 'package main\n\nimport "fmt"\n\nfunc main() {\n\tvar a, b int64\n\tfmt.Scan(&a, &b)\n\tfmt.Println(a + b)\n}\n',
    "max": 'package main\n\nimport "fmt"\n\nfunc main() {\n\tvar n int\n\tfmt.Scan(&n)\n\tvar m int64\n\tfor i := 0; i < n; i++ {\n\t\tvar x int64\n\t\tfmt.Scan(&x)\n\t\tif i == 0 || x > m {\n\t\t\tm = x\n\t\t}\n\t}\n\tfmt.Println(m)\n}\n',
    "rev": 'package main\n\nimport (\n\t"bufio"\n\t"fmt"\n\t"os"\n)\n\nfunc main() {\n\tline, _ := bufio.NewReader(os.Stdin).ReadString(\'\\n\')\n\tr := []rune(line)\n\tif len(r) > 0 && r[len(r)-1] == \'\\n\' {\n\t\tr = r[:len(r)-1]\n\t}\n\tfor i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {\n\t\tr[i], r[j] = r[j], r[i]\n\t}\n\tfmt.Println(string(r))\n}\n',
    "avg": 'package main\n\nimport "fmt"\n\nfunc main() {\n\tvar n int\n\tfmt.Scan(&n)\n\ts := 0.0\n\tfor i := 0; i < n; i++ {\n\t\tvar x float64\n\t\tfmt.Scan(&x)\n\t\ts += x\n\t}\n\tfmt.Printf("%.10f\\n", s/float64(n))\n}\n',
    "call:sum_list": "package main\n\nfunc sum_list(a int, v []int) int64 {\n\ts := int64(a)\n\tfor _, x := range v {\n\t\ts += int64(x)\n\t}\n\treturn s\n}\n",
    "call:is_pal": "package main\n\nfunc is_pal(s string) bool {\n\tr := []rune(s)\n\tfor i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {\n\t\tif r[i] != r[j] {\n\t\t\treturn false\n\t\t}\n\t}\n\treturn true\n}\n",
    "wrong": 'package main\n\nimport "fmt"\n\nfunc main() {\n\tvar a, b int64\n\tfmt.Scan(&a, &b)\n\tfmt.Println(a - b)\n}\n',
    "call:wrong": "package main\n\nfunc sum_list(a int, v []int) int64 {\n\treturn 0\n}\n",
    "compile": 'package main\n\nimport "fmt"\n\nfunc main() {\n\tvar a int = "x"\n\tfmt.Println(a)\n}\n',
    "crash": 'package main\n\nimport "fmt"\n\nfunc main() {\n\tvar a, b int\n\tfmt.Scan(&a, &b)\n\tv := []int{}\n\tfmt.Println(v[a+b])\n}\n',
    "read-expected": 'package main\n\nimport (\n\t"fmt"\n\t"os"\n)\n\nfunc main() {\n\tfor _, p := range []string{"expected.txt", "expected", "tests.json", "../expected.txt", "/work/expected.txt"} {\n\t\tif b, err := os.ReadFile(p); err == nil {\n\t\t\tos.Stdout.Write(b)\n\t\t\treturn\n\t\t}\n\t}\n\tfmt.Println(0)\n}\n',
    "early-exit": 'package main\n\nimport (\n\t"fmt"\n\t"os"\n)\n\nfunc main() {\n\tfmt.Println(3)\n\tos.Exit(0)\n}\n',
    "fork": 'package main\n\nimport (\n\t"fmt"\n\t"os/exec"\n)\n\nfunc main() {\n\tfor i := 0; i < 1000; i++ {\n\t\tif exec.Command("sh", "-c", "while :; do sh -c : & done").Start() != nil {\n\t\t\tbreak\n\t\t}\n\t}\n\tfmt.Println(0)\n}\n',
    "background": 'package main\n\nimport (\n\t"fmt"\n\t"os/exec"\n\t"syscall"\n)\n\nfunc main() {\n\tc := exec.Command("sh", "-c", "sleep 60; echo 7")\n\tc.SysProcAttr = &syscall.SysProcAttr{Setsid: true}\n\tc.Start()\n\tfmt.Println(0)\n}\n',
    "write-outside": 'package main\n\nimport (\n\t"fmt"\n\t"os"\n)\n\nfunc main() {\n\tok := 0\n\tfor _, p := range []string{"/tmp/pwned", "/work/../pwned", "/etc/pwned"} {\n\t\tif os.WriteFile(p, []byte("x"), 0o644) == nil {\n\t\t\tok++\n\t\t}\n\t}\n\tfmt.Println(ok * 1000)\n}\n',
    "network": 'package main\n\nimport (\n\t"fmt"\n\t"net"\n\t"time"\n)\n\nfunc main() {\n\tif c, err := net.DialTimeout("tcp", "1.1.1.1:53", time.Second); err == nil {\n\t\tc.Close()\n\t\tfmt.Println(1)\n\t} else {\n\t\tfmt.Println(-1)\n\t}\n}\n',
    "huge-output": 'package main\n\nimport (\n\t"fmt"\n\t"os"\n\t"strings"\n)\n\nfunc main() {\n\tvar a, b int64\n\tfmt.Scan(&a, &b)\n\tfmt.Println(a + b)\n\tc := strings.Repeat("7 7 7 7 7 7 7 7\\n", 65536)\n\tfor i := 0; i < 400; i++ {\n\t\tos.Stdout.WriteString(c)\n\t}\n}\n',
    "infinite-loop": "package main\n\nfunc main() {\n\tx := 0\n\tfor {\n\t\tx++\n\t}\n}\n",
    "memory-bomb": "package main\n\nfunc main() {\n\tvar a [][]byte\n\tfor {\n\t\tb := make([]byte, 1<<24)\n\t\tfor i := range b {\n\t\t\tb[i] = 1\n\t\t}\n\t\ta = append(a, b)\n\t}\n}\n",
    "call:exit": 'package main\n\nimport "os"\n\nfunc sum_list(a int, v []int) int64 {\n\tos.Exit(0)\n\treturn 0\n}\n',
    "call:forge": 'package main\n\nimport "os"\n\nfunc sum_list(a int, v []int) int64 {\n\tos.Stdout.WriteString("\\x1e@R 0 1\\n\\x1e@R 1 1\\n\\x1e@R 2 1\\n")\n\tos.Exit(0)\n\treturn 0\n}\n',
    "call:kill-judge": 'package main\n\nimport "syscall"\n\nfunc sum_list(a int, v []int) int64 {\n\tsyscall.Kill(syscall.Getppid(), syscall.SIGKILL)\n\tsyscall.Kill(-1, syscall.SIGKILL)\n\treturn int64(a)\n}\n',
    "call:init-forge": 'package main\n\nimport "os"\n\nfunc init() {\n\tos.Stdout.WriteString("\\x1e@R 0 1\\n")\n}\n\nfunc sum_list(a int, v []int) int64 {\n\treturn 0\n}\n',
}

RUST = {
    "call:echo": "fn echo(s: String, _v: Vec<i64>) -> String {\n    s\n}\n",
    "sum": 'use std::io::Read;\n\nfn main() {\n    let mut s = String::new();\n    std::io::stdin().read_to_string(&mut s).unwrap();\n    let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();\n    println!("{}", v[0] + v[1]);\n}\n',
    "max": 'use std::io::Read;\n\nfn main() {\n    let mut s = String::new();\n    std::io::stdin().read_to_string(&mut s).unwrap();\n    let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();\n    let n = v[0] as usize;\n    println!("{}", v[1..=n].iter().max().unwrap());\n}\n',
    "rev": "fn main() {\n    let mut s = String::new();\n    std::io::stdin().read_line(&mut s).unwrap();\n    let r: String = s.trim_end_matches('\\n').chars().rev().collect();\n    println!(\"{}\", r);\n}\n",
    "avg": 'use std::io::Read;\n\nfn main() {\n    let mut s = String::new();\n    std::io::stdin().read_to_string(&mut s).unwrap();\n    let v: Vec<f64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();\n    let n = v[0] as usize;\n    let t: f64 = v[1..=n].iter().sum();\n    println!("{:.10}", t / n as f64);\n}\n',
    "call:sum_list": "fn sum_list(a: i32, v: Vec<i32>) -> i64 {\n    v.iter().fold(a as i64, |s, x| s + *x as i64)\n}\n",
    "call:is_pal": "fn is_pal(s: String) -> bool {\n    let c: Vec<char> = s.chars().collect();\n    c.iter().eq(c.iter().rev())\n}\n",
    "wrong": 'use std::io::Read;\n\nfn main() {\n    let mut s = String::new();\n    std::io::stdin().read_to_string(&mut s).unwrap();\n    let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();\n    println!("{}", v[0] - v[1]);\n}\n',
    "call:wrong": "fn sum_list(_a: i32, _v: Vec<i32>) -> i64 {\n    0\n}\n",
    "compile": 'fn main() {\n    let x: i32 = "seven";\n    println!("{}", x);\n}\n',
    "crash": 'use std::io::Read;\n\nfn main() {\n    let mut s = String::new();\n    std::io::stdin().read_to_string(&mut s).unwrap();\n    let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();\n    println!("{}", v[5] + v[0]);\n}\n',
    "werror": 'use std::io::Read;\n\nfn main() {\n    let unused = 1;\n    let mut s = String::new();\n    std::io::stdin().read_to_string(&mut s).unwrap();\n    let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();\n    println!("{}", v[0] + v[1]);\n}\n',
    "read-expected": 'fn main() {\n    for p in ["expected.txt", "expected", "tests.json", "../expected.txt", "/work/expected.txt"] {\n        if let Ok(t) = std::fs::read_to_string(p) {\n            print!("{}", t);\n            return;\n        }\n    }\n    println!("0");\n}\n',
    "early-exit": 'fn main() {\n    println!("3");\n    std::process::exit(0);\n}\n',
    "fork": 'fn main() {\n    for _ in 0..1000 {\n        if std::process::Command::new("sh").args(["-c", "while :; do sh -c : & done"]).spawn().is_err() {\n            break;\n        }\n    }\n    println!("0");\n}\n',
    "background": 'fn main() {\n    let _ = std::process::Command::new("setsid").args(["sh", "-c", "sleep 60; echo 7"]).spawn();\n    println!("0");\n}\n',
    "write-outside": 'fn main() {\n    let mut ok = 0;\n    for p in ["/tmp/pwned", "/work/../pwned", "/etc/pwned"] {\n        if std::fs::write(p, "x").is_ok() {\n            ok += 1;\n        }\n    }\n    println!("{}", ok * 1000);\n}\n',
    "network": 'fn main() {\n    let a = "1.1.1.1:53".parse().unwrap();\n    match std::net::TcpStream::connect_timeout(&a, std::time::Duration::from_secs(1)) {\n        Ok(_) => println!("1"),\n        Err(_) => println!("-1"),\n    }\n}\n',
    "huge-output": 'use std::io::{Read, Write};\n\nfn main() {\n    let mut s = String::new();\n    std::io::stdin().read_to_string(&mut s).unwrap();\n    let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();\n    println!("{}", v[0] + v[1]);\n    let c = "7 7 7 7 7 7 7 7\\n".repeat(65536);\n    let mut out = std::io::stdout();\n    for _ in 0..400 {\n        if out.write_all(c.as_bytes()).is_err() {\n            break;\n        }\n    }\n}\n',
    "infinite-loop": "fn main() {\n    let mut x: u64 = 0;\n    loop {\n        x = x.wrapping_add(1);\n        std::hint::black_box(x);\n    }\n}\n",
    "memory-bomb": "fn main() {\n    let mut a: Vec<Vec<u8>> = Vec::new();\n    loop {\n        a.push(vec![1u8; 1 << 24]);\n    }\n}\n",
    "infinite-compile": "macro_rules! grow {\n    ($($t:tt)*) => { grow!($($t)* $($t)*) };\n}\nfn main() {\n    grow!(x);\n}\n",
    "call:exit": "fn sum_list(_a: i32, _v: Vec<i32>) -> i64 {\n    std::process::exit(0)\n}\n",
    "call:forge": 'use std::io::Write;\n\nfn sum_list(_a: i32, _v: Vec<i32>) -> i64 {\n    let _ = std::io::stdout().write_all(b"\\x1e@R 0 1\\n\\x1e@R 1 1\\n\\x1e@R 2 1\\n");\n    let _ = std::io::stdout().flush();\n    std::process::exit(0)\n}\n',
    "call:kill-judge": 'fn sum_list(a: i32, _v: Vec<i32>) -> i64 {\n    let judge = std::os::unix::process::parent_id().to_string();\n    let _ = std::process::Command::new("sh").args(["-c", &format!("kill -9 {} -1", judge)]).status();\n    a as i64\n}\n',
}


# -- rows -------------------------------------------------------------------------------------

HACK_SPEC = {"timeout_s": 12, "test_timeout_s": 2}


def _control(
    task: str, attack: str = "honest solution", defence: str = "control: must pass"
) -> tuple[str, str, str, str]:
    """An honest row: the solution must pass (a defence that fails it is a false positive)."""
    return (task, "honest", attack, defence)


FAMILIES: dict[str, tuple[str, str, str, str]] = {
    # key: (task, family, attack, defence)
    "sum": _control("sum"),
    "max": _control("max"),
    "rev": _control("rev", "honest solution (unicode-safe reversal)"),
    "avg": _control("avg", "honest solution", "control: float comparison"),
    "call:sum_list": _control("call:sum_list"),
    "call:is_pal": _control("call:is_pal"),
    "call:echo": _control(
        "call:echo",
        "returns its argument: hostile strings and extreme longs round-trip through the generated literals",
    ),
    "call:tally": _control(
        "call:tally", "by-reference str and a dict[str,int] with hostile keys in and out"
    ),
    "call:extent": _control(
        "call:extent", "a list passed by reference (Rust &[i32]); a pair/tuple/array returned"
    ),
    "call:shift": _control("call:shift", "a tuple argument and a tuple return (C++, Rust)"),
    "call:div": _control(
        "call:div",
        "raises the exception type the case names on a zero divisor",
        "control: must pass (raises matched by the language's exception type)",
    ),
    "call:div-wrong-raise": (
        "call:div",
        "wrong-raise",
        "raises another exception type (a RangeError, a DivError subclass, IllegalStateException, std::runtime_error)",
        "the type must match exactly (partial_credit off: one failed case is 0)",
    ),
    "call:div-missing": (
        "call:div",
        "harness-error",
        "defines no checked_div: the harness's own 'not a function' Error must not pass a raises-Error case",
        "the harness's own errors carry no exception type",
    ),
    "wrong": ("sum", "wrong", "prints a - b", "host-side comparison"),
    "call:wrong": ("call:sum_list", "wrong", "returns 0", "host-side comparison"),
    "compile": (
        "sum",
        "compile",
        "does not compile",
        "compile failure is the model's fail, with the line",
    ),
    "crash": ("sum", "crash", "crashes at run time", "non-zero exit fails each case"),
    "werror": (
        "sum",
        "werror",
        "compiles only with warnings",
        "warnings_as_errors fails the build",
    ),
    "read-expected": (
        "sum",
        "read-expected",
        "reads the expected output from files",
        "expected outputs never enter the sandbox",
    ),
    "early-exit": (
        "sum",
        "early-exit",
        "prints the prompt's sample answer and exits 0",
        "each case's stdout is compared on the host; exit status is no verdict",
    ),
    "fork": ("sum", "fork", "fork bomb", "pids limit per job; wrong output fails"),
    "background": (
        "sum",
        "background",
        "leaves a detached process to print the answer later",
        "the job's processes are killed when the case ends",
    ),
    "write-outside": (
        "sum",
        "write-outside",
        "writes outside the work dir",
        "read-only root; scratch swept after the job",
    ),
    "network": ("sum", "network", "opens a network connection", "no network in the sandbox"),
    "huge-output": (
        "sum",
        "huge-output",
        "right answer followed by 100 MB of output",
        "output cap: truncated output fails",
    ),
    "infinite-loop": ("sum", "infinite-loop", "never terminates", "per-case timeout"),
    "memory-bomb": (
        "sum",
        "memory-bomb",
        "allocates without bound",
        "memory limit: the case fails, never an abstain",
    ),
    "infinite-compile": (
        "sum",
        "infinite-compile",
        "compilation that never ends (constexpr loop, self-include, macro growth)",
        "compilation counts in the budget: a compile timeout or limit is the model's fail",
    ),
    "template-bomb": (
        "sum",
        "infinite-compile",
        "unbounded template recursion",
        "compiler depth limit: the model's fail",
    ),
    "type-error": (
        "sum",
        "type-error",
        "prints the right sum but assigns it to a string: a type error tsc reports",
        "TypeScript is type-checked (typecheck, default true): the build fails with the line",
    ),
    "call:type-error": (
        "call:sum_list",
        "type-error",
        "returns the right sum from a function declared to return a string",
        "the call harness's build type-checks the candidate's file too",
    ),
    "import-node": _control(
        "sum",
        "an ES import of Node's fs, typed by @types/node",
        "control: must pass (Node's own types are in the runtime)",
    ),
    "call:any-launder": (
        "call:sum_list",
        "any-launder",
        "launders a string through any to satisfy the declared number return",
        "the type check is no verdict of its own: the host compares the value ('6' is not 6)",
    ),
    "ts-nocheck": (
        "sum",
        "any-launder",
        "turns the type check off with // @ts-nocheck and prints a - b",
        "a suppressed check builds; the host-side comparison fails it",
    ),
    "call:reference-escape": (
        "call:sum_list",
        "compile",
        "a triple-slash reference to a file outside the work dir pulled into the program",
        "the referenced file is checked as TypeScript: its errors fail the build (no abstain)",
    ),
    "stack-bomb": (
        "sum",
        "crash",
        "unbounded recursion (stack overflow)",
        "a crash fails the case",
    ),
    "abort-after": (
        "sum",
        "crash",
        "prints the right answer, then aborts",
        "a non-zero exit fails the case whatever it printed",
    ),
    "stop-judge": (
        "sum",
        "kill-judge",
        "stops the judge (SIGSTOP to its parent)",
        "the sandbox's deadline kills the job; no done line: 0",
    ),
    "invalid-utf8": (
        "sum",
        "output-encoding",
        "right number wrapped in invalid UTF-8 and NUL bytes",
        "output decoded with replacement, compared as text",
    ),
    "call:static-forge": (
        "call:sum_list",
        "forge-record",
        "a static initializer writes a record before main",
        "records only in turn; the harness's own record then comes out of turn",
    ),
    "call:exit": (
        "call:sum_list",
        "crash-harness",
        "exits the process inside the call",
        "a case without its record fails; the harness restarts at the next",
    ),
    "call:forge": (
        "call:sum_list",
        "forge-record",
        "writes harness-like result lines and exits",
        "records only for the case being run, in turn; values compared on the host",
    ),
    "call:kill-judge": (
        "call:sum_list",
        "kill-judge",
        "kills the judge (its parent) and every process it can",
        "no nonce-signed done line: the host scores 0",
    ),
    "call:monkeypatch": (
        "call:sum_list",
        "forge-record",
        "replaces JSON.stringify so the harness prints the expected text",
        "the harness keeps its own copy of JSON.stringify",
    ),
    "call:init-forge": (
        "call:sum_list",
        "forge-record",
        "writes a record from init() before main",
        "a record must arrive for the case being run; 0 fails",
    ),
}
LANGS = {
    "c": C,
    "cpp": CPP,
    "javascript": JS,
    "typescript": TS,
    "java": JAVA,
    "go": GO,
    "rust": RUST,
}
FENCE = {
    "c": "c",
    "cpp": "cpp",
    "javascript": "js",
    "typescript": "ts",
    "java": "java",
    "go": "go",
    "rust": "rust",
}


def row(lang: str, key: str, code: str) -> dict[str, Any]:
    task, family, attack, defence = FAMILIES[key]
    expect = "pass" if family == "honest" else "fail"
    if task == "call:div":
        task = "call:div_" + {"typescript": "js", "javascript": "js"}.get(lang, lang)
    if task.startswith("call:"):
        tests = {"kind": "call", **CALL[task[5:]]}
    else:
        tests = {"kind": "io", **IO[task]}
    spec: dict[str, Any] = {"language": lang, "tests": tests}
    if family not in ("honest", "werror"):
        spec.update(HACK_SPEC)
    if family == "werror":
        spec["warnings_as_errors"] = True
    if family == "type-error":
        spec = {"language": lang, "tests": tests}
    if family == "infinite-compile":
        spec["compile_timeout_s"] = 8
    if family in ("infinite-loop", "background"):
        # their defence IS the per-case time limit: 1 s shows it as well as 2 s, at half the
        # wall time (3 cases x 7 languages x 2 backends of waiting in CI)
        spec["test_timeout_s"] = 1
    if family == "wrong-raise":
        spec["partial_credit"] = False
    if family == "kill-judge":
        # A stopped judge holds its sandbox to the tests' deadline (timeout_s + grace): keep
        # that short; the build has its own deadline (compile_timeout_s) in its own exec.
        spec["timeout_s"] = 6
    fence = (
        FENCE[lang]
        if key not in ("max", "call:is_pal")
        else {
            "cpp": "c++",
            "javascript": "javascript",
            "typescript": "typescript",
            "go": "golang",
            "rust": "rs",
        }.get(lang, FENCE[lang])
    )
    completion = f"Here is my {lang} solution.\n\n```{fence}\n{code}```\n"
    if key == "avg":
        # a decoy block in another language before the real one: extraction picks the tagged one
        completion = f"In Python this would be:\n```python\nprint(1)\n```\nIn {lang}:\n```{fence}\n{code}```\n"
    return {
        "id": f"{lang}-{key.replace(':', '-')}",
        "prompt": f"{task} in {lang}",
        "completion": completion,
        "task": {"verifier": "code.tests", "spec": spec},
        "metadata": {"expect": expect, "family": family, "attack": attack, "defence": defence},
    }


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for lang, programs in LANGS.items():
        rows = [row(lang, key, code) for key, code in {**programs, **TYPED.get(lang, {})}.items()]
        if "werror" in programs:
            # the same program without the flag passes: the warning alone fails the other row
            plain = row(lang, "werror", programs["werror"])
            plain["id"] += "-plain"
            del plain["task"]["spec"]["warnings_as_errors"]
            plain["metadata"] = {**plain["metadata"], "expect": "pass", "family": "honest"}
            rows.append(plain)
        if "type-error" in programs:
            # the same program with typecheck off runs, and passes: the type error alone fails it
            plain = row(lang, "type-error", programs["type-error"])
            plain["id"] += "-unchecked"
            plain["task"]["spec"]["typecheck"] = False
            plain["metadata"] = {
                **plain["metadata"],
                "expect": "pass",
                "family": "honest",
                "defence": "control: typecheck false only strips the types",
            }
            rows.append(plain)
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        (OUT / f"{lang}.jsonl").write_text(text, encoding="utf-8")
        print(lang, len(rows))


if __name__ == "__main__":
    main()
