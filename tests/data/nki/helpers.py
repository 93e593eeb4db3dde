"""A helper function read inline (called twice, so its ops and loops get fresh names),
a dataclass configuration with defaults, and a helper returning a tile."""
from dataclasses import dataclass

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@dataclass(frozen=True)
class Config:
    chunks: int = 2
    scale: float = 0.5


def load_scaled(src, row, cfg):
    tile = nl.ndarray((128, 256 * cfg.chunks), dtype=nl.float32, buffer=nl.sbuf)
    for c in nl.affine_range(cfg.chunks):
        tile[:, c * 256:(c + 1) * 256] = nl.load(src[row * 128:(row + 1) * 128, c * 256:(c + 1) * 256])
    return nl.multiply(tile, cfg.scale)


@nki.jit
def helpers(a, b, config=None):
    cfg = config or Config()
    out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
    x = load_scaled(a, 0, cfg)
    y = load_scaled(b, 1, cfg)
    nl.store(out, value=nl.add(x, y))
    return out
