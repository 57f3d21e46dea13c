#!/usr/bin/env python3
"""Holds docs/cli.md to what the built `frugal` shows in --help, and to the contract CLI.md.

Read from docs/cli.md: its command table (`| command | ...`: the first cell's `frugal CMD ...` and
the options in both cells), its option tables (`| option | ...` under a heading naming
`frugal CMD`: the options in both cells), code spans elsewhere that start with `frugal ` (a command
and its options), `frugal.NAME(...)`/`import frugal` (the Python package: names, keywords, and in a
"Python" section the members of the class last named) and `make TARGET`; and the **Not built yet**
table (`| what | kind | issue |`, kind one of command, option, value, python, make, behaviour). An
option in that table without a command (`--tta`) means: on no command.
What is built: `frugal --help` (commands; a command whose help names `frugal CMD SUB` has
sub-commands, e.g. bench loader), `frugal CMD --help` (its options), `frugal --OPT` exiting 0 (the
top-level --help, --version); python/frugal/__init__.py read as source (top-level names, their
keywords, class members); the Makefile's rules.

Fails, naming each item and the line of the document, when
  (a) something in the "Not built yet" table is built (a `value` row's option must itself be
      built: only its value form is not);
  (b) docs/cli.md documents as built a command, option, Python name or make target that is not
      built and not in the "Not built yet" table;
  (c) a command, option, Python name or make target of CLI.md (when found: --contract, default
      ../shared/CLI.md beside the checkout) is neither documented in docs/cli.md nor in its
      "Not built yet" table;
  and a "Not built yet" row without an issue number, with an unknown kind, or whose code spans
  are not of its kind. Options in --help that neither document names are printed as notes.

Usage: check_cli_doc.py BIN_DIR [--root DIR] [--contract CLI.md]
       check_cli_doc.py --self-test   (fake documents and help text that break each rule)
Run by ctest as house.cli_doc and house.cli_doc_self_test (tests/CMakeLists.txt).
"""
import argparse
import ast
import os
import re
import subprocess
import sys
import tempfile

KINDS = ("command", "option", "value", "python", "make", "behaviour")
SPAN_RE = re.compile(r"`([^`]+)`")
OPTION_RE = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
HELP_OPTION_RE = re.compile(r"^  (-[^\s]+)")
HELP_COMMAND_RE = re.compile(r"^  ([a-z][a-z0-9-]*)\s{2,}\S")
CMD_WORD_RE = re.compile(r"^[a-z][a-z0-9-]*$")


class Item:
    """One name of the interface: kind command (scope ''), option (scope: a command, '' for
    `frugal --OPT`, '*' for every command, None for any command), python (scope '' for a top-level
    name, else the name it belongs to; `import frugal` is the name 'frugal'), make (a target)."""

    def __init__(self, kind, scope, name, where, value=""):
        self.kind, self.scope, self.name, self.where, self.value = kind, scope, name, where, value

    def key(self):
        return (self.kind, self.scope, self.name)

    def text(self):
        if self.kind == "command":
            return f"frugal {self.name}"
        if self.kind == "option":
            scope = {None: "(any command) ", "": "frugal ", "*": "frugal COMMAND "}.get(self.scope,
                                                                                   f"frugal {self.scope} ")
            return scope + self.name
        if self.kind == "python":
            if self.name == "frugal" and not self.scope:
                return "import frugal"
            return f"frugal.{self.scope + '.' if self.scope else ''}{self.name}"
        return f"make {self.name}"


def split_cells(line):
    cells = re.split(r"(?<!\\)\|", line.strip())
    return [c.strip().replace("\\|", "|") for c in cells[1:-1]]


def command_path(tokens):
    """The command words at the start of tokens: ['bench', 'loader'] or ['eval']."""
    words = []
    for t in tokens:
        if not CMD_WORD_RE.match(t) or len(words) == 2:
            break
        words.append(t)
        if t != "bench":
            break
    return words


