#!/usr/bin/env python3
"""make_gguf_fixtures.py: writes tests/fixtures/gguf_quant_types.gguf, the third-party
reference for smezo's GGUF dequantisation (tests/test_gguf_dequant.cpp).

For every tensor type smezo reads (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K,
Q6_K) the file holds
  q.<TYPE>    random blocks of that type, 256 elements as a (1, 256) tensor: random bytes,
              with the f16 scale/min fields replaced by random finite values of either sign
  ref.<TYPE>  F32 (1, 256): those blocks dequantised by the `gguf` Python package
              (gguf.quants.dequantize, llama.cpp's own Python reference)
and it is written by gguf's GGUFWriter, so it also checks smezo's reader against an
independent writer. Deterministic (fixed seed); about 15 KB.

Usage (from the repo root): /tmp/oracle-venv/bin/python tools/make_gguf_fixtures.py
Needs numpy and gguf (pip install gguf); no network.
"""

import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf.quants import dequantize

N = 256  # elements per tensor: one K super-block, eight 32-element blocks
OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "gguf_quant_types.gguf")

# byte offsets of the f16 scale fields in one block, per type
F16_FIELDS = {
    T.Q8_0: [0], T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2],
    T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
}


def random_blocks(rng, qtype):
    block_size, block_bytes = gguf.GGML_QUANT_SIZES[qtype]
    n_blocks = N // block_size
    raw = rng.integers(0, 256, size=(n_blocks, block_bytes), dtype=np.uint8)
    for off in F16_FIELDS[qtype]:
        mag = rng.uniform(0.002, 0.2, size=n_blocks)
        sign = rng.choice([-1.0, 1.0], size=n_blocks)
        raw[:, off:off + 2] = (mag * sign).astype(np.float16).view(np.uint8).reshape(n_blocks, 2)
    return raw.reshape(1, n_blocks * block_bytes)


def main():
    rng = np.random.default_rng(20261123)
    w = gguf.GGUFWriter(OUT, arch="smezo-fixture")
    w.add_string("smezo.fixture", "random blocks of every GGUF tensor type smezo reads + "
                 "gguf-py's dequantisation of them")
    values = rng.uniform(-3, 3, size=(1, N)).astype(np.float32)
    plain = {
        "F32": (values, None),
        "F16": (values.astype(np.float16), None),
        "BF16": ((values.view(np.uint32) >> 16).astype(np.uint16).view(np.uint8).reshape(1, 2 * N), T.BF16),
    }
    for name, (data, raw_dtype) in plain.items():
        w.add_tensor(f"q.{name}", data, raw_dtype=raw_dtype)
        qtype = raw_dtype or {np.float32: T.F32, np.float16: T.F16}[data.dtype.type]
        ref = dequantize(data, qtype)
        w.add_tensor(f"ref.{name}", np.asarray(ref, dtype=np.float32).reshape(1, N))
    for qtype in [T.Q8_0, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q4_K, T.Q5_K, T.Q6_K]:
        raw = random_blocks(rng, qtype)
        ref = dequantize(raw, qtype).astype(np.float32).reshape(1, N)
        if not np.all(np.isfinite(ref)) or np.count_nonzero(ref) < N // 2:
            sys.exit(f"{qtype.name}: reference values are not finite or mostly zero")
        w.add_tensor(f"q.{qtype.name}", raw, raw_dtype=qtype)
        w.add_tensor(f"ref.{qtype.name}", ref)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {OUT} ({os.path.getsize(OUT)} bytes)")


if __name__ == "__main__":
    main()
