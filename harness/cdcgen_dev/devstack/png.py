"""Just enough PNG decoding to tell a rendered page from a blank one (zlib + numpy).

A screenshot test that only checks "a file was written" passes on a white page;
this reads the pixels back and measures how much is drawn and in how many colours.
Handles 8-bit greyscale, RGB and RGBA, non-interlaced: what Chromium writes.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}


class PngError(ValueError):
    pass


@dataclass(frozen=True)
class PixelStats:
    width: int
    height: int
    #: Distinct colours after quantizing each channel to 32 levels (anti-aliasing noise merged).
    colours: int
    #: Share of pixels that differ from the most common colour (the background).
    ink: float
    #: The most common colour, RGB.
    background: tuple[int, int, int]

    def looks_rendered(self, min_colours: int = 8, min_ink: float = 0.02) -> bool:
        return self.colours >= min_colours and self.ink >= min_ink


def decode(data: bytes) -> np.ndarray:
    """Pixels as a ``height x width x channels`` uint8 array."""
    if not data.startswith(_SIGNATURE):
        raise PngError("not a PNG file")
    pos, idat, header = len(_SIGNATURE), bytearray(), None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    if header is None:
        raise PngError("no IHDR chunk")
    width, height, depth, colour_type, _, _, interlace = header
    if depth != 8 or colour_type not in _CHANNELS or interlace:
        raise PngError(f"unsupported PNG: depth {depth}, colour type {colour_type}")
    channels = _CHANNELS[colour_type]
    stride = width * channels
    raw = np.frombuffer(zlib.decompress(bytes(idat)), dtype=np.uint8)
    if raw.size != height * (stride + 1):
        raise PngError("pixel data has the wrong size")
    rows = raw.reshape(height, stride + 1)
    return _unfilter(rows[:, 0], rows[:, 1:].reshape(height, width, channels))


def _unfilter(filters: np.ndarray, lines: np.ndarray) -> np.ndarray:
    """Undo PNG's per-row filters, one anti-diagonal of pixels at a time.

    Pixel (y, x) depends on its left, upper and upper-left neighbours, all on
    earlier anti-diagonals, so each diagonal is one vectorized step whatever mix
    of filters its rows use: width + height steps instead of a Python loop per byte.
    """
    if np.any(filters > 4):
        raise PngError(f"bad filter type {int(filters.max())}")
    height, width, channels = lines.shape
    out = np.zeros((height + 1, width + 1, channels), dtype=np.int16)  # zero row/column pad
    raw = lines.astype(np.int16)
    kinds = filters.astype(np.int16)
    for k in range(height + width - 1):
        ys = np.arange(max(0, k - width + 1), min(height, k + 1))
        xs = k - ys
        a = out[ys + 1, xs]  # left
        b = out[ys, xs + 1]  # up
        c = out[ys, xs]  # up-left
        kind = kinds[ys][:, None]
        pa, pb, pc = np.abs(b - c), np.abs(a - c), np.abs(a + b - 2 * c)
        paeth = np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))
        predictor = np.select(
            [kind == 1, kind == 2, kind == 3, kind == 4],
            [a, b, (a + b) >> 1, paeth],
            default=0,
        )
        out[ys + 1, xs + 1] = (raw[ys, xs] + predictor) & 0xFF
    return out[1:, 1:].astype(np.uint8)


def pixel_stats(path: Path) -> PixelStats:
    pixels = decode(path.read_bytes())
    height, width, channels = pixels.shape
    rgb = pixels[..., :3] if channels >= 3 else np.repeat(pixels[..., :1], 3, axis=2)
    packed = (
        (rgb[..., 0].astype(np.uint32) << 16) | (rgb[..., 1].astype(np.uint32) << 8) | rgb[..., 2]
    )
    values, counts = np.unique(packed.reshape(-1), return_counts=True)
    top = int(values[counts.argmax()])
    q = (rgb >> 3).astype(np.uint32)
    quantized = np.count_nonzero(
        np.bincount(((q[..., 0] << 10) | (q[..., 1] << 5) | q[..., 2]).ravel())
    )
    return PixelStats(
        width=width,
        height=height,
        colours=int(quantized),
        ink=float(1 - counts.max() / packed.size),
        background=((top >> 16) & 0xFF, (top >> 8) & 0xFF, top & 0xFF),
    )
