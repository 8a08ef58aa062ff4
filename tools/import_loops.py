#!/usr/bin/env python3
"""The import loops of a module tree: its modules (files, or with --folders
the top-level folders and files) and the `use` edges between them, then every
strongly connected component of more than one node.

Usage: tools/import_loops.py [root] [--folders] [--check]
With --check it exits with status 1 if there is any loop (`.ci/run` checks
the transport's folders this way).
root defaults to crates/volley-remote/src/transport; paths are read as
`crate::transport::..`, `super::..` or `self::..` (tests and loom models left out).
"""
import os, re, sys
root = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith('--') else 'crates/volley-remote/src/transport'
folders = '--folders' in sys.argv
files = {}
for d, _, fs in os.walk(root):
    for f in fs:
        if f.endswith('.rs') and 'test' not in f and f != 'loom_model.rs':
            p = os.path.join(d, f)
            rel = os.path.relpath(p, root)[:-3]
            if rel.endswith('/mod'): rel = rel[:-4]
            if rel == 'mod': rel = ''
            files[rel] = open(p).read()
def modpath(rel):
    return [x for x in rel.split('/') if x]
def node(parts):
    # longest existing file prefix
    for k in range(len(parts), 0, -1):
        cand = '/'.join(parts[:k])
        if cand in files: return cand
    return None
def group(n):
    if n is None: return None
    if folders:
        return n.split('/')[0]
    # fold sub-files (lane/token) into their parent file module unless folder module
    return n
edges = {}
use_re = re.compile(r'(?:use\s+|[^\w:])((?:super::)+|crate::transport::|self::)([\w:]+)')
for rel, src in files.items():
    src = re.sub(r'#\[cfg\(test\)\]\s*mod \w+\s*\{.*', '', src, flags=re.S)
    me = modpath(rel)
    is_dir_mod = os.path.isdir(os.path.join(root, rel)) if rel else True
    for m in re.finditer(r'(?:use\s+|[\s(<&,!])((?:super::)+|crate::transport::|self::)((?:\w+::)*\w+)', src):
        pre, path = m.group(1), m.group(2).split('::')
        if pre == 'crate::transport::':
            base = []
        elif pre == 'self::':
            base = me if is_dir_mod else me
        else:
            ups = pre.count('super::')
            # module of a file foo/bar.rs is foo::bar; super is foo
            base = me[:len(me)-ups] if len(me) >= ups else None
            if base is None: continue
        tgt = node(base + path)
        if tgt is None or tgt == rel: continue
        a, b = group(rel if rel else 'mod'), group(tgt)
        if a != b:
            edges.setdefault(a, set()).add(b)
nodes = set(edges) | {b for v in edges.values() for b in v}
# tarjan
idx = {}; low = {}; st = []; on = set(); sccs = []; c = [0]
sys.setrecursionlimit(10000)
def sc(v):
    idx[v] = low[v] = c[0]; c[0] += 1; st.append(v); on.add(v)
    for w in edges.get(v, ()):
        if w not in idx: sc(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], idx[w])
    if low[v] == idx[v]:
        comp = []
        while True:
            w = st.pop(); on.discard(w); comp.append(w)
            if w == v: break
        sccs.append(comp)
for v in sorted(nodes):
    if v not in idx: sc(v)
big = sorted([s for s in sccs if len(s) > 1], key=len, reverse=True)
print(f"modules: {len(nodes)}, edges: {sum(len(v) for v in edges.values())}")
for s in big:
    print(f"cycle of {len(s)}: {' '.join(sorted(s))}")
if '--check' in sys.argv and big:
    sys.exit(1)
