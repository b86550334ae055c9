/* test_tensor_io.c - .npy read/write and ONNX TensorProto .pb read, against
 * files NumPy and onnx.numpy_helper write at test time, files mpx writes read
 * back by NumPy, and broken files that must give a clear error naming the
 * file (and never crash: run it in the sanitizer build too). */
#include "check.h"
#include "mpx_numerics.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define PY "/usr/bin/python3"

static char tmpdir[400];

static const char *tmp_path(const char *name) {
    static char buf[8][600];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, sizeof buf[0], "%s/%s", tmpdir, name);
    return p;
}

static uint32_t bits_of(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static bool write_file(const char *name, const void *data, size_t n) {
    FILE *f = fopen(tmp_path(name), "wb");
    if (!f) return false;
    bool ok = fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

/* A .npy file from its parts: version, header text as given (no padding
 * needed by readers), then data. */
static void make_npy(const char *name, int major, const char *header, const void *data,
                     size_t data_len) {
    unsigned char buf[1024];
    size_t hl = strlen(header), off = major == 1 ? 10 : 12;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    for (size_t i = 0; i < off - 8; i++) buf[8 + i] = (unsigned char)((hl >> (8 * i)) & 0xff);
    memcpy(buf + off, header, hl);
    if (data_len) memcpy(buf + off + hl, data, data_len);
    CHECK_MSG(write_file(name, buf, off + hl + data_len), "cannot write %s", name);
}

/* Reading must fail with status st (any failure if st is MPX_OK), name the
 * file and say needle; out is left alone. */
static void check_bad(bool pb, const char *name, mpx_status st, const char *needle) {
    const char *path = tmp_path(name);
    mpx_value v;
    memset(&v, 0, sizeof v);
    v.n = 12345;
    mpx_error err;
    mpx_error_clear(&err);
    char tname[64] = "untouched";
    mpx_status got = pb ? mpx_pb_read(path, &v, tname, sizeof tname, &err)
                        : mpx_npy_read(path, &v, &err);
    CHECK_MSG(got != MPX_OK && (st == MPX_OK || got == st), "%s: status %s, want %s", name,
              mpx_status_name(got), mpx_status_name(st));
    CHECK_MSG(strcmp(err.file, path) == 0, "%s: error names \"%s\"", name, err.file);
    CHECK_CONTAINS(err.msg, needle);
    CHECK(v.n == 12345 && v.f == NULL && v.i == NULL);
    CHECK(strcmp(tname, "untouched") == 0);
    char line[1700];
    const char *shown = mpx_error_format(&err, line, sizeof line);
    size_t dl = strlen(tmpdir);
    if (strncmp(shown, tmpdir, dl) == 0 && shown[dl] == '/') shown += dl + 1;
    printf("  %s\n", shown);
}

static bool read_npy(const char *name, mpx_value *v) {
    mpx_error err;
    mpx_error_clear(&err);
    mpx_status st = mpx_npy_read(tmp_path(name), v, &err);
    CHECK_MSG(st == MPX_OK, "%s: %s", name, err.msg);
    return st == MPX_OK;
}

static bool shape_is(const mpx_value *v, int rank, const int64_t *dims) {
    if (v->rank != rank) return false;
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (v->dims[i] != dims[i]) return false;
        n *= dims[i];
    }
    return v->n == n;
}

/* ---- round trip through mpx's own writer --------------------------------------- */

static void test_round_trip(void) {
    const float fv[] = {0.0f, -0.0f, 1.5f, -2.25f, INFINITY, -INFINITY, NAN, 0x1p-149f,
                        0x1.fffffep127f, 0.1f, 65504.0f, -1e-30f};
    int64_t d2[2] = {3, 4};
    mpx_value v, back;
    mpx_error err;
    CHECK(mpx_value_alloc(&v, MPX_DT_FLOAT16, 2, d2, &err) == MPX_OK);
    memcpy(v.f, fv, sizeof fv);
    CHECK(mpx_npy_write(tmp_path("rt_f.npy"), NULL, &v, &err) == MPX_OK);
    if (read_npy("rt_f.npy", &back)) {
        /* Float dtypes are written as '<f4': read back as float32. */
        CHECK(back.dtype == MPX_DT_FLOAT && shape_is(&back, 2, d2));
        CHECK(memcmp(back.f, fv, sizeof fv) == 0);
        mpx_value_free(&back);
    }
    mpx_value_free(&v);

    /* The header is NumPy's: version 1.0, padded to 64 bytes, '\n' last. */
    FILE *f = fopen(tmp_path("rt_f.npy"), "rb");
    unsigned char head[128] = {0};
    size_t got = f ? fread(head, 1, sizeof head, f) : 0;
    if (f) fclose(f);
    CHECK(got == 128 && memcmp(head, "\x93NUMPY\x01\x00", 8) == 0);
    size_t hl = (size_t)head[8] | (size_t)head[9] << 8;
    CHECK((10 + hl) % 64 == 0 && hl <= 118 && head[10 + hl - 1] == '\n');
    CHECK(strstr((const char *)head + 10, "'descr': '<f4'") != NULL);
    CHECK(strstr((const char *)head + 10, "'shape': (3, 4)") != NULL);

    const int64_t iv[] = {0, -1, INT64_MIN, INT64_MAX, 1234567890123, 1};
    int64_t d1[1] = {6};
    CHECK(mpx_value_alloc(&v, MPX_DT_BOOL, 1, d1, &err) == MPX_OK);
    memcpy(v.i, iv, sizeof iv);
    CHECK(mpx_npy_write(tmp_path("rt_i.npy"), NULL, &v, &err) == MPX_OK);
    if (read_npy("rt_i.npy", &back)) {
        CHECK(back.dtype == MPX_DT_INT64 && shape_is(&back, 1, d1));
        CHECK(memcmp(back.i, iv, sizeof iv) == 0);
        mpx_value_free(&back);
    }
    mpx_value_free(&v);

    /* Scalar, empty and rank-8 shapes. */
    CHECK(mpx_value_alloc(&v, MPX_DT_FLOAT, 0, NULL, &err) == MPX_OK);
    v.f[0] = -7.0f;
    CHECK(mpx_npy_write(tmp_path("rt_scalar.npy"), NULL, &v, &err) == MPX_OK);
    mpx_value_free(&v);
    if (read_npy("rt_scalar.npy", &back)) {
        CHECK(back.rank == 0 && back.n == 1 && back.f[0] == -7.0f);
        mpx_value_free(&back);
    }
    int64_t d0[2] = {0, 3};
    CHECK(mpx_value_alloc(&v, MPX_DT_INT32, 2, d0, &err) == MPX_OK);
    CHECK(mpx_npy_write(tmp_path("rt_empty.npy"), NULL, &v, &err) == MPX_OK);
    mpx_value_free(&v);
    if (read_npy("rt_empty.npy", &back)) {
        CHECK(back.dtype == MPX_DT_INT64 && shape_is(&back, 2, d0));
        mpx_value_free(&back);
    }
    int64_t d8[8] = {1, 2, 1, 3, 1, 1, 2, 1};
    CHECK(mpx_value_alloc(&v, MPX_DT_FLOAT, 8, d8, &err) == MPX_OK);
    for (int64_t i = 0; i < v.n; i++) v.f[i] = (float)i * 0.25f;
    CHECK(mpx_npy_write(tmp_path("rt_rank8.npy"), NULL, &v, &err) == MPX_OK);
    if (read_npy("rt_rank8.npy", &back)) {
        CHECK(shape_is(&back, 8, d8) && memcmp(back.f, v.f, (size_t)v.n * sizeof *v.f) == 0);
        mpx_value_free(&back);
    }
    mpx_value_free(&v);

    /* A bigger one crosses the reader's and writer's block size. */
    int64_t dbig[1] = {100003};
    CHECK(mpx_value_alloc(&v, MPX_DT_FLOAT, 1, dbig, &err) == MPX_OK);
    for (int64_t i = 0; i < v.n; i++) v.f[i] = (float)i / 7.0f;
    CHECK(mpx_npy_write(tmp_path("rt_big.npy"), NULL, &v, &err) == MPX_OK);
    if (read_npy("rt_big.npy", &back)) {
        CHECK(shape_is(&back, 1, dbig) && memcmp(back.f, v.f, (size_t)v.n * sizeof *v.f) == 0);
        mpx_value_free(&back);
    }
    mpx_value_free(&v);

    /* Writing what cannot be written. */
    mpx_value absent;
    memset(&absent, 0, sizeof absent);
    absent.n = -1;
    mpx_error_clear(&err);
    CHECK(mpx_npy_write(tmp_path("never.npy"), NULL, &absent, &err) == MPX_E_ARG);
    CHECK_CONTAINS(err.msg, "no value");
    CHECK(mpx_value_alloc(&v, MPX_DT_FLOAT, 1, d1, &err) == MPX_OK);
    CHECK(mpx_npy_write(tmp_path("no/such/dir/x.npy"), NULL, &v, &err) == MPX_E_IO);
    CHECK_CONTAINS(err.msg, "does not exist");
    CHECK_CONTAINS(err.msg, "no/such/dir/x.npy");
    /* A file the guard protects, by its name or through a link: refused,
     * left as it was. */
    {
        mpx_file_guard *g = mpx_file_guard_new();
        CHECK(g != NULL);
        const char *kept = tmp_path("kept.npy");
        CHECK(mpx_npy_write(kept, NULL, &v, &err) == MPX_OK);
        CHECK(mpx_file_guard_add(g, kept, "an input", &err) == MPX_OK);
        CHECK(mpx_npy_write(kept, g, &v, &err) == MPX_E_ARG);
        CHECK_CONTAINS(err.msg, "is an input");
        char link[1100];
        snprintf(link, sizeof link, "%s", tmp_path("kept_link.npy"));
        unlink(link);
        CHECK(symlink(kept, link) == 0);
        CHECK(mpx_npy_write(link, g, &v, &err) == MPX_E_ARG);
        CHECK_CONTAINS(err.msg, "a link to it");
        CHECK(mpx_npy_write(tmp_path("free.npy"), g, &v, &err) == MPX_OK);
        mpx_file_guard_free(g);
    }
    v.dims[0] = 7; /* shape no longer holds n */
    CHECK(mpx_npy_write(tmp_path("never.npy"), NULL, &v, &err) == MPX_E_ARG);
    v.dims[0] = 6;
    v.dtype = MPX_DT_STRING;
    CHECK(mpx_npy_write(tmp_path("never.npy"), NULL, &v, &err) == MPX_E_UNSUPPORTED);
    v.dtype = MPX_DT_FLOAT;
    mpx_value_free(&v);
    struct stat sb;
    CHECK(stat(tmp_path("never.npy"), &sb) != 0);
}

/* ---- broken .npy files ------------------------------------------------------------ */

static void test_bad_npy(void) {
    printf("broken .npy files:\n");
    const float ten[11] = {0};
    write_file("empty.npy", "", 0);
    check_bad(false, "empty.npy", MPX_E_PARSE, "not a .npy file");
    write_file("magic.npy", "\x93NUMPX\x01\x00\x10\x00{}              ", 26);
    check_bad(false, "magic.npy", MPX_E_PARSE, "does not start with");
    write_file("text.npy", "hello, world\n", 13);
    check_bad(false, "text.npy", MPX_E_PARSE, "not a .npy file");
    make_npy("version.npy", 4, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", ten, 4);
    check_bad(false, "version.npy", MPX_E_UNSUPPORTED, "version 4.0");

    unsigned char hdr[60];
    memcpy(hdr, "\x93NUMPY\x01\x00\xc8\x00{'descr': '<f4', 'fortran_order'", 42);
    write_file("hdr_trunc.npy", hdr, 42);
    check_bad(false, "hdr_trunc.npy", MPX_E_PARSE, "truncated");
    memcpy(hdr, "\x93NUMPY\x02\x00\xf0\xff\xff\xff{}", 14);
    write_file("hdr_huge.npy", hdr, 14);
    check_bad(false, "hdr_huge.npy", MPX_E_LIMIT, "implausibly large");
    memcpy(hdr, "\x93NUMPY\x02\x00", 8);
    write_file("pre_trunc.npy", hdr, 10);
    check_bad(false, "pre_trunc.npy", MPX_E_PARSE, "truncated");

    const char *h10 = "{'descr': '<f4', 'fortran_order': False, 'shape': (10,), }";
    make_npy("data_trunc.npy", 1, h10, ten, 39);
    check_bad(false, "data_trunc.npy", MPX_E_PARSE, "truncated");
    make_npy("data_extra.npy", 1, h10, ten, 41);
    check_bad(false, "data_extra.npy", MPX_E_PARSE, "extra bytes");
    make_npy("no_data.npy", 1, h10, NULL, 0);
    check_bad(false, "no_data.npy", MPX_E_PARSE, "truncated");
    make_npy("huge_shape.npy", 1,
             "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, "
             "1099511627776), }", ten, 4);
    check_bad(false, "huge_shape.npy", MPX_E_LIMIT, "shape");
    make_npy("over_limit.npy", 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (2147483649,), }",
             ten, 8);
    check_bad(false, "over_limit.npy", MPX_E_LIMIT, "shape");
    make_npy("int_overflow.npy", 1,
             "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }",
             ten, 4);
    check_bad(false, "int_overflow.npy", MPX_E_PARSE, "integer dim");
    make_npy("rank9.npy", 1,
             "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", ten, 4);
    check_bad(false, "rank9.npy", MPX_E_LIMIT, "more than 8 dims");
    make_npy("negdim.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", ten,
             4);
    check_bad(false, "negdim.npy", MPX_E_PARSE, "non-negative integer");
    make_npy("notdict.npy", 1, "[1, 2, 3]", ten, 4);
    check_bad(false, "notdict.npy", MPX_E_PARSE, "a dict");
    make_npy("nokey.npy", 1, "{'descr': '<f4', 'fortran_order': False}", ten, 4);
    check_bad(false, "nokey.npy", MPX_E_PARSE, "'shape'");
    make_npy("maybe.npy", 1, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }", ten, 4);
    check_bad(false, "maybe.npy", MPX_E_PARSE, "True or False");
    make_npy("unterminated.npy", 1, "{'descr': '<f4, 'fortran_order': False, 'shape': (1,)}", ten,
             4);
    check_bad(false, "unterminated.npy", MPX_E_PARSE, "bad .npy header");
    make_npy("trailing.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x", ten,
             4);
    check_bad(false, "trailing.npy", MPX_E_PARSE, "nothing but spaces");
    make_npy("be.npy", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", ten, 4);
    check_bad(false, "be.npy", MPX_E_UNSUPPORTED, "big-endian");
    make_npy("native.npy", 1, "{'descr': '=f4', 'fortran_order': False, 'shape': (1,), }", ten, 4);
    check_bad(false, "native.npy", MPX_E_UNSUPPORTED, "byte order");
    make_npy("fortran.npy", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 2), }", ten,
             8);
    check_bad(false, "fortran.npy", MPX_E_UNSUPPORTED, "Fortran order");
    make_npy("complex.npy", 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", ten, 8);
    check_bad(false, "complex.npy", MPX_E_UNSUPPORTED, "dtype '<c8'");
    make_npy("struct.npy", 1,
             "{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape': (1,), }",
             ten, 8);
    check_bad(false, "struct.npy", MPX_E_PARSE, "structured");
    check_bad(false, "does_not_exist.npy", MPX_E_IO, "cannot open");
    check_bad(false, ".", MPX_E_IO, "not a regular file");

    /* Legal but unusual headers: Python 2's long ints, double quotes, keys
     * in another order, a key mpx does not know, version 2.0. */
    const float two[2] = {1.5f, -3.0f};
    make_npy("py2.npy", 1, "{\"shape\": (2L,), \"fortran_order\": False, \"descr\": \"<f4\"}",
             two, 8);
    make_npy("extra_key.npy", 2,
             "{'descr': '<f4', 'extra': [1, (2, 'x'), {'a': None}, -1.5e3], "
             "'fortran_order': False, 'shape': (2,)}\n", two, 8);
    const char *ok[] = {"py2.npy", "extra_key.npy"};
    for (int k = 0; k < 2; k++) {
        mpx_value v;
        if (!read_npy(ok[k], &v)) continue;
        int64_t d[1] = {2};
        CHECK(v.dtype == MPX_DT_FLOAT && shape_is(&v, 1, d) && memcmp(v.f, two, 8) == 0);
        mpx_value_free(&v);
    }
}

/* ---- files written by NumPy and onnx ---------------------------------------------- */

static const char *gen_script =
    "import sys, io\n"
    "import numpy as np\n"
    "d = sys.argv[1]\n"
    "def save(name, a, **kw):\n"
    "    with open(d + '/' + name, 'wb') as f:\n"
    "        np.lib.format.write_array(f, a, **kw)\n"
    "f4 = np.array([0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 1e-45, 3.4028235e38, 0.1],"
    " dtype='<f4')\n"
    "save('np_f4.npy', f4.reshape(2, 5))\n"
    "save('np_f4_v2.npy', f4.reshape(5, 2), version=(2, 0))\n"
    "save('np_f4_v3.npy', f4.reshape(10, 1, 1), version=(3, 0))\n"
    "save('np_scalar.npy', np.array(3.5, dtype='<f4'))\n"
    "save('np_3d.npy', np.arange(24, dtype='<f4').reshape(2, 3, 4))\n"
    "save('np_empty.npy', np.zeros((0, 3), dtype='<f4'))\n"
    "h = np.arange(65536, dtype='<u2').view('<f2')\n"
    "save('np_f2.npy', h.reshape(256, 256))\n"
    "with np.errstate(all='ignore'):\n"
    "    save('np_f2_as_f4.npy', h.astype('<f4'))\n"
    "    f8 = np.array([0.1, 1e300, -1e-300, 1.0 / 3, -2.5, 16777217.0, np.nan], dtype='<f8')\n"
    "    save('np_f8.npy', f8)\n"
    "    save('np_f8_as_f4.npy', f8.astype('<f4'))\n"
    "save('np_i1.npy', np.array([-128, -1, 0, 127], dtype='<i1'))\n"
    "save('np_i2.npy', np.array([-32768, 32767, 5], dtype='<i2'))\n"
    "save('np_i4.npy', np.array([-2**31, 2**31 - 1, 7], dtype='<i4'))\n"
    "save('np_i8.npy', np.array([-2**63, 2**63 - 1, 0], dtype='<i8'))\n"
    "save('np_u1.npy', np.array([0, 255, 17], dtype='|u1'))\n"
    "save('np_u2.npy', np.array([0, 65535], dtype='<u2'))\n"
    "save('np_u4.npy', np.array([0, 2**32 - 1], dtype='<u4'))\n"
    "save('np_u8.npy', np.array([0, 2**63 - 1], dtype='<u8'))\n"
    "save('np_u8_big.npy', np.array([1, 2**64 - 1], dtype='<u8'))\n"
    "save('np_b1.npy', np.array([[True, False, True]]))\n"
    "save('np_fortran.npy', np.asfortranarray(np.arange(6, dtype='<f4').reshape(2, 3)))\n"
    "save('np_be.npy', np.arange(3, dtype='>f4'))\n"
    "save('np_be_i8.npy', np.arange(3, dtype='>i8'))\n"
    "save('np_c8.npy', np.zeros(2, dtype='<c8'))\n"
    "save('np_str.npy', np.array(['ab', 'c']))\n"
    "save('np_struct.npy', np.zeros(2, dtype=[('a', '<f4'), ('b', '<i2')]))\n"
    "save('np_dt64.npy', np.zeros(2, dtype='<M8[ns]'))\n"
    "try:\n"
    "    import onnx\n"
    "    from onnx import numpy_helper, helper, TensorProto\n"
    "except ImportError:\n"
    "    sys.exit(3)\n"
    "def pb(name, t):\n"
    "    with open(d + '/' + name, 'wb') as f:\n"
    "        f.write(t.SerializeToString())\n"
    "pb('pb_f4.pb', numpy_helper.from_array(f4.reshape(2, 5), 'input_0'))\n"
    "pb('pb_f2.pb', numpy_helper.from_array(np.array([1, -0.5, 65504, 2**-24], dtype='<f2'),"
    " 'half'))\n"
    "pb('pb_f8.pb', numpy_helper.from_array(np.array([0.1, -2.5], dtype='<f8'), 'dbl'))\n"
    "pb('pb_i8.pb', numpy_helper.from_array(np.array([[-5], [2**40]], dtype='<i8'), 'ids'))\n"
    "pb('pb_i4.pb', numpy_helper.from_array(np.array([-7, 9], dtype='<i4'), 'i4'))\n"
    "pb('pb_b.pb', numpy_helper.from_array(np.array([True, False]), 'mask'))\n"
    "pb('pb_u1.pb', numpy_helper.from_array(np.array([0, 200, 255], dtype='|u1'), 'bytes'))\n"
    "pb('pb_scalar.pb', numpy_helper.from_array(np.array(2.75, dtype='<f4'), 'scalar'))\n"
    "pb('pb_empty.pb', numpy_helper.from_array(np.zeros((0, 4), dtype='<f4'), 'empty'))\n"
    "pb('pb_typed.pb', helper.make_tensor('typed', TensorProto.FLOAT, [3], [1.0, 2.5, -3.0]))\n"
    "pb('pb_typed_i8.pb', helper.make_tensor('ti8', TensorProto.INT64, [2], [-1, 2**50]))\n"
    "pb('pb_bf16.pb', helper.make_tensor('bf', TensorProto.BFLOAT16, [2], [1.5, -2.0]))\n"
    "pb('pb_str.pb', helper.make_tensor('s', TensorProto.STRING, [2], [b'a', b'bc']))\n"
    "t = numpy_helper.from_array(np.ones(4, dtype='<f4'), 'short')\n"
    "t.dims[0] = 5\n"
    "pb('pb_short.pb', t)\n"
    "t = numpy_helper.from_array(np.ones(4, dtype='<f4'), 'huge')\n"
    "t.dims[:] = [2**40, 2**40]\n"
    "pb('pb_huge.pb', t)\n";

/* NumPy reads what mpx wrote. */
static const char *check_script =
    "import sys\n"
    "import numpy as np\n"
    "d = sys.argv[1]\n"
    "a = np.load(d + '/rt_f.npy')\n"
    "assert a.dtype == np.float32 and a.shape == (3, 4), (a.dtype, a.shape)\n"
    "want = np.array([0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 2.0**-149,\n"
    "                 3.4028234663852886e38, 0.1, 65504, -1e-30], dtype='<f4').reshape(3, 4)\n"
    "assert (a.view('<u4') == want.view('<u4')).all()\n"
    "b = np.load(d + '/rt_i.npy')\n"
    "assert b.dtype == np.int64 and b.shape == (6,)\n"
    "assert list(b) == [0, -1, -2**63, 2**63 - 1, 1234567890123, 1]\n"
    "s = np.load(d + '/rt_scalar.npy')\n"
    "assert s.shape == () and s == -7.0\n"
    "e = np.load(d + '/rt_empty.npy')\n"
    "assert e.shape == (0, 3) and e.dtype == np.int64\n"
    "r = np.load(d + '/rt_rank8.npy')\n"
    "assert r.shape == (1, 2, 1, 3, 1, 1, 2, 1) and r.ravel()[11] == 2.75\n"
    "print('numpy read back mpx files: ok')\n";

static int run_python(const char *script_name, const char *script) {
    CHECK(write_file(script_name, script, strlen(script)));
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%s '%s' '%s'", PY, tmp_path(script_name), tmpdir);
    fflush(stdout);
    int rc = system(cmd);
    return rc == -1 ? -1 : WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void test_numpy_files(void) {
    mpx_value v, w;
    const float f4[10] = {0.0f, -0.0f, 1.5f, -2.25f, INFINITY, -INFINITY, NAN, 0x1p-149f,
                          0x1.fffffep127f, 0.1f};
    const char *f4_files[] = {"np_f4.npy", "np_f4_v2.npy", "np_f4_v3.npy"};
    const int f4_rank[] = {2, 2, 3};
    const int64_t f4_dims[3][3] = {{2, 5}, {5, 2}, {10, 1, 1}};
    for (int k = 0; k < 3; k++) {
        if (!read_npy(f4_files[k], &v)) continue;
        CHECK_MSG(v.dtype == MPX_DT_FLOAT && shape_is(&v, f4_rank[k], f4_dims[k]), "%s shape",
                  f4_files[k]);
        int bad = 0;
        for (int i = 0; i < 10; i++) {
            bool nan = isnan(f4[i]);
            if (nan ? !isnan(v.f[i]) : bits_of(v.f[i]) != bits_of(f4[i])) bad++;
        }
        CHECK_MSG(bad == 0, "%s: %d values differ", f4_files[k], bad);
        mpx_value_free(&v);
    }
    if (read_npy("np_scalar.npy", &v)) {
        CHECK(v.rank == 0 && v.n == 1 && v.f[0] == 3.5f);
        mpx_value_free(&v);
    }
    if (read_npy("np_3d.npy", &v)) {
        int64_t d[3] = {2, 3, 4};
        CHECK(shape_is(&v, 3, d) && v.f[0] == 0.0f && v.f[23] == 23.0f && v.f[13] == 13.0f);
        mpx_value_free(&v);
    }
    if (read_npy("np_empty.npy", &v)) {
        int64_t d[2] = {0, 3};
        CHECK(shape_is(&v, 2, d) && v.n == 0);
        mpx_value_free(&v);
    }

    /* float16: every pattern against NumPy's own conversion to float32. */
    if (read_npy("np_f2.npy", &v)) {
        if (read_npy("np_f2_as_f4.npy", &w)) {
            int64_t d[2] = {256, 256};
            CHECK(v.dtype == MPX_DT_FLOAT16 && shape_is(&v, 2, d) && w.n == 65536);
            int bad = 0;
            for (int64_t i = 0; i < 65536 && w.n == 65536; i++) {
                bool nan = isnan(w.f[i]);
                if (nan ? !(isnan(v.f[i]) && signbit(v.f[i]) == signbit(w.f[i]))
                        : bits_of(v.f[i]) != bits_of(w.f[i]))
                    bad++;
            }
            CHECK_MSG(bad == 0, "float16 .npy: %d of 65536 values differ from NumPy's", bad);
            mpx_value_free(&w);
        }
        mpx_value_free(&v);
    }
    /* float64 is read as float64, exactly; held as fp32 (a float32 input
     * given a <f8 file) it rounds as NumPy's astype does. */
    if (read_npy("np_f8.npy", &v)) {
        const double f8[6] = {0.1, 1e300, -1e-300, 1.0 / 3, -2.5, 16777217.0};
        CHECK(v.dtype == MPX_DT_DOUBLE && v.n == 7 && v.d && !v.f);
        for (int i = 0; i < 6 && v.n == 7 && v.d; i++) CHECK_MSG(v.d[i] == f8[i], "float64 element %d: %a", i, v.d[i]);
        CHECK(v.n == 7 && v.d && isnan(v.d[6]));
        mpx_error e = {0};
        CHECK(mpx_value_hold_as(&v, MPX_DT_FLOAT, &e) == MPX_OK && v.dtype == MPX_DT_FLOAT && v.f && !v.d);
        if (read_npy("np_f8_as_f4.npy", &w)) {
            CHECK(v.n == 7 && w.n == 7);
            for (int i = 0; i < 7 && v.n == 7 && w.n == 7 && v.f; i++)
                CHECK_MSG(isnan(w.f[i]) ? isnan(v.f[i]) : bits_of(v.f[i]) == bits_of(w.f[i]),
                          "float64 element %d: %a vs NumPy %a", i, (double)v.f[i],
                          (double)w.f[i]);
            mpx_value_free(&w);
        }
        mpx_value_free(&v);
    }

    struct {
        const char *file;
        mpx_dtype dt;
        int n;
        int64_t want[4];
    } ints[] = {
        {"np_i1.npy", MPX_DT_INT8, 4, {-128, -1, 0, 127}},
        {"np_i2.npy", MPX_DT_INT16, 3, {-32768, 32767, 5}},
        {"np_i4.npy", MPX_DT_INT32, 3, {INT32_MIN, INT32_MAX, 7}},
        {"np_i8.npy", MPX_DT_INT64, 3, {INT64_MIN, INT64_MAX, 0}},
        {"np_u1.npy", MPX_DT_UINT8, 3, {0, 255, 17}},
        {"np_u2.npy", MPX_DT_UINT16, 2, {0, 65535}},
        {"np_u4.npy", MPX_DT_UINT32, 2, {0, 4294967295}},
        {"np_u8.npy", MPX_DT_UINT64, 2, {0, INT64_MAX}},
        {"np_b1.npy", MPX_DT_BOOL, 3, {1, 0, 1}},
    };
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++) {
        if (!read_npy(ints[k].file, &v)) continue;
        CHECK_MSG(v.dtype == ints[k].dt && v.n == ints[k].n && v.i, "%s: dtype %s, %lld elements",
                  ints[k].file, mpx_dtype_name(v.dtype), (long long)v.n);
        if (v.n == ints[k].n && v.i)
            CHECK_MSG(memcmp(v.i, ints[k].want, (size_t)v.n * sizeof *v.i) == 0,
                      "%s: values differ", ints[k].file);
        mpx_value_free(&v);
    }

    printf("NumPy files mpx refuses:\n");
    check_bad(false, "np_u8_big.npy", MPX_E_UNSUPPORTED, "beyond int64");
    check_bad(false, "np_fortran.npy", MPX_E_UNSUPPORTED, "Fortran order");
    check_bad(false, "np_be.npy", MPX_E_UNSUPPORTED, "big-endian");
    check_bad(false, "np_be_i8.npy", MPX_E_UNSUPPORTED, "big-endian");
    check_bad(false, "np_c8.npy", MPX_E_UNSUPPORTED, "'<c8'");
    check_bad(false, "np_str.npy", MPX_E_UNSUPPORTED, "'<U2'");
    check_bad(false, "np_struct.npy", MPX_E_PARSE, "structured");
    check_bad(false, "np_dt64.npy", MPX_E_UNSUPPORTED, "'<M8[ns]'");

    /* A truncated copy of a good file. */
    FILE *f = fopen(tmp_path("np_3d.npy"), "rb");
    unsigned char buf[512];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) fclose(f);
    CHECK(n == 128 + 96);
    write_file("np_3d_cut.npy", buf, n - 5);
    check_bad(false, "np_3d_cut.npy", MPX_E_PARSE, "truncated");
}

