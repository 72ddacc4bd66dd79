"""Writes Zarr v2 arrays with zarr-python 2 for tests/interop/zarr.rs.

Usage: zarr_interop_write.py OUT_DIR

OUT_DIR becomes a zarr group holding one array per case, and OUT_DIR/manifest.json lists
the cases: for readable ones the file holding the expected bytes (zarr-python's
`a[:]` converted to little-endian, `.tobytes()`), the row size, and expected bytes of some
fields; for unreadable ones a substring the error must contain.
"""
import json
import os
import sys

import numcodecs
import numpy as np
import zarr

out = sys.argv[1]
root = zarr.open_group(out, mode="w")
manifest = []

AGENT = [
    ("centroid", "<f8", (2,)),
    ("extent", "<f4", (3,)),
    ("yaw", "<f4"),
    ("velocity", "<f4", (2,)),
    ("track_id", "<u8"),
    ("label_probabilities", "<f4", (17,)),
]
NESTED = [
    ("id", "<u4"),
    ("pos", "<f8", (3,)),
    ("inner", [("a", "<i2"), ("b", ">f4", (2, 2))]),
    ("grid", [("x", "u1"), ("y", "<i4")], (2,)),
    ("name", "S3"),
    ("flag", "?"),
]
BIG = [("a", ">i8"), ("b", ">f4", (2,)), ("s", ">U3"), ("c", "<u2")]

rng = np.random.default_rng(12345)


def fill_random(a):
    """Deterministic, compressible-but-not-trivial contents for any dtype."""
    if a.dtype.names:
        for n in a.dtype.names:
            fill_random(a[n])
        return
    base = a.dtype.base if a.dtype.subdtype else a.dtype
    flat = a.reshape(-1) if a.ndim else a.reshape(1)
    n = flat.size
    k = base.kind
    if k == "f":
        flat[...] = np.round(rng.normal(0, 100, n), 2).astype(base)
    elif k in "Mm":
        # Counts of units across the whole range NaT-free i8 allows, plus NaT itself.
        flat.view("i8")[...] = rng.integers(-(2**62), 2**62, n)
        flat[::7] = np.datetime64("NaT") if k == "M" else np.timedelta64("NaT")
    elif k == "c":
        flat[...] = (rng.normal(0, 100, n) + 1j * rng.normal(0, 100, n)).astype(base)
    elif k in "iu":
        info = np.iinfo(base)
        flat[...] = rng.integers(max(info.min, -5000), min(info.max, 5000), n, endpoint=True).astype(base)
    elif k == "b":
        flat[...] = rng.integers(0, 2, n).astype(bool)
    elif k == "U":
        words = ["", "a", "héllo", "日本", "zzzzzzzzzz", "x\u0001y"]
        flat[...] = [words[i % len(words)] for i in rng.integers(0, 99, n)]
    elif k == "S":
        words = [b"", b"ab", b"\x00\xffz", b"xyzxyzxyz"]
        flat[...] = [words[i % len(words)] for i in rng.integers(0, 99, n)]
    else:
        raise ValueError(k)


def le(x):
    return x.astype(x.dtype.newbyteorder("<"))


def save(name, expected, row_elems=None, fields=(), note=""):
    path = os.path.join(out, name + ".expected")
    with open(path, "wb") as f:
        f.write(le(expected).tobytes())
    entry = {"name": name, "expected": name + ".expected", "note": note}
    entry["rows"] = int(expected.shape[0]) if expected.ndim else 1
    fexp = {}
    for fld in fields:
        v = expected
        for part in fld.split("."):
            v = v[part]
        fp = os.path.join(out, f"{name}.{fld}.expected")
        with open(fp, "wb") as f:
            f.write(le(np.ascontiguousarray(v)).tobytes())
        fexp[fld] = f"{name}.{fld}.expected"
    entry["fields"] = fexp
    manifest.append(entry)


def case(name, shape, chunks, dtype, fields=(), **kw):
    a = root.create_dataset(name, shape=shape, chunks=chunks, dtype=dtype, **kw)
    data = np.zeros(shape, dtype=dtype)
    fill_random(data)
    a[...] = data
    save(name, a[...], fields=fields, note=str(kw))
    return a


# Every compressor / shuffle combination, on a plain and an L5Kit-like structured array.
compressors = {}
for cname in ["blosclz", "lz4", "lz4hc", "zlib", "zstd"]:
    for shuffle in [0, 1, 2]:
        compressors[f"blosc_{cname}_s{shuffle}"] = numcodecs.Blosc(cname=cname, clevel=5, shuffle=shuffle)