def parse_python(span, where, member_of):
    """Items of `frugal.NAME(kw=, ...)`, `import frugal`, or (in a Python section) a member of the
    class last named: `restore(model, scheduler=)`, `classes`."""
    if span.strip() == "import frugal":
        return [Item("python", "", "frugal", where)], member_of
    m = re.match(r"^frugal\.(\w+)(\((.*)\))?", span, re.S)
    if m:
        items = [Item("python", "", m.group(1), where)]
        items += [Item("python", m.group(1), kw, where) for kw in re.findall(r"(\w+)=", m.group(3) or "")]
        return items, (m.group(1) if m.group(1)[:1].isupper() else member_of)
    m = re.match(r"^(\w+)(\((.*)\))?(\s*->.*)?$", span.strip(), re.S)
    if m and member_of and not m.group(1)[:1].isupper():
        items = [Item("python", member_of, m.group(1), where)]
        scope = f"{member_of}.{m.group(1)}"
        items += [Item("python", scope, kw, where) for kw in re.findall(r"(\w+)=", m.group(3) or "")]
        return items, member_of
    return [], member_of


def parse_span(span, where, scope=None):
    """The items a code span names: `frugal CMD [OPTIONS]`, `CMD --OPT`, `--OPT ...` (scope),
    `make TARGET`, `frugal.NAME(...)`. [] for anything else (a value, a path)."""
    span = " ".join(span.split())
    if span.startswith("make "):
        return [Item("make", "", span.split()[1], where)]
    if span == "import frugal" or span.startswith("frugal."):
        return parse_python(span, where, None)[0]
    tokens = span.split()
    if tokens[0] == "frugal" and len(tokens) > 1:
        words = command_path(tokens[1:])
        if words:
            cmd = " ".join(words)
            rest = " ".join(tokens[1 + len(words):])
            return [Item("command", "", cmd, where)] + options_in(rest, cmd, where)
        first = tokens[1]
        scope = "*" if first.isupper() else ""  # `frugal COMMAND --help`: every command
        return options_in(" ".join(tokens[1:] if first.startswith("-") else tokens[2:]), scope, where)
    words = command_path(tokens)
    if words and len(tokens) > len(words) and tokens[len(words)].startswith("-"):
        return options_in(" ".join(tokens[len(words):]), " ".join(words), where)
    if tokens[0].startswith("-") and OPTION_RE.match(tokens[0]):
        return options_in(span, scope, where)
    return []


def options_in(text, scope, where):
    items = []
    for m in OPTION_RE.finditer(text):
        after = text[m.end():].split(" -")[0].strip()
        items.append(Item("option", scope, m.group(1), where, value=after))
    return items