static bool read_pb(const char *file, mpx_value *v, char *name, size_t n) {
    mpx_error err;
    mpx_error_clear(&err);
    mpx_status st = mpx_pb_read(tmp_path(file), v, name, n, &err);
    CHECK_MSG(st == MPX_OK, "%s: %s", file, err.msg);
    return st == MPX_OK;
}

static void test_pb_files(void) {
    mpx_value v;
    char name[64];
    if (read_pb("pb_f4.pb", &v, name, sizeof name)) {
        int64_t d[2] = {2, 5};
        CHECK(v.dtype == MPX_DT_FLOAT && shape_is(&v, 2, d) && strcmp(name, "input_0") == 0);
        CHECK(v.f[2] == 1.5f && bits_of(v.f[1]) == 0x80000000u && isnan(v.f[6]) &&
              v.f[7] == 0x1p-149f && v.f[4] == INFINITY);
        mpx_value_free(&v);
    }
    /* The name is cut to fit, and may be left out. */
    char small[4];
    if (read_pb("pb_f4.pb", &v, small, sizeof small)) {
        CHECK(strcmp(small, "inp") == 0);
        mpx_value_free(&v);
    }
    if (read_pb("pb_f4.pb", &v, NULL, 0)) mpx_value_free(&v);
    if (read_pb("pb_f2.pb", &v, name, sizeof name)) {
        CHECK(v.dtype == MPX_DT_FLOAT16 && v.n == 4 && strcmp(name, "half") == 0);
        CHECK(v.f[0] == 1.0f && v.f[1] == -0.5f && v.f[2] == 65504.0f && v.f[3] == 0x1p-24f);
        mpx_value_free(&v);
    }
    if (read_pb("pb_f8.pb", &v, name, sizeof name)) {
        CHECK(v.dtype == MPX_DT_DOUBLE && v.n == 2 && v.d && v.d[0] == 0.1 && v.d[1] == -2.5);
        mpx_value_free(&v);
    }
    if (read_pb("pb_i8.pb", &v, name, sizeof name)) {
        int64_t d[2] = {2, 1};
        CHECK(v.dtype == MPX_DT_INT64 && shape_is(&v, 2, d) && v.i[0] == -5 &&
              v.i[1] == (int64_t)1 << 40);
        mpx_value_free(&v);
    }
    if (read_pb("pb_i4.pb", &v, name, sizeof name)) {
        CHECK(v.dtype == MPX_DT_INT32 && v.n == 2 && v.i[0] == -7 && v.i[1] == 9);
        mpx_value_free(&v);
    }
    if (read_pb("pb_b.pb", &v, name, sizeof name)) {
        CHECK(v.dtype == MPX_DT_BOOL && v.n == 2 && v.i[0] == 1 && v.i[1] == 0);
        mpx_value_free(&v);
    }
    if (read_pb("pb_u1.pb", &v, name, sizeof name)) {
        CHECK(v.dtype == MPX_DT_UINT8 && v.n == 3 && v.i[1] == 200 && v.i[2] == 255);
        mpx_value_free(&v);
    }
    if (read_pb("pb_scalar.pb", &v, name, sizeof name)) {
        CHECK(v.rank == 0 && v.n == 1 && v.f[0] == 2.75f && strcmp(name, "scalar") == 0);
        mpx_value_free(&v);
    }
    if (read_pb("pb_empty.pb", &v, name, sizeof name)) {
        int64_t d[2] = {0, 4};
        CHECK(shape_is(&v, 2, d) && v.n == 0);
        mpx_value_free(&v);
    }
    if (read_pb("pb_typed.pb", &v, name, sizeof name)) {
        CHECK(v.dtype == MPX_DT_FLOAT && v.n == 3 && v.f[1] == 2.5f && v.f[2] == -3.0f);
        mpx_value_free(&v);
    }
    if (read_pb("pb_typed_i8.pb", &v, name, sizeof name)) {
        CHECK(v.dtype == MPX_DT_INT64 && v.n == 2 && v.i[0] == -1 && v.i[1] == (int64_t)1 << 50);
        mpx_value_free(&v);
    }
    if (read_pb("pb_bf16.pb", &v, name, sizeof name)) {
        CHECK(v.dtype == MPX_DT_BFLOAT16 && v.n == 2 && v.f[0] == 1.5f && v.f[1] == -2.0f);
        mpx_value_free(&v);
    }

    printf("broken .pb files:\n");
    check_bad(true, "pb_str.pb", MPX_E_UNSUPPORTED, "numeric tensors only");
    check_bad(true, "pb_short.pb", MPX_E_INVALID, "raw_data has 16 bytes");
    check_bad(true, "pb_huge.pb", MPX_E_LIMIT, "huge");
    write_file("pb_empty_file.pb", "", 0);
    check_bad(true, "pb_empty_file.pb", MPX_E_PARSE, "empty");
    check_bad(true, "np_f4.npy", MPX_OK, "");
    check_bad(true, "missing.pb", MPX_E_IO, "cannot open");
    FILE *f = fopen(tmp_path("pb_f4.pb"), "rb");
    unsigned char buf[256];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) fclose(f);
    CHECK(n > 40);
    write_file("pb_cut.pb", buf, n / 2);
    check_bad(true, "pb_cut.pb", MPX_E_PARSE, "does not decode");
}