compressors.update(
    zstd=numcodecs.Zstd(level=3),
    zlib=numcodecs.Zlib(level=5),
    gzip=numcodecs.GZip(level=5),
    lz4=numcodecs.LZ4(),
    bz2=numcodecs.BZ2(level=5),
    lzma_xz=numcodecs.LZMA(),
    lzma_alone=numcodecs.LZMA(format=2, preset=3),
    lzma_raw=numcodecs.LZMA(format=3, filters=[dict(id=3, dist=4), dict(id=0x21, preset=1)]),
    lzma_raw1=numcodecs.LZMA(format=3, filters=[dict(id=0x4000000000000001, preset=2, lc=3, lp=1, pb=1)]),
    none=None,
)
for cid, comp in compressors.items():
    # Every compressor also with Fortran order in 2 and 3 dimensions, and under a filter.
    case(f"c_{cid}_f4_2d_F", (13, 7), (5, 3), "<f4", order="F", compressor=comp)
    case(f"c_{cid}_i2_3d_F_delta", (6, 5, 4), (4, 2, 3), ">i2", order="F", compressor=comp,
         filters=[numcodecs.Delta(dtype=">i2")])
    case(f"c_{cid}_f8", (10007,), (1000,), "<f8", compressor=comp)
    case(f"c_{cid}_agents", (2503,), (1000,), AGENT, fields=("track_id", "centroid", "label_probabilities"), compressor=comp)
    case(f"c_{cid}_u2", (3001,), (1024,), "<u2", compressor=comp)

# numcodecs' LZMA FORMAT_AUTO (0) only decodes: written as .xz and as .lzma, then the
# .zarray says 0, as a user's config may.
for fmt in [1, 2]:
    a = case(f"lzma_auto_from_{fmt}", (3001,), (1024,), "<u4", compressor=numcodecs.LZMA(format=fmt, preset=1))
    meta_path = os.path.join(out, f"lzma_auto_from_{fmt}", ".zarray")
    meta = json.load(open(meta_path))
    meta["compressor"]["format"] = 0
    json.dump(meta, open(meta_path, "w"))

# Odd chunkings.
case("odd_2d", (37, 23), (10, 7), "<i2")
case("odd_2d_rows", (37, 23), (10, 23), "<f4")
case("odd_3d", (5, 6, 7), (2, 4, 3), "|u1")
case("odd_chunk_bigger_than_shape", (5,), (10,), "<i8")
case("odd_2d_struct", (9, 4), (4, 3), NESTED, fields=("id", "inner.a"))
case("dimsep_slash", (17, 9), (5, 4), "<u4", dimension_separator="/")
case("dimsep_slash_1d", (50,), (7,), "<i4", dimension_separator="/")
case("zero_d", (), (), "<f8")
case("empty", (0,), (5,), "<f4")

# Scalar dtypes, big-endian, strings.
for dt in ["|b1", "|i1", "|u1", "<i2", "<i4", "<i8", "<u4", "<u8", "<f2", "<f4", ">i2", ">i4", ">i8", ">u2", ">u8", ">f2", ">f4", ">f8", "<U7", ">U4", "|S5"]:
    safe = dt.replace("<", "lt_").replace(">", "gt_").replace("|", "na_")
    case(f"dt_{safe}", (257,), (50,), dt)

# Complex (real and imaginary halves, each byte-swapped on its own when big-endian; c16 is an
# item size the F-order copy has no fixed-width path for) and datetime64/timedelta64 (i8
# counts, the unit in the dtype): C and F order, 1-3 dimensions. `dtype_str` is numpy's name
# for the dtype, which `info` must show.
for dt in ["<c8", ">c16", "<M8[ns]", ">m8[10ms]"]:
    safe = dt.replace("<", "lt_").replace(">", "gt_").replace("[", "_").replace("]", "")
    for order in "CF":
        for nd, (shape, chunks) in enumerate([((23,), (5,)), ((7, 9), (3, 4)), ((4, 5, 6), (3, 2, 4))], 1):
            a = case(f"dt_{safe}_{order}_{nd}d", shape, chunks, dt, order=order)
            manifest[-1]["dtype_str"] = a.dtype.str

# Structured: nesting, sub-arrays, big-endian fields.
case("struct_nested", (301,), (64,), NESTED, fields=("id", "pos", "inner.a", "inner.b", "name", "flag"))
case("struct_big", (200,), (33,), BIG, fields=("a", "b", "s", "c"), compressor=numcodecs.Blosc("zstd", 3, 2))