class Doc:
    """The items a markdown document names, as built, and its "Not built yet" table."""

    def __init__(self, path, label, text=None):
        self.label = label
        if text is None:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        self.lines = text.split("\n")
        self.built, self.not_built, self.problems, self.behaviours = [], [], [], []
        self.parse()

    def at(self, n):
        return f"{self.label}:{n}"

    def parse(self):
        heading, table, want_not_built, in_code = "", None, False, False
        prose = []
        for n, line in enumerate(self.lines, 1):
            if line.startswith("```") or in_code:
                in_code = in_code != line.startswith("```")
                prose.append((n, "", heading))  # a code block ends a paragraph; its spans are not read
                continue
            if line.startswith("#"):
                heading = line
            if "**Not built yet**" in line and not line.startswith("|"):
                want_not_built = True
            if line.startswith("|"):
                if table is None:
                    table = {"header": split_cells(line), "kind": "not_built" if want_not_built else "",
                             "heading": heading}
                    want_not_built = False
                elif not re.match(r"^\|[\s|:-]+\|$", line):
                    self.table_row(table, split_cells(line), n)
                continue
            table = None
            prose.append((n, line, heading))
        self.parse_prose(prose)

    def parse_prose(self, prose):
        """Code spans outside tables; one paragraph at a time, so a span may cross lines."""
        member_of, para, start = None, [], 0
        for n, line, heading in prose + [(0, "", "")]:
            if line.strip() and not line.startswith("#"):
                para.append(line)
                start = start or n
                continue
            text = "\n".join(para)
            for m in SPAN_RE.finditer(text):
                where = self.at(start + text[:m.start()].count("\n"))
                span = m.group(1)
                if span.startswith("frugal ") or span.startswith("make ") or span.startswith("frugal."):
                    self.built += parse_span(span, where)
                if heading.lower().startswith("## python") or span.startswith("frugal."):
                    items, member_of = parse_python(span, where, member_of)
                    self.built += [i for i in items if i.scope]  # top-level names came above
                    if span == "import frugal":
                        self.built += items
            para, start = [], 0
            if line.startswith("#"):
                member_of = None

    def table_row(self, table, cells, n):
        first = table["header"][0].lower() if table["header"] else ""
        if table["kind"] == "not_built":
            return self.not_built_row(table["header"], cells, n)
        if first == "command" and cells:
            items = [i for s in SPAN_RE.findall(cells[0]) for i in parse_span(s, self.at(n))]
            cmd = next((i.name for i in items if i.kind == "command"), None)
            if cmd is None:
                self.problems.append(f"{self.at(n)}: (table) `{cells[0]}`: a command table row that names no "
                                     "`frugal CMD`")
            self.built += items + self.meaning_options(cells[1:], cmd, n)
        elif first == "option" and cells:
            m = re.search(r"`frugal ([a-z ]+?)`", table["heading"])
            if not m:
                self.problems.append(f"{self.at(n)}: (table) `{table['heading']}`: an option table under "
                                     "a heading that names no `frugal CMD`")
                return
            scope = m.group(1)
            items = [i for s in SPAN_RE.findall(cells[0]) for i in parse_span(s, self.at(n), scope)]
            self.built += items + self.meaning_options(cells[1:], scope, n)

    def meaning_options(self, cells, scope, n):
        """Options a meaning cell names (`--fresh`), for the row's command."""
        out = []
        for cell in cells:
            for span in SPAN_RE.findall(cell):
                if span.startswith("-"):
                    out += parse_span(span, self.at(n), scope)
        return out

    def not_built_row(self, header, cells, n):
        """A row of the Not built yet table; without a kind (column absent or cell empty) each code
        span's kind is what it names."""
        row = dict(zip([h.lower() for h in header], cells))
        kind, issue, what = row.get("kind", ""), row.get("issue", ""), row.get("what", "")
        spans = SPAN_RE.findall(what)
        name = (spans or [what])[0]
        if not re.search(r"\d", issue):
            self.problems.append(f"{self.at(n)}: (row) `{name}`: this Not built yet row names no issue")
        if kind and kind not in KINDS:
            self.problems.append(f"{self.at(n)}: (row) `{name}`: this Not built yet row has kind '{kind}', "
                                 f"expected one of {', '.join(KINDS)}")
            return
        if kind == "behaviour":
            self.behaviours.append((self.at(n), what, issue))
            return
        if not spans:
            self.problems.append(f"{self.at(n)}: (row) `{what}`: this Not built yet row names no code span; "
                                 "give it kind behaviour if --help cannot show it")
        want = "option" if kind == "value" else kind
        for span in spans:
            items = parse_span(span, self.at(n))
            if kind == "command":
                items = [i for i in items if i.kind == "command"]
            if not items or (want and any(i.kind != want for i in items)):
                self.problems.append(f"{self.at(n)}: (row) `{span}` in the Not built yet table is not a "
                                     f"{kind or 'name'} (`frugal CMD`, `CMD --OPT`, `--OPT`, `frugal.NAME`, "
                                     "`make TARGET`)")
                continue
            for i in items:
                i.value, i.issue, i.row_kind = (i.value if kind == "value" else ""), issue, kind or i.kind
            self.not_built += items


