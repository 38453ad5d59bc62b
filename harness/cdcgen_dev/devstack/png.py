"""Pixel statistics that tell a rendered page from a blank one (decoded by Pillow).

A screenshot test that only checks "a file was written" passes on a white page;
this reads the pixels back and measures how much is drawn and in how many colours.
Pillow decodes every PNG variant (palette, 16-bit, interlaced), not only what
today's Chromium happens to write.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: Each channel keeps its top 5 bits: anti-aliasing noise merges into its base colour.
_QUANTIZE_MASK = 0xF8
#: 32 levels per channel: at most 32**3 distinct quantized colours.
_QUANTIZED_COLOURS = 32**3


class PngError(ValueError):
    """The file is not an image Pillow can read."""


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


def pixel_stats(path: Path) -> PixelStats:
    """Size, quantized colour count, ink share and background colour of an image file."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            rgb = image.convert("RGB")
    except (UnidentifiedImageError, OSError) as exc:
        raise PngError(f"{path}: {exc}") from None
    total = rgb.width * rgb.height
    if total == 0:
        raise PngError(f"{path}: the image has no pixels")
    # getcolors returns None only above maxcolors; every pixel distinct is the most.
    exact = rgb.getcolors(maxcolors=total) or []
    count, top = max(exact, key=lambda entry: entry[0])
    quantized = rgb.point(lambda level: level & _QUANTIZE_MASK).getcolors(
        maxcolors=_QUANTIZED_COLOURS
    )
    red, green, blue = top if isinstance(top, tuple) else (top, top, top)
    return PixelStats(
        width=rgb.width,
        height=rgb.height,
        colours=len(quantized or []),
        ink=1 - count / total,
        background=(int(red), int(green), int(blue)),
    )
