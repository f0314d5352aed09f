"""Colour names of pixels: hue bands for saturated colours, brightness for the rest.

Shading changes a surface's brightness, not its hue, so a chromatic object keeps one name on its
lit top and its shaded sides; white, grey and black are one achromatic family (a white cube's
shaded sides look grey) named by its brightest part.
"""

from __future__ import annotations

import numpy as np
from harness_types.colour_names import (
    ACHROMATIC,
    CHROMATIC,
    HUE_BANDS,
    MIN_SATURATION,
    MIN_VALUE,
)

COLOUR_NAMES = (*CHROMATIC, 'white', 'grey', 'black')  # every colour name locate() gives
WHITE_ABOVE = 0.62  # brightness (90th percentile) of an achromatic object called white
BLACK_BELOW = 0.2


def hsv(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hue (degrees), saturation and value in [0, 1] of N x 3 uint8 colours."""
    c = np.asarray(rgb, dtype=np.float32) / 255.0
    r, g, b = c[:, 0], c[:, 1], c[:, 2]
    # Two elementwise maxima, not a reduction along the short axis (5x faster, the same values)
    hi, lo = np.maximum(np.maximum(r, g), b), np.minimum(np.minimum(r, g), b)
    span = hi - lo
    safe = np.where(span > 0, span, 1.0)
    hue = np.where(
        hi == r, (g - b) / safe % 6.0, np.where(hi == g, (b - r) / safe + 2.0, (r - g) / safe + 4.0)
    )
    hue = np.where(span > 0, hue * 60.0, 0.0)
    saturation = np.where(hi > 0, span / np.where(hi > 0, hi, 1.0), 0.0)
    return hue, saturation, hi


def families(rgb: np.ndarray) -> np.ndarray:
    """Each colour's family: an index into CHROMATIC, len(CHROMATIC) for achromatic, -1 for too
    dark to tell."""
    hue, saturation, value = hsv(rgb)
    bands = np.searchsorted(np.array([b for b, _ in HUE_BANDS]), hue, side='right')
    bands = np.minimum(bands, len(HUE_BANDS) - 1)
    chromatic = np.array([CHROMATIC.index(name) for _, name in HUE_BANDS])[bands]
    out = np.where(saturation >= MIN_SATURATION, chromatic, len(CHROMATIC))
    return np.where(value < MIN_VALUE, -1, out)


def family_name(family: int) -> str:
    return CHROMATIC[family] if 0 <= family < len(CHROMATIC) else ACHROMATIC


def achromatic_name(rgb: np.ndarray) -> str:
    """White, grey or black for the colours of one achromatic object."""
    _, _, value = hsv(rgb)
    bright = float(np.percentile(value, 90)) if len(value) else 0.0
    if bright >= WHITE_ABOVE:
        return 'white'
    return 'grey' if bright >= BLACK_BELOW else 'black'


def colour_of(rgb: np.ndarray) -> str:
    """The colour name of one object's pixels (N x 3 uint8)."""
    fam = families(rgb)
    counts = np.bincount(fam[fam >= 0], minlength=len(CHROMATIC) + 1)
    main = int(np.argmax(counts)) if counts.sum() else len(CHROMATIC)
    return CHROMATIC[main] if main < len(CHROMATIC) else achromatic_name(rgb[fam == main])