# Missing chunks read as fill_value.
a = root.create_dataset("missing_i4", shape=(100,), chunks=(10,), dtype="<i4", fill_value=-7, write_empty_chunks=False)
a[15:25] = np.arange(10)
a[50:60] = -7  # all fill: not stored
save("missing_i4", a[:])
a = root.create_dataset("missing_f8_nan", shape=(40,), chunks=(8,), dtype=">f8", fill_value=np.nan, write_empty_chunks=False)
a[3:5] = [1.5, -2.25]
save("missing_f8_nan", a[:])
a = root.create_dataset("missing_f2", shape=(40,), chunks=(8,), dtype="<f2", fill_value=1.5, write_empty_chunks=False)
a[30] = 7
save("missing_f2", a[:])
a = root.create_dataset("missing_u7", shape=(30,), chunks=(7,), dtype="<U4", fill_value="ab", write_empty_chunks=False)
a[0] = "xyz"
save("missing_u7", a[:])
fv = np.zeros((), dtype=AGENT)
fv["centroid"] = [1.0, -2.0]
fv["track_id"] = 77
fv["label_probabilities"][3] = 0.5
a = root.create_dataset("missing_struct", shape=(50,), chunks=(16,), dtype=AGENT, fill_value=fv[()], write_empty_chunks=False)
part = np.zeros(5, dtype=AGENT)
fill_random(part)
a[20:25] = part
save("missing_struct", a[:], fields=("track_id",))
a = root.create_dataset("missing_big_struct", shape=(20,), chunks=(6,), dtype=BIG, fill_value=np.array((5, [1.0, 2.0], "q", 9), dtype=BIG)[()], write_empty_chunks=False)
a[7] = (1, [3.0, 4.0], "abc", 2)
save("missing_big_struct", a[:], fields=("a", "s"))
# fill_value None: zarr-python leaves missing regions uninitialised; we define them as zeros.
a = root.create_dataset("missing_null", shape=(30,), chunks=(10,), dtype="<i8", fill_value=None)
a[10:20] = np.arange(10) + 1
exp = np.zeros(30, dtype="<i8")
exp[10:20] = np.arange(10) + 1
save("missing_null", exp)
# Complex fill values are stored as [real, imaginary] and read back as re + 1j * im: with
# 1.5-inf*j the real part of the fill turns NaN; with [-0.0, -0.0] (zarr-python writes 0.0 for
# it, so the .zarray is edited) the imaginary part turns +0.0.
a = root.create_dataset("missing_c16", shape=(20,), chunks=(6,), dtype=">c16", fill_value=complex(1.5, -np.inf), write_empty_chunks=False)
a[7] = 3 - 4j
save("missing_c16", a[:])
manifest[-1]["dtype_str"] = a.dtype.str
a = root.create_dataset("missing_c8_neg_zero", shape=(3, 10), chunks=(2, 4), dtype="<c8", fill_value=0, order="F", write_empty_chunks=False)
a[1, 5] = 2 + 1j
meta_path = os.path.join(out, "missing_c8_neg_zero", ".zarray")
meta = json.load(open(meta_path))
meta["fill_value"] = [-0.0, -0.0]
json.dump(meta, open(meta_path, "w"))
save("missing_c8_neg_zero", zarr.open_array(os.path.join(out, "missing_c8_neg_zero"), mode="r")[:])
# NaT fill: zarr-python stores it as the i8 count (-2**63).
a = root.create_dataset("missing_nat", shape=(20, 3), chunks=(6, 2), dtype="<M8[s]", fill_value=np.datetime64("NaT"), write_empty_chunks=False)
a[7, 1] = np.datetime64("2026-11-25T06:30:00")
save("missing_nat", a[:])
manifest[-1]["dtype_str"] = a.dtype.str
a = root.create_dataset("missing_2d", shape=(10, 10), chunks=(3, 4), dtype="<i2", fill_value=3, write_empty_chunks=False)
a[4:6, 5:9] = 11
save("missing_2d", a[:])

# F order: chunks stored in Fortran order, read in C order; edge chunks, 2-3 dimensions,
# structured and big-endian elements, compressed and missing chunks.
case("order_f_1d", (40,), (16,), "<i4", order="F")
case("order_f_2d", (37, 23), (10, 7), "<i4", order="F")
case("order_f_2d_blosc", (101, 13), (16, 5), ">f8", order="F", compressor=numcodecs.Blosc("lz4", 5, 1))
case("order_f_3d", (5, 6, 7), (2, 4, 3), "<u2", order="F", compressor=numcodecs.Zstd())
case("order_f_struct", (9, 4), (4, 3), NESTED, fields=("id", "inner.a"), order="F")
a = root.create_dataset("order_f_missing", shape=(10, 10), chunks=(3, 4), dtype="<i2", fill_value=3, order="F", write_empty_chunks=False)
a[4:6, 5:9] = np.arange(8).reshape(2, 4)
save("order_f_missing", a[:])