/* A container read must fail with status st, name the file and say needle. */
static void check_bad_container(const char *name, bool optional, mpx_status st, const char *needle) {
    mpx_value v;
    mpx_error err;
    mpx_error_clear(&err);
    mpx_status got = mpx_pb_read_container(tmp_path(name), optional, &v, NULL, 0, &err);
    CHECK_MSG(got == st, "%s: status %s, want %s", name, mpx_status_name(got), mpx_status_name(st));
    CHECK_CONTAINS(err.msg, needle);
    CHECK_CONTAINS(mpx_error_format(&err, (char[1700]){0}, 1700), name);
    if (got == MPX_OK) mpx_value_free(&v);
}

/* SequenceProto and OptionalProto files, written by hand on the wire: an
 * optional holding a sequence of one 2-value tensor, and the malformed
 * nestings, refused by name. */
static void test_containers(void) {
    /* TensorProto {dims 2, data_type FLOAT, float_data [1, 2]} */
    const unsigned char t[] = {0x08, 0x02, 0x10, 0x01, 0x22, 0x08, 0, 0, 0x80, 0x3f, 0, 0, 0, 0x40};
    unsigned char seq[64], opt[96];
    size_t ns = 0, no = 0;
    seq[ns++] = 0x10, seq[ns++] = 0x01, seq[ns++] = 0x1a, seq[ns++] = (unsigned char)sizeof t; /* elem_type TENSOR */
    memcpy(seq + ns, t, sizeof t), ns += sizeof t;
    opt[no++] = 0x0a, opt[no++] = 0x01, opt[no++] = 'o', opt[no++] = 0x10, opt[no++] = 0x03; /* "o", SEQUENCE */
    opt[no++] = 0x2a, opt[no++] = (unsigned char)ns;
    memcpy(opt + no, seq, ns), no += ns;
    write_file("opt_seq.pb", opt, no);
    mpx_value v;
    mpx_error err;
    mpx_error_clear(&err);
    char name[16] = "";
    mpx_status st = mpx_pb_read_container(tmp_path("opt_seq.pb"), true, &v, name, sizeof name, &err);
    CHECK_MSG(st == MPX_OK, "opt_seq.pb: %s", err.msg);
    if (st == MPX_OK) {
        CHECK(v.is_seq && v.is_opt && v.n == 1 && strcmp(name, "o") == 0);
        CHECK(v.seq && v.seq[0].is_seq && !v.seq[0].is_opt && v.seq[0].n == 1);
        CHECK(v.seq && v.seq[0].seq && v.seq[0].seq[0].n == 2 && v.seq[0].seq[0].f[1] == 2.0f);
        mpx_value_free(&v);
    }
    printf("broken containers:\n");
    /* an optional of kind TENSOR that holds a sequence */
    const unsigned char kind[] = {0x10, 0x01, 0x2a, 0x00};
    write_file("opt_kind.pb", kind, sizeof kind);
    check_bad_container("opt_kind.pb", true, MPX_E_INVALID, "an optional of elements of kind 1 holding a sequence");
    /* an optional holding a sequence and a tensor */
    unsigned char both[96];
    size_t nb = 0;
    both[nb++] = 0x10, both[nb++] = 0x03, both[nb++] = 0x1a, both[nb++] = (unsigned char)sizeof t;
    memcpy(both + nb, t, sizeof t), nb += sizeof t;
    both[nb++] = 0x2a, both[nb++] = (unsigned char)ns;
    memcpy(both + nb, seq, ns), nb += ns;
    write_file("opt_both.pb", both, nb);
    check_bad_container("opt_both.pb", true, MPX_E_INVALID, "an optional holding both a sequence and 1 tensor");
    /* a sequence of sequences (only an optional may hold one) */
    const unsigned char nested[] = {0x10, 0x03, 0x2a, 0x00};
    write_file("seq_nested.pb", nested, sizeof nested);
    check_bad_container("seq_nested.pb", false, MPX_E_UNSUPPORTED, "sparse tensors, sequences, maps or optionals");
}

