"""python/mpx's ctypes mirrors (mpx._lib.MIRRORS) against the layout the C
compiler gives the public headers, printed by tests/abi_layout.c (argv[1]).

A mirror that drifted from its header reads every field after the drift at
the wrong place, silently; here it fails by name. Checked: every structure
the C side lists has a mirror and every mirror a C row; every field the C
side lists is in the mirror at the same offset with the same size, and the
mirror has no field the C side does not list; whole mirrors (those the
package allocates or indexes) have the C size.
"""
import ctypes
import subprocess
import sys

from mpx import _lib as L


def c_layout(program):
    out = subprocess.run([program], check=True, capture_output=True, text=True).stdout
    structs, fields = {}, {}
    for line in out.splitlines():
        w = line.split()
        if w[0] == "struct":
            structs[w[1]] = (int(w[2]), w[3] == "whole")
            fields[w[1]] = []
        else:
            fields[w[1]].append((w[2], int(w[3]), int(w[4])))
    return structs, fields


def py_name(cls, c_name):
    """The mirror's name for C field c_name: itself, or with a '_' where it is
    a Python keyword (PlanCast.from_)."""
    names = {f[0] for f in cls._fields_}
    return c_name if c_name in names else c_name + "_" if c_name + "_" in names else None


def check(program):
    structs, fields = c_layout(program)
    bad = []
    for name in sorted(set(structs) - set(L.MIRRORS)):
        bad.append("%s: laid out by abi_layout.c but mirrored by nothing in mpx._lib.MIRRORS" % name)
    for name in sorted(set(L.MIRRORS) - set(structs)):
        bad.append("%s: mirrored (%s) but not in abi_layout.c" % (name, L.MIRRORS[name].__name__))
    mirrored = {cls.__name__ for cls in L.MIRRORS.values()}
    for attr in dir(L):
        obj = getattr(L, attr)
        if isinstance(obj, type) and issubclass(obj, ctypes.Structure) and obj.__module__ == L.__name__ \
                and attr not in mirrored:
            bad.append("%s: a structure of mpx._lib missing from MIRRORS" % attr)
    for name in sorted(set(structs) & set(L.MIRRORS)):
        cls, (size, whole) = L.MIRRORS[name], structs[name]
        seen = set()
        for c_field, off, fsize in fields[name]:
            p = py_name(cls, c_field)
            if p is None:
                bad.append("%s.%s (offset %d): missing from the mirror %s" % (name, c_field, off, cls.__name__))
                continue
            seen.add(p)
            d = getattr(cls, p)
            if (d.offset, d.size) != (off, fsize):
                bad.append("%s.%s: the mirror %s has it at offset %d, %d bytes; C at offset %d, %d bytes"
                           % (name, c_field, cls.__name__, d.offset, d.size, off, fsize))
        for f in cls._fields_:
            if f[0] not in seen:
                bad.append("%s.%s: in the mirror %s but not in abi_layout.c's row" % (name, f[0], cls.__name__))
        if whole and ctypes.sizeof(cls) != size:
            bad.append("%s: the mirror %s is %d bytes, C's %d" % (name, cls.__name__, ctypes.sizeof(cls), size))
    return bad, len(structs), sum(len(v) for v in fields.values())


if __name__ == "__main__":
    bad, n_structs, n_fields = check(sys.argv[1])
    for b in bad:
        print("abi_check: " + b)
    if bad:
        sys.exit(1)
    print("abi_check: %d structures, %d fields as C lays them out" % (n_structs, n_fields))
