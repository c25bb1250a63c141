#!/usr/bin/env python3
"""Reads TensorBoard event files without TensorFlow or tensorboard.

    python3 tfevents.py FILE   ->  one JSON line per event:
        {"wall_time": ..., "step": ..., "file_version": ...} or
        {"wall_time": ..., "step": ..., "scalars": {"tag": value, ...}}

Written apart from swift's writer (runtime/lib/io/TensorBoard.cpp): its own
CRC-32C (bitwise, no table) and its own protobuf decoding. Every record's
two masked CRCs are checked; a bad one, a truncated record or an unknown
wire type exits 1 naming the byte offset.
"""
import json
import struct
import sys


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def fields(buf):
    """(number, wire type, value) of each field of a protobuf message."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(buf, i)
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        elif wire == 2:
            n, i = varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire}")
        yield number, wire, value


def varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def event(buf):
    out = {}
    for number, wire, value in fields(buf):
        if number == 1 and wire == 1:
            out["wall_time"] = struct.unpack("<d", value)[0]
        elif number == 2 and wire == 0:
            out["step"] = value
        elif number == 3 and wire == 2:
            out["file_version"] = value.decode()
        elif number == 5 and wire == 2:
            scalars = out.setdefault("scalars", {})
            for n, w, v in fields(value):
                if n != 1 or w != 2:
                    continue
                tag, simple = None, None
                for vn, vw, vv in fields(v):
                    if vn == 1 and vw == 2:
                        tag = vv.decode()
                    elif vn == 2 and vw == 5:
                        simple = struct.unpack("<f", vv)[0]
                scalars[tag] = simple
    return out


def main(path):
    data = open(path, "rb").read()
    at = 0
    while at < len(data):
        if at + 12 > len(data):
            sys.exit(f"{path}: byte {at}: a truncated record header")
        header = data[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[at + 8:at + 12])
        if masked(crc32c(header)) != length_crc:
            sys.exit(f"{path}: byte {at}: the length's CRC does not match")
        body = data[at + 12:at + 12 + length]
        if len(body) != length or at + 16 + length > len(data):
            sys.exit(f"{path}: byte {at}: a truncated record")
        (body_crc,) = struct.unpack("<I", data[at + 12 + length:at + 16 + length])
        if masked(crc32c(body)) != body_crc:
            sys.exit(f"{path}: byte {at}: the data's CRC does not match")
        print(json.dumps(event(body)))
        at += 16 + length


if __name__ == "__main__":
    main(sys.argv[1])
