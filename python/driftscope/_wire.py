"""The harness's wire format (harness/api/wire.h) in Python: length-prefixed messages of
little-endian u64s, strings and tensors. A tensor is its dtype's index in ds::DType (f64, f32,
f16, bf16, i32), its rank, its dimensions, its byte count and its bytes, row-major."""

from __future__ import annotations

import struct

import numpy as np

DTYPES = ["f64", "f32", "f16", "bf16", "i32"]
_NUMPY_OF = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "i32": np.int32}
_TAG_OF = {np.dtype(np.float64): 0, np.dtype(np.float32): 1, np.dtype(np.float16): 2, np.dtype(np.int32): 4}


class WireError(Exception):
    pass


def read_exact(f, n: int) -> bytes:
    chunks = []
    while n:
        b = f.read(n)
        if not b:
            raise EOFError("the harness closed the pipe")
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def recv(f) -> bytes:
    (n,) = struct.unpack("<Q", read_exact(f, 8))
    return read_exact(f, n)


def send(f, payload) -> None:
    f.write(struct.pack("<Q", len(payload)))
    f.write(payload)
    f.flush()


class Writer:
    def __init__(self, tag: bytes = b""):
        self.parts = [tag] if tag else []

    def u64(self, v: int) -> "Writer":
        self.parts.append(struct.pack("<Q", v & 0xFFFFFFFFFFFFFFFF))
        return self

    def str(self, s) -> "Writer":
        b = s.encode() if isinstance(s, str) else bytes(s)
        self.u64(len(b))
        self.parts.append(b)
        return self

    def strings(self, items) -> "Writer":
        self.u64(len(items))
        for s in items:
            self.str(s)
        return self

    def tensor(self, array) -> "Writer":
        """`array`: a numpy array of a dtype the wire carries, or a bf16 wrapper (its .bits)."""
        bits = getattr(array, "bits", None)
        if bits is not None:
            tag, data = 3, np.ascontiguousarray(bits, dtype="<u2")
        else:
            data = np.ascontiguousarray(array)
            if data.dtype.byteorder == ">":
                data = data.astype(data.dtype.newbyteorder("<"))
            tag = _TAG_OF.get(np.dtype(data.dtype.str.replace(">", "<")))
            if tag is None:
                raise WireError(f"dtype {data.dtype}, which the harness does not take (float64, float32, float16, "
                                "int32, or driftscope.bf16)")
        self.u64(tag).u64(data.ndim)
        for d in data.shape:
            self.u64(d)
        self.u64(data.nbytes)
        self.parts.append(data.tobytes())
        return self

    def bytes(self) -> bytes:
        return b"".join(self.parts)


class Reader:
    def __init__(self, buf: bytes, at: int = 0):
        self.buf = memoryview(buf)
        self.at = at

    def u64(self) -> int:
        if self.at + 8 > len(self.buf):
            raise WireError("a truncated message")
        (v,) = struct.unpack_from("<Q", self.buf, self.at)
        self.at += 8
        return v

    def i64(self) -> int:
        v = self.u64()
        return v - (1 << 64) if v >= (1 << 63) else v

    def str(self) -> str:
        n = self.u64()
        if self.at + n > len(self.buf):
            raise WireError("a truncated string")
        s = bytes(self.buf[self.at:self.at + n]).decode()
        self.at += n
        return s

    def strings(self):
        return [self.str() for _ in range(self.u64())]

    def tensor(self):
        """A numpy array (bf16 widened exactly to float32), or None for the empty tensor."""
        tag, rank = self.u64(), self.u64()
        if tag >= len(DTYPES) or rank > 8:
            raise WireError(f"a tensor of dtype {tag}, rank {rank}")
        shape = tuple(self.u64() for _ in range(rank))
        n = self.u64()
        if self.at + n > len(self.buf):
            raise WireError("a truncated tensor")
        raw = self.buf[self.at:self.at + n]
        self.at += n
        if rank == 0 and n == 0:
            return None
        name = DTYPES[tag]
        if name == "bf16":
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            return bits.view(np.float32).reshape(shape)
        return np.frombuffer(raw, dtype=np.dtype(_NUMPY_OF[name]).newbyteorder("<")).reshape(shape).copy()
