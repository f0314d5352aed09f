"""A scene variation (harness_bench.randomization) made real: in the station's MjSpec before it
compiles, and in the fixed frames /tf_static gives (the table, the cameras' mounts)."""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
from harness_bench.randomization import SceneVariation, Surface
from harness_types.tf_tree import Transform
from harness_types.transforms import matrix_to_quat, quat_to_matrix

TEXTURE_PX = 256  # a table or floor texture's side (pixels)
TABLE = 'table'  # the table's body (and link)


def apply_to_spec(spec: mujoco.MjSpec, variation: SceneVariation, cameras: list[str]) -> None:
    """Change the station's spec as `variation` says (before the task's objects are added)."""
    if variation.lighting is not None:
        light = variation.lighting
        key, fill = spec.light('key'), spec.light('fill')
        key.dir = list(light.key_direction)
        key.pos = (np.array([0.0, 0.0, 0.9]) - 2.0 * np.array(light.key_direction)).tolist()
        key.diffuse = list(light.key_diffuse)
        fill.diffuse = list(light.fill_diffuse)
    if variation.table is not None:
        _dress(spec, [g for g in spec.body(TABLE).geoms], 'table_texture', variation.table)
    if variation.floor is not None:
        _dress(spec, [spec.geom('floor')], 'floor_texture', variation.floor)
    if variation.table_offset_m:
        table = spec.body(TABLE)
        table.pos = (np.array(table.pos) + [0.0, 0.0, variation.table_offset_m]).tolist()
    for camera in cameras:
        move = variation.camera_move(camera)
        if move is None:
            continue
        body = spec.body(camera)
        position, rotation = move.applied(np.array(body.pos), quat_to_matrix(np.array(body.quat)))
        body.pos, body.quat = position.tolist(), matrix_to_quat(rotation).tolist()


def moved_frames(transforms: list[Transform], variation: SceneVariation) -> list[Transform]:
    """The fixed frames of /tf_static, the table and the cameras' mounts where `variation` put
    them (the same moves as `apply_to_spec`)."""
    out = []
    for t in transforms:
        move = variation.camera_move(t.child)
        if move is not None:
            position, rotation = move.applied(t.translation, quat_to_matrix(t.quat))
            t = dataclasses.replace(t, translation=position, quat=matrix_to_quat(rotation))
        elif t.child == TABLE and variation.table_offset_m:
            t = dataclasses.replace(
                t, translation=t.translation + [0.0, 0.0, variation.table_offset_m]
            )
        out.append(t)
    return out


def texture_pixels(surface: Surface, size: int = TEXTURE_PX) -> np.ndarray:
    """The texture's RGB pixels (size x size x 3, uint8): one tile, the material repeats it."""
    a = np.array(surface.rgb1) * 255.0
    b = np.array(surface.rgb2) * 255.0
    u = np.arange(size)
    if surface.texture == 'checker':
        pattern = ((u[:, None] // (size // 2)) + (u[None, :] // (size // 2))) % 2
    elif surface.texture == 'stripes':
        pattern = np.broadcast_to((u[None, :] // (size // 4)) % 2, (size, size))
    else:
        pattern = np.zeros((size, size), dtype=int)
    image = np.where(pattern[..., None] == 1, b, a)
    return np.round(image).astype(np.uint8)


def _dress(spec: mujoco.MjSpec, geoms: list, name: str, surface: Surface) -> None:
    # The URDF's compiler flag discards materials "no visual geom uses" (the URDF's visual
    # geoms were dropped when it was read, so it would drop these too); nothing else is
    # visual-only by then.
    spec.compiler.discardvisual = False
    pixels = texture_pixels(surface)
    texture = spec.add_texture(
        name=name,
        type=mujoco.mjtTexture.mjTEXTURE_2D,
        width=TEXTURE_PX,
        height=TEXTURE_PX,
        nchannel=3,
    )
    texture.data = pixels.tobytes()
    material = spec.add_material(name=f'{name}_material')
    material.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = name
    material.texrepeat = [surface.repeat, surface.repeat]
    material.texuniform = True
    material.rgba = [1.0, 1.0, 1.0, 1.0]
    for geom in geoms:
        geom.material = f'{name}_material'
        geom.rgba = [1.0, 1.0, 1.0, 1.0]
