"""Small real files for media tests: valid PNGs of a given size."""

from __future__ import annotations

import base64
import struct
import zlib


def png(width: int, height: int, shade: int = 0) -> bytes:
    """A valid grey PNG; ``shade`` changes the bytes (and so the content hash)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    row = b"\x00" + bytes([shade % 256]) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


def file_state(
    file_id: str, name: str, data: bytes, mimetype: str = "image/png"
) -> dict[str, object]:
    return {
        "id": file_id,
        "name": name,
        "title": name,
        "mimetype": mimetype,
        "size": len(data),
        "content_b64": base64.b64encode(data).decode("ascii"),
    }


def slack_file(
    file_id: str, name: str, data: bytes, mimetype: str = "image/png"
) -> dict[str, object]:
    """The file object as a message event carries it (URLs on Slack's real host)."""
    url = f"https://files.slack.com/files-pri/T0TEST0001-{file_id}/{name}"
    return {
        "id": file_id,
        "name": name,
        "title": name,
        "mimetype": mimetype,
        "size": len(data),
        "url_private": url,
        "url_private_download": url + "?download=1",
    }
