"""Images scaled into what Claude takes, with Pillow, instead of refused for their size.

Anthropic recommends at most 1,568 px on the long side (larger images are scaled down by the
API anyway, at the cost of latency and request bytes) and accepts at most 5 MB of base64 per
image. An image within both is sent as it is, byte for byte; a larger one is scaled down with
its aspect kept and re-encoded (PNG stays PNG, everything else becomes JPEG), at lower JPEG
quality if it still does not fit.
"""

from __future__ import annotations

import io
from typing import Final

__all__ = ["LONG_SIDE", "fit_image"]

LONG_SIDE: Final = 1_568
_MAX_B64: Final = 5 * 1024 * 1024
_QUALITIES: Final = (85, 70, 50)


def _b64_length(n: int) -> int:
    return (n + 2) // 3 * 4


def fit_image(content: bytes) -> tuple[bytes, str, int, int] | None:
    """(bytes, media type, width, height) within Claude's limits; None if Pillow cannot read
    the image (the caller falls back to what its header says)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(content)) as image:
            kind = {
                "JPEG": "image/jpeg",
                "PNG": "image/png",
                "GIF": "image/gif",
                "WEBP": "image/webp",
            }.get(str(image.format))
            if kind is None:
                return None
            width, height = image.size
            if max(width, height) <= LONG_SIDE and _b64_length(len(content)) <= _MAX_B64:
                return content, kind, width, height
            image.load()
            scale = min(1.0, LONG_SIDE / max(width, height))
            size = (max(1, round(width * scale)), max(1, round(height * scale)))
            frame = image.convert("RGBA" if kind == "image/png" else "RGB").resize(
                size, Image.Resampling.LANCZOS
            )
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
        return None
    if kind == "image/png":
        out = io.BytesIO()
        frame.save(out, "PNG", optimize=True)
        if _b64_length(out.tell()) <= _MAX_B64:
            return out.getvalue(), "image/png", *size
        frame = frame.convert("RGB")
    for quality in _QUALITIES:
        out = io.BytesIO()
        frame.save(out, "JPEG", quality=quality)
        if _b64_length(out.tell()) <= _MAX_B64:
            return out.getvalue(), "image/jpeg", *size
    return None