class Built:
    """What is built: the help of the programs in bin_dir (run through `run`), the Python package's
    source and the Makefile, under root."""

    def __init__(self, root, run):
        self.run, self.root = run, root
        rc, text = run(["--help"])
        self.commands, self.groups = {}, {}
        self.top_ok = {}
        for line in text.split("\n") if rc == 0 else []:
            m = HELP_COMMAND_RE.match(line)
            if m:
                self.add_command(m.group(1))
        self.problems = [] if self.commands else [f"frugal --help: no commands found (exit {rc}): {text[:200]}"]
        self.python = read_python(os.path.join(root, "python", "frugal", "__init__.py"))
        self.make = read_make(os.path.join(root, "Makefile"))

    def add_command(self, cmd):
        rc, text = self.run(cmd.split() + ["--help"])
        subs = sorted(set(re.findall(rf"frugal {re.escape(cmd)} ([a-z][a-z0-9-]*) ", text)))
        if subs and not re.search(r"^Options:", text, re.M):
            for s in subs:
                self.add_command(f"{cmd} {s}")
            return
        options, groups = set(), []
        for line in text.split("\n"):
            m = HELP_OPTION_RE.match(line)
            if m:
                names = [o for o in m.group(1).split(",") if o.startswith("-")]
                options.update(names)
                groups.append(names)  # -o,--output: one option, two names
        self.commands[cmd] = options if rc == 0 else None
        self.groups[cmd] = groups

    def has_command(self, name):
        return self.commands.get(name) is not None

    def where_option(self, scope, name):
        """Commands whose help shows option `name`, within scope."""
        if scope == "":
            if name not in self.top_ok:
                self.top_ok[name] = self.run([name])[0] == 0
            return ["frugal"] if self.top_ok[name] else []
        cmds = list(self.commands) if scope in (None, "*") else [scope]
        return [c for c in cmds if name in (self.commands.get(c) or ())]

    def has(self, item):
        if item.kind == "command":
            return self.has_command(item.name)
        if item.kind == "option":
            where = self.where_option(item.scope, item.name)
            if item.scope == "*":
                return bool(self.commands) and len(where) == len([c for c in self.commands if self.commands[c]
                                                                  is not None])
            return bool(where)
        if item.kind == "python":
            return (item.scope, item.name) in self.python
        return item.name in self.make


def read_python(path):
    """{(scope, name)}: ('', 'frugal') when the package is there, its top-level functions and classes,
    their keywords ('Loader', 'seed'), class members ('Checkpointer', 'restore') and theirs."""
    if not os.path.exists(path):
        return set()
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    out = {("", "frugal")}

    def args_of(fn):
        a = fn.args
        return [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.add(("", node.name))
        if isinstance(node, ast.FunctionDef):
            out.update((node.name, a) for a in args_of(node))
        if isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef):
                    out.add((node.name, sub.name))
                    out.update((f"{node.name}.{sub.name}", a) for a in args_of(sub))
                    if sub.name == "__init__":
                        out.update((node.name, a) for a in args_of(sub))
    return out


def read_make(path):
    """The targets of the Makefile's rules (`wheel:`), not its variables (`X := 1`)."""
    if not os.path.exists(path):
        return set()
    targets = set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^([\w.-]+(?:[ \t]+[\w.-]+)*)[ \t]*:(?!=)", line)
            if m:
                targets.update(m.group(1).split())
    return targets