static void make_dir(const char *d) {
    char tmp[sizeof tmpdir];
    snprintf(tmp, sizeof tmp, "%s", d);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        mkdir(tmp, 0755);
        *p = '/';
    }
    mkdir(tmp, 0755);
}

int main(void) {
    const char *t = getenv("MPX_TMP");
    if (t && *t) snprintf(tmpdir, sizeof tmpdir, "%s", t);
    else snprintf(tmpdir, sizeof tmpdir, "/tmp/mpx_test_tensor_io");
    make_dir(tmpdir);

    test_round_trip();
    test_bad_npy();

    int rc = run_python("gen.py", gen_script);
    if (rc == 3) {
        printf("SKIP the .pb files: %s has numpy but not onnx\n", PY);
        rc = 0;
    }
    if (rc != 0) {
        /* Only a missing NumPy is a reason to skip; say so, loudly. */
        int has_numpy = system(PY " -c 'import numpy' 2>/dev/null");
        if (has_numpy != 0) {
            printf("SKIP NumPy-written files: %s cannot import numpy\n", PY);
            return check_report("test_tensor_io");
        }
        CHECK_MSG(0, "the generator script failed (exit %d)", rc);
        return check_report("test_tensor_io");
    }
    test_numpy_files();
    FILE *probe = fopen(tmp_path("pb_f4.pb"), "rb");
    if (probe) {
        fclose(probe);
        test_pb_files();
    }
    test_containers();
    CHECK_MSG(run_python("check.py", check_script) == 0, "NumPy could not read mpx's files");
    return check_report("test_tensor_io");
}
