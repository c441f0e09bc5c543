"""What the grader and a sandboxed notebook say to each other: frames of JSON and raw tensor bytes, nothing pickled.

A frame is ``MAGIC``, the length of a JSON header (4 bytes, big-endian), the header, the length of a blob (8 bytes)
and the blob. A tensor in the header is ``{"@tensor": "float32", "shape": [2, 3], "at": offset, "bytes": n}``: its raw bytes lie in the blob. Reading a frame never runs anything from it: the header is JSON, a
dtype must be one of ``DTYPES``, the byte count must match the shape, and every size is capped. The same module runs
on both sides (the sandbox imports it from its copy of the course package).
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping
from typing import Any

import torch

MAGIC = b"\x93course\x01"
MAX_HEADER = 8 * 1024 * 1024
MAX_BLOB = 256 * 1024 * 1024
MAX_TENSOR_ENTRIES = 1_000_000
MAX_ITEMS = 16
MAX_TEXT = 2000
MAX_STRING = 100_000  # a string a function returned (decoded text), whole up to this length
MAX_MAPPING = 20_000  # entries of a mapping a function returned (pair counts)
DTYPES = {
    str(dtype).removeprefix("torch."): dtype
    for dtype in (
        torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128,
        torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool,
    )
}  # fmt: skip


class WireError(ValueError):
    """A frame that is not what ``pack`` writes: the other side broke, or a submission wrote it."""


def _expect(condition: bool, what: str) -> None:
    if not condition:
        raise WireError(what)


def _text(value: Any, limit: int = MAX_TEXT) -> str:
    try:
        text = str(value)
    except BaseException:
        text = "<unprintable>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------------------------------------------------------
# Frames
# ---------------------------------------------------------------------------------------------------------------


def pack(message: dict) -> bytes:
    """One frame holding ``message``: JSON-able data whose ``torch.Tensor`` values travel as raw bytes."""
    blob = bytearray()

    def plain(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            tensor = value.detach().contiguous().cpu()
            data = tensor.reshape(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b""
            entry = {"@tensor": str(tensor.dtype).removeprefix("torch."), "shape": list(tensor.shape)}
            entry.update({"at": len(blob), "bytes": len(data), "grad": bool(value.requires_grad)})
            blob.extend(data)
            return entry
        if isinstance(value, dict):
            return {str(key): plain(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(item) for item in value]
        if isinstance(value, float) and not math.isfinite(value):
            return {"@float": repr(value)}
        return value

    header = json.dumps(plain(message), allow_nan=False).encode()
    return MAGIC + struct.pack(">I", len(header)) + header + struct.pack(">Q", len(blob)) + bytes(blob)


def unpack(header: bytes, blob: bytes) -> dict:
    """The message of a frame (its header and blob), with every tensor rebuilt from its bytes."""
    try:
        message = json.loads(header.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise WireError(f"a header is not JSON ({type(exc).__name__})") from None
    _expect(isinstance(message, dict), "a message is not a mapping")

    def rebuild(value: Any, depth: int = 0) -> Any:
        _expect(depth < 12, "a message is nested too deeply")
        if isinstance(value, list):
            return [rebuild(item, depth + 1) for item in value]
        if not isinstance(value, dict):
            return value
        if "@float" in value and value["@float"] in ("inf", "-inf", "nan"):
            return float(value["@float"])
        if "@tensor" not in value:
            return {key: rebuild(item, depth + 1) for key, item in value.items()}
        dtype, shape, at, size = (value.get(key) for key in ("@tensor", "shape", "at", "bytes"))
        _expect(dtype in DTYPES, "a tensor has an unknown dtype")
        _expect(
            isinstance(shape, list) and len(shape) <= 8 and all(type(s) is int and 0 <= s < 2**31 for s in shape),
            "a tensor's shape is malformed",
        )
        entries = math.prod(shape)
        _expect(entries <= MAX_TENSOR_ENTRIES, "a tensor is too large")
        itemsize = torch.empty((), dtype=DTYPES[dtype]).element_size()
        _expect(type(at) is int and type(size) is int and size == entries * itemsize, "a tensor's size is wrong")
        _expect(0 <= at and at + size <= len(blob), "a tensor lies outside its frame")
        if entries == 0:
            tensor = torch.empty(shape, dtype=DTYPES[dtype])
        else:
            raw = torch.frombuffer(bytearray(blob[at : at + size]), dtype=torch.uint8)
            tensor = raw.view(DTYPES[dtype]).reshape(shape)
        if value.get("grad") is True and tensor.is_floating_point():
            tensor.requires_grad_(True)
        return tensor

    return rebuild(message)


def read_frame(read) -> dict | None:
    """The next frame from ``read(n) -> bytes`` (exactly n bytes, or fewer at the end); None at the end."""
    start = read(len(MAGIC))
    if not start:
        return None
    _expect(start == MAGIC, "the stream is not a frame")
    (length,) = struct.unpack(">I", _exactly(read, 4))
    _expect(length <= MAX_HEADER, "a header is too large")
    header = _exactly(read, length)
    (size,) = struct.unpack(">Q", _exactly(read, 8))
    _expect(size <= MAX_BLOB, "a frame is too large")
    return unpack(header, _exactly(read, size))


def _exactly(read, size: int) -> bytes:
    data = read(size) if size else b""
    _expect(len(data) == size, "a frame was cut short")
    return data


# ---------------------------------------------------------------------------------------------------------------
# Values: what a learner's function returned, described as plain data (sandbox side)
# ---------------------------------------------------------------------------------------------------------------


def describe(value: Any, depth: int = 0) -> dict:
    """A plain-data description of ``value`` that keeps what the checks look at (tensors, kinds, shapes)."""
    try:
        if isinstance(value, torch.Tensor):
            plain = value.detach()
            if type(plain) not in (torch.Tensor, torch.nn.Parameter):
                plain = plain.as_subclass(torch.Tensor)
            shape = [int(s) for s in plain.shape]
            if plain.layout != torch.strided:
                return {"t": "layout", "layout": _text(plain.layout, 40), "shape": shape}
            if plain.device.type != "cpu":
                return {"t": "device", "device": _text(plain.device.type, 20), "shape": shape}
            if plain.numel() > MAX_TENSOR_ENTRIES:
                return {"t": "huge", "shape": shape}
            if str(plain.dtype).removeprefix("torch.") not in DTYPES:
                return {"t": "object", "type": f"tensor_of_{_text(plain.dtype, 30).removeprefix('torch.')}"}
            return {"t": "tensor", "v": plain.clone()}
        if value is None or isinstance(value, bool):
            return {"t": "plain", "v": value}
        if isinstance(value, float):
            return {"t": "plain", "v": float(value)}
        if isinstance(value, str):
            if len(value) <= 200:
                return {"t": "plain", "v": _text(value, 200)}
            if len(value) <= MAX_STRING:
                return {"t": "text", "v": str.__str__(value)}
            return {"t": "object", "type": "str_too_long"}
        if isinstance(value, (bytes, bytearray)):
            if len(value) > MAX_TENSOR_ENTRIES:
                return {"t": "object", "type": f"{type(value).__name__}_too_long"}
            kind = "bytearray" if isinstance(value, bytearray) else "bytes"
            return {"t": "bytes", "type": kind, "v": torch.tensor(list(bytes(value)), dtype=torch.uint8)}
        if isinstance(value, int):
            return {
                "t": "plain",
                "v": int(value) if abs(value) < 2**62 else float("inf") if value > 0 else float("-inf"),
            }
        if value is NotImplemented:
            return {"t": "notimplemented"}
        if (
            isinstance(value, (tuple, list))
            and value
            and len(value) <= MAX_TENSOR_ENTRIES
            and all(type(item) is int and -(2**63) <= item < 2**63 for item in value)
        ):  # token ids: whole, as one tensor
            kind = type(value).__name__ if type(value) in (tuple, list) else "tuple"
            return {"t": "ints", "kind": kind, "v": torch.tensor(list(value), dtype=torch.int64)}
        if (
            isinstance(value, (tuple, list))
            and value
            and len(value) <= MAX_TENSOR_ENTRIES
            and all(type(chunk) in (tuple, list) for chunk in value)
            and sum(len(chunk) for chunk in value) <= MAX_TENSOR_ENTRIES
            and all(type(item) is int and -(2**63) <= item < 2**63 for chunk in value for item in chunk)
        ):  # chunks of token ids (a text split into words): whole, as one tensor of ids and one of lengths
            kind = type(value).__name__ if type(value) in (tuple, list) else "tuple"
            return {
                "t": "chunks",
                "kind": kind,
                "kinds": "".join("t" if type(chunk) is tuple else "l" for chunk in value),
                "v": torch.tensor([item for chunk in value for item in chunk], dtype=torch.int64),
                "lengths": torch.tensor([len(chunk) for chunk in value], dtype=torch.int64),
            }
        if isinstance(value, Mapping) and depth < 3:  # counts of pairs, merges
            if len(value) > MAX_MAPPING:
                return {"t": "object", "type": "dict_too_large"}
            pairs = [[describe(k, depth + 1), describe(v, depth + 1)] for k, v in list(value.items())[:MAX_MAPPING]]
            return {"t": "mapping", "type": _text(type(value).__name__, 40), "items": pairs}
        if isinstance(value, (tuple, list)) and depth < 3:
            items = [describe(item, depth + 1) for item in list(value)[:MAX_ITEMS]]
            kind = type(value).__name__ if type(value) in (tuple, list) else "tuple"
            return {"t": kind, "items": items, "n": len(value)}
        module = type(value).__module__ or ""
        if module.startswith("numpy"):
            shape = getattr(value, "shape", None)
            return {
                "t": "numpy",
                "type": _text(type(value).__name__, 40),
                "shape": [int(s) for s in shape] if shape else [],
            }
        return {"t": "object", "type": _text(type(value).__name__, 40)}
    except Exception:
        return {"t": "object", "type": "unreadable value"}
