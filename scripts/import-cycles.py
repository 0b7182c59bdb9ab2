#!/usr/bin/env python3
"""Import cycles between the files of a Rust crate's src/ (`crate::`/`super::` paths).

Usage: scripts/import-cycles.py host/core/src [host/serve/src ...]; prints
each cycle and exits 1 if a crate has one (scripts/test.sh runs it on every
crate).

A file imports a module path; the path resolves to the file that defines it
(the deepest existing module file). A module file that only re-exports its
children (`pub use child::X`) would make every child<->parent pair a cycle, so
edges from a mod.rs/lib.rs to its own descendants are not counted: the
question is whether files import *each other*, not whether a facade lists its
children. Comments and unit-test modules are ignored."""
import os, re, sys


def cycles(root):
    files = {}
    for d, _, fs in os.walk(root):
        for f in fs:
            if f.endswith('.rs'):
                p = os.path.join(d, f)
                rel = os.path.relpath(p, root)
                parts = rel[:-3].split(os.sep)
                if parts[-1] in ('mod', 'lib', 'main'):
                    parts = parts[:-1]
                files[tuple(parts)] = rel
    def resolve(mod):
        for n in range(len(mod), -1, -1):
            if tuple(mod[:n]) in files:
                return tuple(mod[:n])
        return None
    edges = {}
    for mod, rel in files.items():
        text = open(os.path.join(root, rel)).read()
        text = re.sub(r'#\[cfg\(test\)\]\s*mod tests \{.*', '', text, flags=re.S)
        text = re.sub(r'//.*', '', text)
        base = list(mod) if rel.endswith(('mod.rs', 'lib.rs')) else list(mod[:-1])
        targets = set()
        for m in re.finditer(r'\b(crate|super)((?:::\w+)+)', text):
            head, path = m.group(1), [p for p in m.group(2).split('::') if p]
            if head == 'crate':
                full = path
            else:
                full = base[:-1] + path if True else None
                # `super` counts repeatedly
            i = m.start()
            n_super = 0
            j = i
            while text[j:j+7] == 'super::':
                n_super += 1; j += 7
            if head == 'super':
                rest = text[j:]
                rp = re.match(r'((?:\w+::)*\w+)', rest).group(1).split('::')
                full = base[:len(base)-n_super] + rp
            t = resolve(full)
            if t is not None and t != mod:
                # a facade listing its own descendants is not an import loop
                if rel.endswith(('mod.rs', 'lib.rs')) and t[:len(mod)] == mod:
                    continue
                targets.add(t)
        edges[mod] = targets
    # find cycles (Tarjan SCC)
    index = {}; low = {}; stack = []; on = set(); sccs = []; counter = [0]
    sys.setrecursionlimit(10000)
    def strong(v):
        index[v] = low[v] = counter[0]; counter[0] += 1; stack.append(v); on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1: sccs.append(comp)
    for v in edges:
        if v not in index: strong(v)
    for comp in sccs:
        print('cycle:', ' <-> '.join(files[c] for c in sorted(comp)))
    print(f'{root}: {len(files)} files, {sum(len(t) for t in edges.values())} imports, {len(sccs)} cycles')
    return len(sccs)


if __name__ == "__main__":
    found = sum(cycles(root) for root in sys.argv[1:])
    sys.exit(1 if found else 0)
