#!/usr/bin/env python3
"""api_symbols.py - libmpx.so exports exactly what its public headers declare.

  api_symbols.py <libmpx.so> <header>...

The exported names are the library's dynamic symbols (nm -D --defined-only);
the declared names are the compiler's own reading of the headers, not the
build's (libmpx/api.cmake makes the version script with regular expressions;
this reads what GCC parsed): every function GCC saw declared in a public
header (-aux-info), not static, and every extern variable at file scope of
the preprocessed headers. Fails naming every exported name no header
declares (an internal function leaking into the API) and every declared
name the library does not export (API a client cannot link). Exit 77 (skip)
without gcc or nm."""
import os
import re
import shutil
import subprocess
import sys
import tempfile


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    lib, headers = sys.argv[1], [os.path.realpath(h) for h in sys.argv[2:]]
    gcc, nm = shutil.which("gcc"), shutil.which("nm")
    if not gcc or not nm:
        print("api_symbols: needs gcc and nm; skipped")
        sys.exit(77)
    incs = []
    for h in headers:
        d = os.path.dirname(h)
        if "-I" + d not in incs:
            incs.append("-I" + d)

    with tempfile.TemporaryDirectory() as tmp:
        tu = os.path.join(tmp, "api.c")
        with open(tu, "w") as f:
            for h in headers:
                f.write('#include "%s"\n' % h)
        aux = os.path.join(tmp, "aux.txt")
        subprocess.run([gcc, "-std=c11", "-fsyntax-only", "-aux-info", aux] + incs + [tu], check=True)
        pre = subprocess.run([gcc, "-std=c11", "-E"] + incs + [tu], check=True, capture_output=True,
                             text=True).stdout
        with open(aux) as f:
            aux_lines = f.read().splitlines()

    declared = {}
    # -aux-info: "/* <file>:<line>:<flags> */ <declaration>;" per function.
    for line in aux_lines:
        m = re.match(r"/\* (.*):(\d+):\w+ \*/ (.*)$", line)
        if not m or os.path.realpath(m.group(1)) not in headers:
            continue
        decl = m.group(3)
        if re.match(r"static\b", decl):
            continue  # inline in the header: no symbol
        name = re.match(r"[^(]*?\b(\w+) \(", decl)
        if name:
            declared[name.group(1)] = "%s:%s" % (os.path.basename(m.group(1)), m.group(2))

    # Variables: extern declarations at file scope of the headers' text.
    text, where, depth, stmt = [], None, 0, ""
    for line in pre.splitlines():
        mark = re.match(r'# \d+ "(.*)"', line)
        if mark:
            where = os.path.realpath(mark.group(1))
            continue
        if where in headers:
            text.append(line)
    for ch in "\n".join(text):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            stmt = ""
        elif ch == ";" and depth == 0:
            m = re.match(r"\s*extern\b[^(]*?\b(\w+)\s*(\[[^\]]*\])?\s*$", stmt)
            if m:
                declared[m.group(1)] = "extern variable"
            stmt = ""
        elif depth == 0:
            stmt += ch

    out = subprocess.run([nm, "-D", "--defined-only", lib], check=True, capture_output=True,
                         text=True).stdout
    exported = {l.split()[-1] for l in out.splitlines() if l.strip()}

    bad = False
    for n in sorted(exported - set(declared)):
        print("exported but declared in no public header: %s" % n)
        bad = True
    for n in sorted(set(declared) - exported):
        print("declared (%s) but not exported: %s" % (declared[n], n))
        bad = True
    if len(declared) < 100:
        print("only %d names read from the headers: the reading is broken" % len(declared))
        bad = True
    if bad:
        sys.exit(1)
    print("libmpx.so exports the %d functions and variables its %d public headers declare, nothing else"
          % (len(exported), len(headers)))


main()