class Checker:
    def __init__(self, doc, contract, built):
        self.doc, self.contract, self.built = doc, contract, built
        self.problems = list(doc.problems) + list(built.problems)
        self.nb = {}
        for i in doc.not_built:
            self.nb.setdefault((i.kind, i.scope, i.name), i)
        self.documented = {i.key() for i in doc.built}

    def covered(self, item):
        """The Not built yet row that covers item, or None."""
        for key in [item.key(), (item.kind, None, item.name)]:
            if key in self.nb:
                return self.nb[key]
        if item.kind == "option" and item.scope:
            return self.nb.get(("command", "", item.scope))
        if item.kind == "python" and item.scope:
            return self.nb.get(("python", "", item.scope.split(".")[0]))
        return None

    def rule_a(self):
        for i in self.doc.not_built:
            if i.row_kind == "value":
                if not self.built.has(i):
                    self.problems.append(f"{i.where}: (a) `{i.text()}` is listed as a value not built yet, "
                                         "but the option itself is not built: give the row kind option")
                continue
            if self.built.has(i):
                self.problems.append(f"{i.where}: (a) `{i.text()}` is listed as not built yet (issue "
                                     f"{i.issue}), but {self.shown_by(i)}: remove it from the table")

    def shown_by(self, i):
        if i.kind == "command":
            return "`frugal --help` lists it"
        if i.kind == "option":
            where = self.built.where_option(i.scope, i.name)
            return "its help shows it: " + ", ".join(f"`{w} --help`" if w == "frugal" else f"`frugal {w} --help`"
                                                     for w in where)
        if i.kind == "python":
            return "python/frugal/__init__.py defines it"
        return "the Makefile has the rule"

    def rule_b(self):
        seen = set()
        for i in self.doc.built:
            if i.key() in seen or self.built.has(i) or self.covered(i):
                continue
            seen.add(i.key())
            self.problems.append(f"{i.where}: (b) docs/cli.md documents `{i.text()}`, but {self.absent(i)}, "
                                 "and the Not built yet table does not list it")

    def absent(self, i):
        if i.kind == "command":
            return "`frugal --help` has no such command"
        if i.kind == "option":
            if i.scope not in (None, "", "*") and not self.built.has_command(i.scope):
                return f"there is no command `frugal {i.scope}`"
            return f"`frugal {i.scope or ''}{' ' if i.scope else ''}--help` does not show it".replace("  ", " ")
        if i.kind == "python":
            return "python/frugal/__init__.py has no such name"
        return "the Makefile has no such rule"

    def rule_c(self):
        seen = set()
        for i in self.contract.built if self.contract else []:
            if i.key() in seen or i.key() in self.documented or self.covered(i):
                continue
            seen.add(i.key())
            self.problems.append(f"{i.where}: (c) CLI.md names `{i.text()}`; docs/cli.md neither documents "
                                 "it nor lists it as not built yet")

    def notes(self):
        named = self.documented | ({i.key() for i in self.contract.built} if self.contract else set())
        out = []
        for cmd, options in sorted(self.built.commands.items()):
            if ("command", "", cmd) not in named:
                out.append(f"`frugal --help` lists `{cmd}`, which neither document names")
            unnamed = [",".join(g) for g in self.built.groups.get(cmd, []) if "--help" not in g
                       and not any(("option", cmd, o) in named or ("option", "*", o) in named for o in g)]
            if unnamed:
                out.append(f"`frugal {cmd} --help` shows options that neither document names for {cmd}: "
                           + " ".join(unnamed))
        return out

    def run(self):
        self.rule_a()
        self.rule_b()
        self.rule_c()
        return self.problems