# Filters, decoded in reverse after the compressor, each as numcodecs decodes it.
data_f8 = np.round(rng.normal(0, 100, 3000), 3)
filtered = {
    "delta_i4": ("<i4", np.cumsum(rng.integers(-3, 4, 3000)).astype("<i4"), [numcodecs.Delta(dtype="<i4")]),
    "delta_i4_as_i2": ("<i4", np.cumsum(rng.integers(-3, 4, 3000)).astype("<i4"), [numcodecs.Delta(dtype="<i4", astype="<i2")]),
    "delta_f8": ("<f8", data_f8, [numcodecs.Delta(dtype="<f8")]),
    "fixedscaleoffset": ("<f8", data_f8, [numcodecs.FixedScaleOffset(offset=1000, scale=10, dtype="<f8", astype="<u2")]),
    "fixedscaleoffset_f4": ("<f4", data_f8.astype("<f4"), [numcodecs.FixedScaleOffset(offset=-3, scale=7, dtype="<f4", astype="<i4")]),
    "quantize": ("<f8", data_f8, [numcodecs.Quantize(digits=2, dtype="<f8")]),
    "quantize_f4": ("<f8", data_f8, [numcodecs.Quantize(digits=1, dtype="<f8", astype="<f4")]),
    "astype": ("<f8", data_f8, [numcodecs.AsType(encode_dtype="<f4", decode_dtype="<f8")]),
    "astype_int": ("<i8", np.arange(3000, dtype="<i8") - 1500, [numcodecs.AsType(encode_dtype="<i2", decode_dtype="<i8")]),
    "packbits": ("|b1", rng.integers(0, 2, 3001).astype(bool), [numcodecs.PackBits()]),
    "shuffle": ("<f8", data_f8, [numcodecs.Shuffle(elementsize=8)]),
    "bitround": ("<f4", data_f8.astype("<f4"), [numcodecs.BitRound(keepbits=10)]),
    "chain_delta_shuffle": (">i8", np.cumsum(rng.integers(0, 9, 3000)).astype(">i8"), [numcodecs.Delta(dtype=">i8"), numcodecs.Shuffle(elementsize=8)]),
}
for name, (dt, values, filters) in filtered.items():
    a = root.create_dataset(f"filter_{name}", shape=values.shape, chunks=(512,), dtype=dt, filters=filters,
                            compressor=numcodecs.Blosc("zstd", 3, 0))
    a[...] = values
    save(f"filter_{name}", a[:], note=str(filters))
labels = ["female", "male", "ünïcø"]
cats = np.array([labels[i] for i in rng.integers(0, 3, 1000)], dtype="<U6")
cats[::7] = ""  # not a label: numcodecs decodes it as ""
a = root.create_dataset("filter_categorize", shape=cats.shape, chunks=(300,), dtype="<U6",
                        filters=[numcodecs.Categorize(labels=labels, dtype="<U6", astype="u1")])
a[...] = cats
save("filter_categorize", a[:])

# Nested groups, attributes in non-ASCII text.
inner = root.create_group("nested").create_group("inner")
inner.attrs["beschreibung"] = "Größe 日本"
a = inner.create_dataset("arr", shape=(50, 3), chunks=(16, 2), dtype="<i8", order="F")
a[...] = np.arange(150).reshape(50, 3)
save("nested/inner/arr", a[:])

# Unsupported compressor (named in the error) and filter.
root.create_dataset("bad_codec", shape=(10,), chunks=(5,), dtype="<i4", compressor=None)[...] = 1
meta_path = os.path.join(out, "bad_codec", ".zarray")
meta = json.load(open(meta_path))
meta["compressor"] = {"id": "imagecodecs_jpeg2k", "level": 80}
json.dump(meta, open(meta_path, "w"))
manifest.append({"name": "bad_codec", "error": "imagecodecs_jpeg2k"})
root.create_dataset("bad_filter", shape=(10,), chunks=(5,), dtype="<i4")[...] = 1
meta_path = os.path.join(out, "bad_filter", ".zarray")
meta = json.load(open(meta_path))
meta["filters"] = [{"id": "zfpy", "mode": 4}]
json.dump(meta, open(meta_path, "w"))
manifest.append({"name": "bad_filter", "error": "zfpy"})

with open(os.path.join(out, "manifest.json"), "w") as f:
    json.dump(manifest, f, indent=1)
print(len(manifest))
