#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes the seed corpus of the fuzz targets into tests/fuzz/corpus/<target>/.

    /usr/bin/python3 tests/fuzz/make_reproducers.py

Standard library only, deterministic: running it again rewrites the same files. The corpus holds the
built-in examples, small CSV, .npy and safetensors files, and reproducers of reported crashes (each named
after what it reproduces). Files are small: the nesting reproducers use 12 000 levels (9 000 for
objects) instead of the 80 000 of the crash report, which is enough to overflow the stack under the
sanitizers (the asan preset from about 4 000, the fuzz preset's -O1 from about 10 000) though not in a plain
Release build.
"""

import json
import pathlib
import random
import shutil
import struct

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CORPUS = HERE / "corpus"
DEPTH = 12000


def session(X, W_Q, W_K, W_V, tokens=None, **extra):
    s = {"format": "qkvlab-session", "version": 1, "title": "reproducer",
         "tokens": tokens or [f"t{i}" for i in range(len(X))], "X": X,
         "heads": [{"W_Q": W_Q, "W_K": W_K, "W_V": W_V}], "score": "dot"}
    s.update(extra)
    return s


def dump(value):
    return json.dumps(value, indent=1, allow_nan=False) + "\n"


def nested(depth):
    return "[" * depth + "]" * depth


def nested_objects(depth):
    return '{"a":' * depth + "1" + "}" * depth


def sessions():
    files = {}
    for example in sorted((ROOT / "resources" / "examples").glob("*.qkv.json")):
        files["example-" + example.name] = example.read_text()

    # Deep nesting kept for the round trip, or inside a matrix followed by more keys.
    base = dump(session([[1.0], [2.0]], [[1.0]], [[1.0]], [[1.0]]))
    files["nested-arrays-unknown-key.qkv.json"] = base.replace("{", '{"deep": ' + nested(DEPTH) + ",", 1)
    files["nested-objects-unknown-key.qkv.json"] = base.replace("{", '{"deep": ' + nested_objects(DEPTH * 3 // 4) + ",", 1)
    files["nested-arrays-view.qkv.json"] = base.replace("{", '{"view": {"panels": ' + nested(DEPTH) + "},", 1)
    files["nested-value-in-X-then-more-keys.qkv.json"] = (
        '{"format": "qkvlab-session", "version": 1, "X": [[1, ' + nested(DEPTH) + ']], "title": "deep",'
        ' "tokens": ["a"], "heads": [{"W_Q": [[1]], "W_K": [[1]], "W_V": [[1]]}], "score": "dot"}\n')

    # Item 3: weights · V past the largest double must be refused naming the stage and head, not infinite.
    three = [[1.0], [1.0], [1.0]]
    files["sigmoid-WV-1e308.qkv.json"] = dump(
        session(three, [[1.0]], [[1.0]], [[1e308]], normalizer={"type": "sigmoid"}))
    files["sigmoid-WV-1e308-with-WO.qkv.json"] = dump(
        session(three, [[1.0]], [[1.0]], [[1e308]], W_O=[[1.0]], normalizer={"type": "sigmoid"}))
    for name, w_v in (("1e308", 1e308), ("1.7e308", 1.7e308)):
        files[f"entmax-alpha-1e6-WV-{name}.qkv.json"] = dump(
            session([[1.0], [2.0], [3.0]], [[1.0]], [[1.0]], [[w_v]],
                    normalizer={"type": "entmax", "alpha": 1e6}))

    # Item 4: scores ±1.69e308 with scale "none" and τ = 1e308: z = ±1.69, so each row is
    # [0.9677, 0.0323] (not [1, 0]). Q = K = X = ±1.3e154 with W_Q = W_K = 1.
    huge = dict(scale="none", temperature=1e308)
    X = [[1.3e154], [-1.3e154]]
    files["softmax-scores-1.7e308-tau-1e308.qkv.json"] = dump(
        session(X, [[1.0]], [[1.0]], [[1.0]], **huge))
    files["entmax-1.01-scores-1.7e308-tau-1e308.qkv.json"] = dump(
        session(X, [[1.0]], [[1.0]], [[1.0]], normalizer={"type": "entmax", "alpha": 1.01}, **huge))
    files["sparsemax-scores-1.7e308-tau-1e308.qkv.json"] = dump(
        session(X, [[1.0]], [[1.0]], [[1.0]], normalizer={"type": "sparsemax"}, **huge))

    # Item 5: identical tokens must share hardmax weight equally, however the matrix product rounds. Random
    # sessions with four identical rows of X; these six of 300 put all weight on one copy before the fix.
    rng = random.Random(1)
    g = lambda: round(rng.gauss(0, 1), 3)
    for case in range(300):
        n, d_model, d_k = rng.randint(6, 24), rng.randint(4, 32), rng.randint(2, 16)
        row = [g() for _ in range(d_model)]
        X = [[g() for _ in range(d_model)] for _ in range(n - 4)]
        for _ in range(4):
            X.insert(rng.randint(0, len(X)), list(row))
        W = [[[g() for _ in range(d_k)] for _ in range(d_model)] for _ in range(3)]
        score = rng.choice(["dot", "cosine"])
        if case in (1, 38, 52, 154, 231, 289):
            files[f"hardmax-duplicate-tokens-{score}-{case}.qkv.json"] = json.dumps(
                session(X, W[0], W[1], W[2], score=score, normalizer={"type": "hardmax"})) + "\n"

    # Item 11: a hand-written session without `title` and `score`.
    minimal = session([[1.0, 0.0], [0.0, 1.0]], [[1.0], [0.0]], [[0.0], [1.0]], [[1.0], [1.0]])
    del minimal["title"], minimal["score"]
    files["no-title-no-score.qkv.json"] = dump(minimal)
    return files


def csv_files():
    return {
        "simple.csv": "1,2,3\n4,5,6\n",
        "tabs-paste.tsv": "0.5\t-1e-3\n+3\t.25\n",
        "semicolons-crlf-bom.csv": "\ufeff1;2\r\n3;4\r\n\r\n",
        "cr-only.csv": "1,2\r3,4\r",
        "spaces-blank-lines.csv": "\n\n 1 , 2 \n 3 , 4 \n\n",
        "extremes.csv": "1.7976931348623157e308,-2.2250738585072014e-308\n5e-324,-0\n",
        "ragged.csv": "1,2,3\n4,5\n",
        "overflow.csv": "1e309,1\n",
        "not-a-number.csv": "nan,inf\n-inf,x\n",
        "empty.csv": "",
        "one.csv": "42\n",
    }


def npy(descr, shape, values, fortran=False, version=(1, 0), pad_to=64):
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
        descr, "True" if fortran else "False", "(" + "".join(f"{d}, " for d in shape).rstrip(" ") + ")"
        if len(shape) != 1 else f"({shape[0]},)")
    length_bytes = 2 if version[0] == 1 else 4
    prefix = 6 + 2 + length_bytes
    header += " " * ((-(prefix + len(header) + 1)) % pad_to) + "\n"
    fmt = {"<f8": "<%dd", "<f4": "<%df", ">f8": ">%dd"}[descr]
    length = struct.pack("<H" if length_bytes == 2 else "<I", len(header))
    return (b"\x93NUMPY" + bytes(version) + length + header.encode("latin1") +
            struct.pack(fmt % len(values), *values))


def npy_files():
    inf = float("inf")
    return {
        "f8-c-order.npy": npy("<f8", (2, 3), [1, 2, 3, 4, 5, 6]),
        "f4-fortran-order.npy": npy("<f4", (2, 2), [1, 3, 2, 4], fortran=True),
        "f8-1d.npy": npy("<f8", (3,), [0.5, -0.25, 1e-300]),
        "f8-version-2.npy": npy("<f8", (1, 2), [7, 8], version=(2, 0)),
        "f8-version-3.npy": npy("<f8", (1, 1), [9], version=(3, 0)),
        "big-endian.npy": npy(">f8", (1, 1), [1]),
        "truncated-body.npy": npy("<f8", (2, 2), [1, 2, 3, 4])[:-8],
        "non-finite.npy": npy("<f8", (1, 2), [1, inf]),
        "three-dimensions.npy": npy("<f8", (1, 1, 2), [1, 2]),
        "zero-dimension.npy": npy("<f8", (0, 2), []),
    }


def safetensors(tensors, metadata=None, pad=True):
    """A safetensors file: tensors is a list of (name, dtype, shape, raw bytes), laid out in order."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    return raw_safetensors(json.dumps(header, separators=(",", ":")), data, pad)


def raw_safetensors(header, data=b"", pad=True):
    text = header.encode("utf-8")
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def bf16(values):
    return b"".join(struct.pack("<I", struct.unpack("<I", struct.pack("<f", v))[0])[2:] for v in values)


def safetensors_files():
    f32 = lambda *v: struct.pack("<%df" % len(v), *v)
    f64 = lambda *v: struct.pack("<%dd" % len(v), *v)
    f16 = lambda *v: struct.pack("<%de" % len(v), *v)
    tiny = 2.0 ** -24  # the smallest F16 subnormal
    return {
        "f32-matrix.safetensors": safetensors([("w", "F32", [2, 3], f32(1, 2, 3, 4, 5, 6))], {"format": "pt"}),
        "f16-vector-subnormals.safetensors": safetensors(
            [("b", "F16", [5], f16(0.0, -0.0, tiny, 65504.0, 1 / 3))]),
        "bf16-and-f64.safetensors": safetensors(
            [("e", "BF16", [2, 2], bf16([1.0, -2.5, 3.0e38, 1e-40])), ("d", "F64", [2], f64(0.1, -1e300))]),
        "gpt2-names.safetensors": safetensors(
            [("h.0.attn.c_attn.weight", "F32", [2, 6], f32(*range(12))),
             ("h.0.attn.c_attn.bias", "F32", [6], f32(*range(6))),
             ("wpe.weight", "F16", [3, 2], f16(*range(6)))]),
        "unaligned-header.safetensors": safetensors(
            [("x", "F64", [1, 2], f64(0.5, 0.25))], pad=False),
        "other-dtypes.safetensors": safetensors(
            [("ids", "I64", [1, 2], struct.pack("<2q", 1, 2)), ("mask", "BOOL", [3], b"\x01\x00\x01"),
             ("w", "F32", [1], f32(7))]),
        "scalar-and-empty.safetensors": safetensors(
            [("s", "F32", [], f32(1)), ("z", "F32", [0, 4], b""), ("three", "F32", [1, 1, 1], f32(2))]),
        "non-finite.safetensors": safetensors([("inf", "F16", [2], struct.pack("<2H", 0x3C00, 0x7C00))]),
        "overlapping.safetensors": raw_safetensors(
            '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
            '"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}', bytes(12)),
        "unknown-dtype.safetensors": raw_safetensors(
            '{"a":{"dtype":"F13","shape":[1],"data_offsets":[0,4]}}', bytes(4)),
        "shape-mismatch.safetensors": raw_safetensors(
            '{"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}}', bytes(24)),
        "header-past-end.safetensors": struct.pack("<Q", 1000) + b"{}",
        "truncated.safetensors": safetensors([("w", "F32", [2, 2], f32(1, 2, 3, 4))])[:-3],
        "duplicate-name.safetensors": raw_safetensors(
            '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
            '"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', bytes(8)),
    }


def write(target, files):
    folder = CORPUS / target
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name, content in files.items():
        path = folder / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def main():
    all_sessions = sessions()
    write("session", all_sessions)
    write("compute", all_sessions)
    write("csv", csv_files())
    write("npy", npy_files())
    write("safetensors", safetensors_files())


if __name__ == "__main__":
    main()
