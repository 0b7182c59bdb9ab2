#!/usr/bin/env python3
"""Import cycles between the files of a Rust crate's src/.

Usage: scripts/import-cycles.py host/core/src [host/serve/src ...]; prints
each cycle and exits 1 if a crate has one (scripts/test.sh runs it on every
crate; scripts/import-cycles-test.py holds it to its fixtures).

A file imports what its `use` declarations and its paths name: `crate::`,
`super::` (as many as written, from the file's own module: `super` of
`a/b.rs` and of `a/b/mod.rs` is `a`), `self::`, a child module's name
(`use child::X` or `child::f()` in a mod.rs), and a name a `use` of the same
file binds to a module of the crate (`use super::kinds;` then
`kinds::cyclic::X`; `use crate::mongo::{self, f}` then `mongo::g()`; `use
a::b as c;` then `c::D`; also `use kinds::cyclic::X;` after `use
super::kinds;`): the path goes on from the module file the binding leads to,
through re-exports. A name bound to an item (`use a::Mode as kinds;`: then
`kinds::Fast` is that item's, which the `use` already imports), a name bound
only in another file, and one bound to another crate's module (`use
serde::de;`) lead nowhere else, even where a module of the crate has that
name. A binding counts throughout its file (the scope of a `use` inside a
block or an inline module is not tracked). Use trees are read whole (`use
super::{a, b::C}`).
A path leads to the file that defines it: the deepest module file it names,
then through that file's re-exports (`pub use x::Name`, `pub use x::*`) to the
file the name is defined in. So a kind that imports `super::CounterState`
from a facade imports the file that defines `CounterState`; a path through a
file that is not a module file imports that file as well.

A module file's own re-exports (`pub use child::X`, any visibility) are not
imports: a facade listing its children would otherwise make every
child<->parent pair a cycle. Its other uses of its children are imports, so a
parent that calls a child which calls it back is a cycle, and so is a name it
re-exports and uses in its own code too (`pub use child::X;` and then
`type T = X;` or `X::new()`): that use imports the file that defines X. Comments, strings,
`#[cfg(test)]` modules and paths into other crates are ignored."""
import os
import re
import sys

ITEM = re.compile(
    r'\b(?:fn|struct|enum|trait|type|const|static|union|mod|macro_rules!)\s+(\w+)')
USE = re.compile(r'(?<![\w:])(pub(?:\s*\([^)]*\))?\s+)?use\s+([^;]+);')
MOD_DECLARATION = re.compile(r'\bmod\s+\w+\s*;')
PATH = re.compile(r'(?<![\w:])((?:crate|super|self)(?:\s*::\s*\w+)+)')


