"""Write a small safetensors file for a lit test, with the standard library alone.

    python make_weights.py OUT.safetensors name=F32:4,8 other=F16:2 [--truncate]

Each tensor is zeros of its dtype and shape; `--truncate` cuts the file's last bytes off,
as an interrupted download would; `--garbage` writes bytes that are no safetensors file;
`--short` gives the first tensor's entry offsets 4 bytes short of its shape (a corrupt
header).
"""

import json
import struct
import sys

SIZES = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8, "I64": 8, "I32": 4, "U8": 1, "BOOL": 1}


def main(argv: list[str]) -> None:
    out, specs = argv[0], [a for a in argv[1:] if not a.startswith("--")]
    if "--garbage" in argv:
        open(out, "wb").write(b"\x07\x00\x00\x00\x00\x00\x00\x00not json")
        return
    header, offset = {}, 0
    for spec in specs:
        name, rest = spec.split("=")
        dtype, dims = rest.split(":")
        shape = [int(d) for d in dims.split(",") if d]
        count = 1
        for d in shape:
            count *= d
        size = count * SIZES[dtype]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    if "--short" in argv:
        first = header[next(iter(header))]["data_offsets"]
        first[1] -= 4
    raw = json.dumps(header).encode()
    data = struct.pack("<Q", len(raw)) + raw + bytes(offset)
    if "--truncate" in argv:
        data = data[: len(data) - 4]
    open(out, "wb").write(data)


if __name__ == "__main__":
    main(sys.argv[1:])
