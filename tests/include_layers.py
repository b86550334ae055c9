#!/usr/bin/env python3
"""include_layers.py - every #include between folders goes down the layers.

  include_layers.py <source dir>

The rules are one table, the block after the line "<!-- include-layers -->" in
docs/ARCHITECTURE.md (so the page that explains them is the one the check
reads), a line per folder:

  folder | the folders it may include from | its headers other folders may include

A folder may be nested (numerics/kernels): a file belongs to the deepest
folder of the table that holds it. A deps field of "*" means unchecked (the
tests may include anything). A file's quoted #include "name" is found among
the table's folders by name: its own folder's header, or a header another
folder offers, from a folder its line allows. Names in no folder (generated
headers: onnx.pb-c.h, viz_page_js.h, mpx_version.h) and <system> headers are
not the table's business.

Fails naming the file, the line and the rule it breaks; also on a folder
holding C files with no line, a folder named twice or unknown, and a circle
in the table itself."""
import os
import re
import sys

SKIP_DIRS = {".git", ".cache"}
C_EXT = (".c", ".h", ".def")


def read_table(src):
    doc = os.path.join(src, "docs", "ARCHITECTURE.md")
    lines = open(doc, encoding="utf-8").read().splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if "<!-- include-layers -->" in l)
    except StopIteration:
        sys.exit("include_layers: no <!-- include-layers --> table in %s" % doc)
    table, in_block = {}, False
    for l in lines[start + 1:]:
        if l.startswith("```"):
            if in_block:
                break
            in_block = True
            continue
        if not in_block or not l.strip() or l.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in l.split("|")]
        if len(parts) != 3:
            sys.exit("include_layers: table line \"%s\": want folder | deps | headers" % l)
        folder, deps, offers = parts
        if folder in table:
            sys.exit("include_layers: folder %s has two lines" % folder)
        table[folder] = {"deps": None if deps == "*" else deps.split(), "offers": set(offers.split())}
    return table


def owner(table, rel_dir):
    """The deepest folder of the table holding rel_dir, or None."""
    d = rel_dir
    while d:
        if d in table:
            return d
        d = os.path.dirname(d)
    return None


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    src = os.path.realpath(sys.argv[1])
    table = read_table(src)
    errors = []
    for f, t in table.items():
        for d in t["deps"] or []:
            if d not in table:
                errors.append("table: %s may include from %s, which has no line" % (f, d))
    # a circle in the table: depth-first over deps
    state = {}

    def visit(f, path):
        if state.get(f) == 1:
            errors.append("table: circle %s" % " -> ".join(path + [f]))
            return
        if state.get(f) == 2:
            return
        state[f] = 1
        for d in table[f]["deps"] or []:
            if d in table:
                visit(d, path + [f])
        state[f] = 2

    for f in table:
        visit(f, [])

    # every C file of the tree, by folder
    files = {}
    for root, dirs, names in os.walk(src):
        rel = os.path.relpath(root, src)
        rel = "" if rel == "." else rel
        # (build trees and the models' cache are not sources)
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not os.path.exists(os.path.join(root, d, "CMakeCache.txt"))
                   and not os.path.islink(os.path.join(root, d))]
        for n in names:
            if n.endswith(C_EXT):
                files.setdefault(rel, []).append(n)
    where = {}  # header name -> folders of the table holding it
    for rel, names in files.items():
        f = owner(table, rel)
        if f is None:
            errors.append("%s/: C files in a folder with no line in the include-layers table" % (rel or "."))
            continue
        for n in names:
            where.setdefault(n, set()).add(f)
    for f, t in table.items():
        for h in t["offers"]:
            if f not in where.get(h, set()):
                errors.append("table: %s offers %s, which it does not hold" % (f, h))

    inc = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
    for rel, names in sorted(files.items()):
        f = owner(table, rel)
        if f is None or table[f]["deps"] is None:
            continue
        allowed = set(table[f]["deps"])
        for n in sorted(names):
            path = os.path.join(src, rel, n)
            for no, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
                m = inc.match(line)
                if not m:
                    continue
                h = os.path.basename(m.group(1))
                holders = where.get(h)
                if not holders or f in holders:
                    continue  # generated, or its own folder's
                ok = [g for g in holders if g in allowed and h in table[g]["offers"]]
                if ok:
                    continue
                g = sorted(holders)[0]
                if g not in allowed:
                    why = "%s/ may include from %s only" % (f, " ".join(sorted(allowed)) or "no other folder")
                else:
                    why = "%s is %s/'s own (it offers %s)" % (h, g, " ".join(sorted(table[g]["offers"])))
                errors.append("%s:%d: includes %s of %s/: %s" % (os.path.join(rel, n), no, h, g, why))
    if errors:
        print("\n".join(errors))
        sys.exit(1)
    checked = sum(len(v) for k, v in files.items() if owner(table, k) and table[owner(table, k)]["deps"] is not None)
    print("include_layers: %d files of %d folders include only down the layers" %
          (checked, sum(1 for t in table.values() if t["deps"] is not None)))


main()