def program_runner(bin_dir):
    exe = os.path.join(bin_dir, "frugal")

    def run(args):
        try:
            p = subprocess.run([exe] + args, capture_output=True, text=True, timeout=120,
                               env=dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", "")))
        except OSError as e:
            return 127, str(e)
        return p.returncode, p.stdout + p.stderr
    return run


def check(root, bin_dir, contract_path, run=None, say=print):
    doc = Doc(os.path.join(root, "docs", "cli.md"), "docs/cli.md")
    contract = None
    if contract_path and os.path.exists(contract_path):
        contract = Doc(contract_path, "CLI.md")
    else:
        say(f"check_cli_doc: no CLI.md at {contract_path}: docs/cli.md checked against --help alone (rule c skipped)")
    checker = Checker(doc, contract, Built(root, run or program_runner(bin_dir)))
    problems = checker.run()
    for n in checker.notes():
        say("note: " + n)
    for where, what, issue in doc.behaviours:
        say(f"note: {where}: behaviour row, not checkable from --help: {what} (issue {issue})")
    for p in problems:
        say(p)
    return problems


SELF_TEST_DOC = """# frugal
**Not built yet**:

| what | kind | issue |
|---|---|---|
| `frugal report RUN` | command | 44 |
| `eval --worst N`, `--tta flip` | option | 44 |
| `frugal top` | command | 44 |
| `--ghost` | option |  |
| `--label-columns ID,*` | value | 42 |
| `--nothing ID,*` | value | 42 |
| `make wheel`, `make demo` | make | 43 |
| `frugal.report` | python | 44 |
| `frugal.Loader` | python | 44 |
| CIFAR as downloaded | behaviour | 42 |
| `frugal stats` | gadget | 9 |

- `frugal --help`, `frugal --version`, `frugal COMMAND --help`, `frugal --colour`.

## Commands
| command | what it does |
|---|---|
| `frugal eval CKPT [--json] [--worst N] [--confusion]` | with `--csv` |
| `frugal bench loader DATA [--seconds T]` | speed |
| `frugal fly [--high]` | flies |

## `frugal train` options
| option | meaning |
|---|---|
| `--data DATA`, `--label-columns ID,LABEL` | data; `--fresh` starts over |
| `--extend` | goes on |

## Python
`import frugal`: `frugal.Checkpointer(run, keep_last=, colour=)` with `save(step, loader=)`,
`restore(model, speed=)`, `wait()`; `frugal.split`.

```
`frugal ghost --in-a-code-block`
```
"""

SELF_TEST_CONTRACT = """# contract
| command | what it does |
|---|---|
| `frugal eval CKPT [--json] [--tta flip]` | x |
| `frugal predict CKPT [--threshold X]` | x |
| `frugal report RUN` | x |

## `frugal train` options
| option | meaning |
|---|---|
| `--data DATA` | x |
| `--recipe R` | x |

`make python` and `make wheel`; `frugal.Loader(DATA, seed=)`, `frugal.verify`,
`frugal.Checkpointer(run, deadline=)`.
"""

SELF_TEST_HELP = {
    ("--help",): "commands:\n  eval      e\n  train     t\n  bench     b\n  predict   p\n",
    ("--version",): "frugal 0.1",
    ("eval", "--help"): "Options:\n  -h,--help  h\n  --json  j\n  --worst INT  w\n"
                        "  --top INT Needs: --json\n"
                        "                --confusion is not an option line\n",
    ("train", "--help"): "Options:\n  -h,--help  h\n  --data TEXT  d\n  --label-columns TEXT  l\n  --fresh  f\n",
    ("predict", "--help"): "Options:\n  -h,--help  h\n  --tta TEXT  t\n",
    ("bench", "--help"): "usage\nfrugal bench loader ARCHIVE [--seconds T]\n",
    ("bench", "loader", "--help"): "Options:\n  -h,--help  h\n  --seconds FLOAT  s\n  --secret  x\n",
}

SELF_TEST_PYTHON = """
class Loader:
    def __init__(self, data, seed=0): pass
class Checkpointer:
    def __init__(self, run, keep_last=1): pass
    def save(self, step, loader=None): pass
    def restore(self, model): pass
def split(path): pass
"""

SELF_TEST_EXPECTED = {
    ("docs/cli.md:7", "a", "frugal eval --worst"),  # listed as not built, but eval shows it
    ("docs/cli.md:7", "a", "(any command) --tta"),  # unscoped, and predict shows it
    ("docs/cli.md:9", "row", "--ghost"),
    ("docs/cli.md:11", "a", "(any command) --nothing"),  # a value row whose option is not built
    ("docs/cli.md:12", "a", "make demo"),  # the Makefile has it
    ("docs/cli.md:14", "a", "frugal.Loader"),  # defined in the package
    ("docs/cli.md:16", "row", "frugal stats"),
    ("docs/cli.md:18", "b", "frugal --colour"),  # top-level option that fails
    ("docs/cli.md:23", "b", "frugal eval --confusion"),  # not in help (only in a description)
    ("docs/cli.md:23", "b", "frugal eval --csv"),  # named in the meaning cell; help shows it
    ("docs/cli.md:25", "b", "frugal fly"),
    ("docs/cli.md:25", "b", "frugal fly --high"),
    ("docs/cli.md:31", "b", "frugal train --extend"),
    ("docs/cli.md:34", "b", "frugal.Checkpointer.colour"),
    ("docs/cli.md:35", "b", "frugal.Checkpointer.restore.speed"),
    ("docs/cli.md:35", "b", "frugal.Checkpointer.wait"),
    ("CLI.md:5", "c", "frugal predict --threshold"),
    ("CLI.md:12", "c", "frugal train --recipe"),
    ("CLI.md:14", "c", "make python"),
    ("CLI.md:5", "c", "frugal predict"),  # predict is built, but docs/cli.md never names it
    ("CLI.md:15", "c", "frugal.Checkpointer.deadline"),
    ("CLI.md:14", "c", "frugal.verify"),
}


def self_test():
    """Fake documents, help text, package and Makefile that break each rule once, beside uses that
    are allowed: exactly the broken ones must be reported."""
    def run(args):
        if tuple(args) in SELF_TEST_HELP:
            return 0, SELF_TEST_HELP[tuple(args)]
        return 2, f"frugal: unknown command '{args[0]}'"

    with tempfile.TemporaryDirectory() as root:
        files = {"docs/cli.md": SELF_TEST_DOC, "contract/CLI.md": SELF_TEST_CONTRACT,
                 "python/frugal/__init__.py": SELF_TEST_PYTHON, "Makefile": "all: build\ndemo tools: x\nX := 1\n"}
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(text)
        said = []
        problems = check(root, root, os.path.join(root, "contract", "CLI.md"), run=run, say=said.append)
    got = set()
    for p in problems:
        m = re.match(r"^(\S+?:\d+): \((\w+)\)[^`]*`([^`]*)`", p)
        got.add((m.group(1), m.group(2), m.group(3)) if m else (p, "?", ""))
    missed, extra = SELF_TEST_EXPECTED - got, got - SELF_TEST_EXPECTED
    for e in sorted(missed):
        print("self-test: not reported:", e)
    for e in sorted(extra):
        print("self-test: reported but allowed:", e)
    notes = [s for s in said if s.startswith("note:")]
    want_notes = ["for bench loader: --secret", "for eval: --top"]
    bad_notes = [w for w in want_notes if not any(s.endswith(w) for s in notes)]
    for w in bad_notes:
        print("self-test: note wrong about:", w)
    if missed or extra or bad_notes:
        print("self-test: FAILED; all output:")
        for s in said:
            print("  " + s)
        return 1
    print(f"self-test: the {len(SELF_TEST_EXPECTED)} broken rules in the fake documents are reported, nothing else")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bin_dir", nargs="?", help="folder of the built frugal (build/bin)")
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--contract", help="CLI.md (default: ../shared/CLI.md beside the checkout)")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if not args.bin_dir:
        ap.error("give BIN_DIR, the folder of the built frugal (build/bin)")
    root = os.path.abspath(args.root)
    contract = args.contract or os.path.join(root, "..", "shared", "CLI.md")
    problems = check(root, os.path.abspath(args.bin_dir), contract)
    if problems:
        print(f"check_cli_doc: {len(problems)} problem(s): docs/cli.md is not true to --help"
              f"{' and CLI.md' if os.path.exists(contract) else ''}; fix the doc (or the table "
              "'Not built yet', with the issue)")
        return 1
    print("check_cli_doc: docs/cli.md is true to --help" + (" and covers CLI.md" if os.path.exists(contract) else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