def strip(text):
    """The text without comments, string and char literals, and
    `#[cfg(test)]` items (a block, matched by braces)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i)
            i = n if j < 0 else j
        elif text.startswith('/*', i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith('/*', i):
                    depth, i = depth + 1, i + 2
                elif text.startswith('*/', i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == 'r' and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == '_')):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            out.append('""')
            i = n if end < 0 else end + 1 + len(hashes)
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == '\\' else 1
            out.append('""')
            i += 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 12]) or (c == "'" and text.startswith("'\\", i)):
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\x[0-9a-fA-F]{2}|\\.|[^\\'])'", text[i:])
            if m:
                out.append("' '")
                i += m.end()
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    text = ''.join(out)
    # #[cfg(test)] followed by an item with a body: drop the item.
    while True:
        m = re.search(r'#\[cfg\(test\)\]', text)
        if not m:
            return text
        start, j = m.start(), m.end()
        depth = 0
        while j < len(text):
            if text[j] == ';' and depth == 0:
                j += 1
                break
            if text[j] == '{':
                depth += 1
            elif text[j] == '}':
                depth -= 1
                if depth == 0:
                    j += 1
                    break
            j += 1
        text = text[:start] + text[j:]


def use_tree(tree):
    """The paths of a use tree, as (segments, name it binds) pairs:
    `a::{b, c::D as E, f::*}` gives (a,b) b, (a,c,D) E, (a,f,*) *."""
    tokens = re.findall(r'::|\w+|[{},*]', tree)
    pos = 0

    def parse(prefix):
        nonlocal pos
        found = []
        path = list(prefix)
        while pos < len(tokens):
            t = tokens[pos]
            if t == '{':
                pos += 1
                while tokens[pos] != '}':
                    found += parse(path)
                    if tokens[pos] == ',':
                        pos += 1
                pos += 1
                return found
            if t == '*':
                pos += 1
                found.append((path + ['*'], '*'))
                return found
            if t in ('}', ','):
                break
            if t == '::':
                pos += 1
                continue
            if t == 'as':
                alias = tokens[pos + 1]
                pos += 2
                if path and path[-1] == 'self':
                    path = path[:-1]
                found.append((path, alias))
                return found
            path.append(t)
            pos += 1
        if path != list(prefix):
            name = path[-1]
            if name == 'self':
                path = path[:-1]
                name = path[-1] if path else 'self'
            found.append((path, name))
        return found

    return parse([])


class Crate:
    def __init__(self, root):
        self.root = root
        self.files = {}
        for d, _, fs in os.walk(root):
            for f in fs:
                if f.endswith('.rs'):
                    rel = os.path.relpath(os.path.join(d, f), root)
                    parts = rel[:-3].split(os.sep)
                    if parts[-1] in ('mod', 'lib', 'main'):
                        parts = parts[:-1]
                    self.files[tuple(parts)] = rel
        self.text = {}
        self.uses = {}      # module -> [(absolute path, bound name, is a re-export)]
        self.exports = {}   # module -> {name: [absolute paths]}, '*' -> [paths]
        self.bound = {}     # module -> {name its uses bind: [absolute paths]}
        self.defines = {}   # module -> names of items defined in it
        pending = {}        # module -> its use paths not resolved yet
        for mod, rel in self.files.items():
            with open(os.path.join(root, rel), encoding='utf-8') as f:
                text = strip(f.read())
            self.uses[mod], self.exports[mod], self.bound[mod] = [], {}, {}
            pending[mod] = [(path, name, m.group(1) is not None)
                            for m in USE.finditer(text) for path, name in use_tree(m.group(2))]
            self.text[mod] = USE.sub(' ', text)
            self.defines[mod] = set(ITEM.findall(text))
        # A use path may start with a name another use of its file binds
        # (`use super::kinds; use kinds::cyclic::X;`): resolve until no
        # path is left that a binding resolves.
        while any([self.resolve_uses(mod, pending) for mod in self.files]):
            pass

    def resolve_uses(self, mod, pending):
        """Records the paths of `pending[mod]` that now resolve; says if
        any did."""
        left = []
        for path, name, public in pending[mod]:
            absolute = self.absolute(mod, path)
            if absolute is None:
                left.append((path, name, public))
                continue
            self.uses[mod].append((absolute, name, public))
            if public:
                self.exports[mod].setdefault(name, []).append(absolute)
            if name != '*':
                self.bound[mod].setdefault(name, []).append(absolute)
        resolved = len(left) < len(pending[mod])
        pending[mod] = left
        return resolved

    def is_facade(self, mod):
        return self.files[mod].endswith(('mod.rs', 'lib.rs', 'main.rs')) or mod == ()

    def absolute(self, mod, path):
        """`path` as written in module `mod`, from the crate's root; None if
        it leads out of the crate."""
        head = path[0]
        if head == 'crate':
            return path[1:]
        if head == 'self':
            return list(mod) + path[1:]
        if head == 'super':
            n = 0
            while n < len(path) and path[n] == 'super':
                n += 1
            return list(mod[:max(len(mod) - n, 0)]) + path[n:]
        if tuple(mod) + (head,) in self.files:
            return list(mod) + path
        module = self.bound_module(mod, head)
        if module is not None:
            return list(module) + path[1:]
        return None

    def bound_module(self, mod, name):
        """The module file that `name` is bound to by a `use` of module
        `mod` (`use super::kinds;`, `use crate::mongo::{self}`, `use
        x::y as z;`), through re-exports; None if no use of `mod` binds
        it to a module file (it binds an item, or nothing)."""
        for path in self.bound[mod].get(name, []):
            module = self.module_of(path)
            if module is not None:
                return module
        return None

    def module_of(self, path, seen=()):
        """The module file that `path` names, through re-exports (`pub use
        inner::wire;`, `pub use inner::*;`); None if it names an item."""
        for n in range(len(path), -1, -1):
            mod = tuple(path[:n])
            if mod in self.files:
                break
        rest = path[n:]
        if not rest:
            return mod
        name = rest[0]
        if name in self.defines[mod] or (mod, name) in seen or len(seen) > 32:
            return None
        seen = seen + ((mod, name),)
        for exported in self.exports[mod].get(name, []):
            module = self.module_of(exported + rest[1:], seen)
            if module is not None:
                return module
        for glob in self.exports[mod].get('*', []):
            inner = self.module_of(glob[:-1], seen)
            module = None if inner is None else self.module_of(list(inner) + rest, seen)
            if module is not None:
                return module
        return None

    def targets(self, path):
        """The files a use of `path` imports: the file that defines what it
        names and, if the path names it through a file that is not a module
        file (`use super::items::NAME` re-exported by items.rs), that file
        too: it is named, so it is imported."""
        for n in range(len(path), -1, -1):
            if tuple(path[:n]) in self.files:
                break
        named = tuple(path[:n])
        found = {self.target(path)}
        if not self.is_facade(named):
            found.add(named)
        return found

    def target(self, path, seen=()):
        """The file (module) that defines what `path` names, through
        re-exports."""
        for n in range(len(path), -1, -1):
            mod = tuple(path[:n])
            if mod in self.files:
                break
        rest = path[n:]
        if not rest or rest[0] == '*' or rest[0] in self.defines[mod]:
            return mod
        name = rest[0]
        if (mod, name) in seen or len(seen) > 32:
            return mod
        seen = seen + ((mod, name),)
        for exported in self.exports[mod].get(name, []):
            return self.target(exported + rest[1:], seen)
        for glob in self.exports[mod].get('*', []):
            inner = self.target(glob[:-1], seen)
            if self.provides(inner, name, seen):
                return self.target(glob[:-1] + rest, seen)
        return mod

    def provides(self, mod, name, seen=()):
        """Module `mod` defines or re-exports `name`."""
        if name in self.defines[mod] or name in self.exports[mod]:
            return True
        if len(seen) > 32:
            return False
        return any(self.provides(self.target(glob[:-1], seen + ((mod, name),)), name,
                                 seen + ((mod, name),))
                   for glob in self.exports[mod].get('*', []))

    def uses_name(self, mod, name):
        """Module `mod`'s own code (its `use` and `mod NAME;` declarations
        aside) names `name` alone, not as the tail of another path."""
        if name in ('*', 'self'):
            return False
        code = MOD_DECLARATION.sub(' ', self.text[mod])
        return re.search(r'(?<![\w:])' + re.escape(name) + r'\b', code) is not None

    def edges(self):
        result = {}
        for mod in self.files:
            targets = set()
            facade = self.is_facade(mod)
            for path, name, public in self.uses[mod]:
                if public and facade and not self.uses_name(mod, name):
                    continue
                targets |= self.targets(path)
            children = [f[-1] for f in self.files if len(f) == len(mod) + 1 and f[:-1] == mod]
            bound = [name for name in self.bound[mod] if self.bound_module(mod, name) is not None]
            paths = [PATH] + [re.compile(r'(?<![\w:])(' + re.escape(head) + r'(?:\s*::\s*\w+)+)')
                              for head in set(children) | set(bound)]
            for m in (m for pattern in paths for m in pattern.finditer(self.text[mod])):
                path = [p.strip() for p in m.group(1).split('::')]
                absolute = self.absolute(mod, path)
                if absolute is not None:
                    targets |= self.targets(absolute)
            targets.discard(mod)
            result[mod] = targets
        return result


def strongly_connected(edges):
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def cycles(root, out=sys.stdout):
    """Prints the cycles of the crate at `root` and returns them (each a
    sorted list of its files, relative to `root`)."""
    crate = Crate(root)
    edges = crate.edges()
    found = sorted(sorted(crate.files[m] for m in component) for component in strongly_connected(edges))
    for component in found:
        print('cycle:', ' <-> '.join(component), file=out)
    print(f'{root}: {len(crate.files)} files, {sum(len(t) for t in edges.values())} imports, '
          f'{len(found)} cycles', file=out)
    return found


if __name__ == '__main__':
    total = sum(len(cycles(root)) for root in sys.argv[1:])
    sys.exit(1 if total else 0)
