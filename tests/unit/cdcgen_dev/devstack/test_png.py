"""The screenshot check: pixel statistics read back with Pillow tell drawn from blank.

The images are written by Pillow itself in the PNG variants a browser or a tool may
produce (RGB, RGBA, palette, 16-bit greyscale), so each test states exactly what
the statistics must be.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from cdcgen_dev.devstack.png import PixelStats, PngError, pixel_stats

WHITE = (255, 255, 255)


def _save(image: Image.Image, path: Path, **params: object) -> Path:
    image.save(path, format="PNG", **params)
    return path


def _page(path: Path, mode: str = "RGB") -> Path:
    """A white page with a heading bar, coloured blocks and a grey rule."""
    image = Image.new("RGB", (200, 100), WHITE)
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, 199, 9), fill=(20, 60, 120))  # 2000 px
    for i, colour in enumerate([(200, 0, 0), (0, 160, 0), (240, 200, 0), (90, 0, 140)]):
        draw.rectangle((10 + 40 * i, 30, 39 + 40 * i, 49), fill=colour)  # 600 px each
    draw.line((0, 80, 199, 80), fill=(128, 128, 128))  # 200 px
    return _save(image.convert(mode), path)


def test_blank_page_is_not_rendered(tmp_path: Path) -> None:
    stats = pixel_stats(_save(Image.new("RGB", (320, 200), WHITE), tmp_path / "blank.png"))
    assert stats == PixelStats(width=320, height=200, colours=1, ink=0.0, background=WHITE)
    assert not stats.looks_rendered()


def test_drawn_page_counts_colours_and_ink(tmp_path: Path) -> None:
    stats = pixel_stats(_page(tmp_path / "page.png"))
    assert (stats.width, stats.height, stats.background) == (200, 100, WHITE)
    assert stats.colours == 7  # white, the bar, four blocks, the rule
    assert stats.ink == pytest.approx((2000 + 4 * 600 + 200) / 20000)
    assert stats.looks_rendered(min_colours=7)
    assert not stats.looks_rendered(min_colours=8)
    assert not stats.looks_rendered(min_colours=2, min_ink=0.5)


def test_antialiasing_noise_is_merged_into_its_colour(tmp_path: Path) -> None:
    image = Image.new("RGB", (10, 10), WHITE)
    image.putpixel((0, 0), (250, 251, 249))  # same 5-bit levels as white
    image.putpixel((1, 0), (0, 0, 0))
    stats = pixel_stats(_save(image, tmp_path / "noise.png"))
    assert stats.colours == 2
    assert stats.ink == pytest.approx(0.02)


def test_background_is_the_most_common_colour(tmp_path: Path) -> None:
    image = Image.new("RGB", (10, 10), (30, 30, 30))
    ImageDraw.Draw(image).rectangle((0, 0, 9, 3), fill=WHITE)  # 40 of 100 white
    stats = pixel_stats(_save(image, tmp_path / "dark.png"))
    assert stats.background == (30, 30, 30)
    assert stats.ink == pytest.approx(0.4)


@pytest.mark.parametrize("mode", ["RGBA", "P", "L"])
def test_other_png_variants_are_read(tmp_path: Path, mode: str) -> None:
    stats = pixel_stats(_page(tmp_path / f"page-{mode}.png", mode))
    assert (stats.width, stats.height) == (200, 100)
    assert stats.background == WHITE
    assert stats.ink == pytest.approx(0.23)


def test_sixteen_bit_greyscale_is_read(tmp_path: Path) -> None:
    image = Image.new("I;16", (20, 10), 0)
    ImageDraw.Draw(image).rectangle((0, 0, 9, 9), fill=65535)
    path = _save(image, tmp_path / "grey16.png")
    with Image.open(path) as written:
        assert written.mode.startswith("I")  # really a 16-bit file
    stats = pixel_stats(path)
    assert stats.colours == 2 and stats.ink == pytest.approx(0.5)


def test_not_an_image_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "page.png"
    path.write_text("<html>not a picture</html>")
    with pytest.raises(PngError, match=r"page\.png"):
        pixel_stats(path)
