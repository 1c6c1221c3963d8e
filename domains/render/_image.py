"""Image measurements done in the trusted host process: decode, luminance, magenta, PSNR/SSIM.

The PNG comes back from the worker as bytes and is decoded here with Pillow, so a render
"passes" only if a real decoder accepts it and the pixels say so; nothing the Blender side
claims about the picture is trusted.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from verifiers.errors import MissingDependency

__all__ = ["ImageStats", "decode_png", "image_stats", "psnr", "ssim"]


def _np() -> Any:
    return MissingDependency.require("numpy", "render")


def decode_png(data: bytes) -> Any:
    """Decode PNG bytes to a float array (H, W, 3) in [0, 1].

    Raises:
        ValueError: the bytes are not a decodable image.
        MissingDependency: Pillow or numpy is not installed.
    """
    np = _np()
    try:
        from PIL import Image
    except ImportError:
        raise MissingDependency("pillow", "render") from None
    try:
        with Image.open(io.BytesIO(data)) as img:
            img.load()
            rgb = img.convert("RGB")
    except Exception as exc:  # Pillow raises many types for corrupt input
        raise ValueError(f"render output does not decode: {exc}") from None
    return np.asarray(rgb, dtype=np.float64) / 255.0


def _luminance(rgb: Any) -> Any:
    return 0.2126 * rgb[..., 0] + 0.7152 * rgb[..., 1] + 0.0722 * rgb[..., 2]


@dataclass(frozen=True)
class ImageStats:
    """What the checks need to know about a rendered picture."""

    width: int
    height: int
    mean_luminance: float
    std_luminance: float
    magenta_fraction: float


def image_stats(rgb: Any) -> ImageStats:
    """Mean/std luminance and the fraction of missing-texture magenta pixels.

    A pixel is magenta when red and blue are both bright, close to each other, and green is
    far below both: Blender paints missing textures pure (1, 0, 1), which shading only scales.
    """
    np = _np()
    lum = _luminance(rgb)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    low = np.minimum(r, b)
    high = np.maximum(r, b)
    magenta = (low > 0.15) & (g < 0.35 * low) & ((high - low) < 0.3 * high)
    return ImageStats(
        width=int(rgb.shape[1]),
        height=int(rgb.shape[0]),
        mean_luminance=float(lum.mean()),
        std_luminance=float(lum.std()),
        magenta_fraction=float(magenta.mean()),
    )


def psnr(a: Any, b: Any) -> float:
    """Peak signal-to-noise ratio (dB) of two same-sized RGB arrays in [0, 1]."""
    np = _np()
    mse = float(np.mean((a - b) ** 2))
    if mse <= 1e-12:
        return float("inf")
    return float(10.0 * np.log10(1.0 / mse))


def ssim(a: Any, b: Any, window: int = 7) -> float:
    """Mean SSIM of the luminance of two same-sized RGB arrays (uniform 7x7 windows)."""
    np = _np()
    x, y = _luminance(a), _luminance(b)
    win = min(window, x.shape[0], x.shape[1])
    view = np.lib.stride_tricks.sliding_window_view
    wx, wy = view(x, (win, win)), view(y, (win, win))
    mx, my = wx.mean(axis=(-1, -2)), wy.mean(axis=(-1, -2))
    vx, vy = wx.var(axis=(-1, -2)), wy.var(axis=(-1, -2))
    cov = (wx * wy).mean(axis=(-1, -2)) - mx * my
    c1, c2 = 0.01**2, 0.03**2
    num = (2 * mx * my + c1) * (2 * cov + c2)
    den = (mx**2 + my**2 + c1) * (vx + vy + c2)
    return float(np.mean(num / den))
