#!/usr/bin/python3
"""png_check.py PNG WIDTH HEIGHT CHECK... - what a screenshot shows, for the
browser tests (tests/viz_browser.sh), with the standard library only (zlib,
struct): Chromium's PNG is decoded, every second pixel of every second row
counted by colour, and each CHECK must hold:

  name=#rrggbb>N      more than N sampled pixels within 6 of the colour
  name=#rrggbb~T>N    the same within T
  nonwhite>F          more than the share F of pixels not near white
  colours>N           more than N distinct colours (not a blank page)

Prints one line of figures; exit status 1 naming what is missing."""
import struct
import sys
import zlib


def pixels(path):
    data = open(path, 'rb').read()
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        sys.exit(f'{path}: not a PNG')
    pos, idat, hdr = 8, b'', None
    while pos < len(data):
        n, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b'IHDR':
            hdr = struct.unpack('>IIBBBBB', body)
        elif kind == b'IDAT':
            idat += body
        pos += 12 + n
    w, h, depth, ctype = hdr[0], hdr[1], hdr[2], hdr[3]
    if depth != 8 or ctype not in (2, 6):
        sys.exit(f'{path}: unexpected PNG format {depth}/{ctype}')
    bpp = 3 if ctype == 2 else 4
    raw, stride = zlib.decompress(idat), w * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):  # undo the scanline filters
        f = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def main():
    path, want_w, want_h, checks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
    w, h, bpp, rows = pixels(path)
    if (w, h) != (want_w, want_h):
        sys.exit(f'{path}: size {w}x{h}, expected {want_w}x{want_h}')
    counts, nonwhite = {}, 0
    for y in range(0, h, 2):
        r = rows[y]
        for x in range(0, w, 2):
            p = tuple(r[x * bpp:x * bpp + 3])
            counts[p] = counts.get(p, 0) + 1
            nonwhite += sum(p) < 720
    total = (w // 2) * (h // 2)

    def near(rgb, tol):
        return sum(n for p, n in counts.items() if all(abs(p[k] - rgb[k]) <= tol for k in range(3)))

    bad = []
    for c in checks:
        if c.startswith('nonwhite>'):
            ok = nonwhite > total * float(c[9:])
        elif c.startswith('colours>'):
            ok = len(counts) > int(c[8:])
        else:
            name, spec = c.split('=', 1)
            colour, least = spec.split('>')
            tol = 6
            if '~' in colour:
                colour, t = colour.split('~')
                tol = int(t)
            rgb = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
            ok = near(rgb, tol) > int(least)
        if not ok:
            bad.append(c)
    print(f'png_check: {path}: {w}x{h}, {len(counts)} colours, {100.0 * nonwhite / total:.1f}% non-white')
    if bad:
        sys.exit(f'{path}: missing: ' + ', '.join(bad))


if __name__ == '__main__':
    main()
