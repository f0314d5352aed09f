"""The colour names the station speaks (locate's words, the scene's distractors): hue bands for
saturated colours, one achromatic family for the rest. Perception names pixels with them
(harness_perception.colour); the scene randomisation picks distractor colours no task object
shares with them."""

from __future__ import annotations

import colorsys

# Upper hue bound (degrees) of each chromatic name, in order; red wraps around 360.
HUE_BANDS: tuple[tuple[float, str], ...] = (
    (15.0, 'red'),
    (42.0, 'orange'),
    (75.0, 'yellow'),
    (170.0, 'green'),
    (260.0, 'blue'),
    (330.0, 'purple'),
    (360.0, 'red'),
)
CHROMATIC = tuple(dict.fromkeys(name for _, name in HUE_BANDS))
ACHROMATIC = 'achromatic'
MIN_SATURATION = 0.3  # below: white, grey or black
MIN_VALUE = 0.12  # darker than this: no reliable hue (counts for nothing)


def family_of(rgb: tuple[float, float, float]) -> str:
    """The colour family of one colour (r, g, b in 0..1): a chromatic name or 'achromatic'
    (as perception names a surface of that colour in plain light)."""
    hue, saturation, value = colorsys.rgb_to_hsv(*rgb)
    if saturation < MIN_SATURATION or value < MIN_VALUE:
        return ACHROMATIC
    degrees = hue * 360.0
    return next((name for bound, name in HUE_BANDS if degrees < bound), 'red')
