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


def pdf_bytes(pages: int, *, compressed: bool = False) -> bytes:
    """A PDF of blank pages. ``compressed``: PDF 1.5 with the page objects inside a Flate
    object stream and a cross-reference stream, so no ``/Type /Page`` is readable in the file
    (what modern writers produce; a byte scan counts no page at all)."""
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"
    kids = b" ".join(b"%d 0 R" % (3 + i) for i in range(pages))
    head = [
        b"1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n",
        b"2 0 obj\n<< /Type /Pages /Kids [" + kids + b"] /Count %d >>\nendobj\n" % pages,
    ]
    out = bytearray(b"%PDF-1.5\n")
    offsets = {}
    for number, body in enumerate(head, 1):
        offsets[number] = len(out)
        out += body
    if not compressed:
        xref_rows = [b"0000000000 65535 f \n"]
        for i in range(pages):
            offsets[3 + i] = len(out)
            out += b"%d 0 obj\n" % (3 + i) + page + b"\nendobj\n"
        xref_rows += [b"%010d 00000 n \n" % offsets[n] for n in range(1, pages + 3)]
        start = len(out)
        out += b"xref\n0 %d\n" % (pages + 3) + b"".join(xref_rows)
        out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (pages + 3, start)
        return bytes(out)
    stream_number, xref_number = pages + 3, pages + 4
    bodies, index, position = [], [], 0
    for i in range(pages):
        index.append(b"%d %d" % (3 + i, position))
        bodies.append(page)
        position += len(page) + 1
    header = b" ".join(index) + b"\n"
    packed = zlib.compress(header + b"\n".join(bodies) + b"\n")
    offsets[stream_number] = len(out)
    out += b"%d 0 obj\n<< /Type /ObjStm /N %d /First %d /Filter /FlateDecode /Length %d >>\nstream\n" % (
        stream_number, pages, len(header), len(packed))  # fmt: skip
    out += packed + b"\nendstream\nendobj\n"
    offsets[xref_number] = len(out)
    rows = [bytes([0]) + (0).to_bytes(4, "big") + (65535).to_bytes(2, "big")]
    for number in (1, 2):
        rows.append(bytes([1]) + offsets[number].to_bytes(4, "big") + (0).to_bytes(2, "big"))
    for i in range(pages):
        rows.append(bytes([2]) + stream_number.to_bytes(4, "big") + i.to_bytes(2, "big"))
    for number in (stream_number, xref_number):
        rows.append(bytes([1]) + offsets[number].to_bytes(4, "big") + (0).to_bytes(2, "big"))
    table = b"".join(rows)
    out += b"%d 0 obj\n<< /Type /XRef /Size %d /W [1 4 2] /Root 1 0 R /Length %d >>\nstream\n" % (
        xref_number, xref_number + 1, len(table))  # fmt: skip
    out += table + b"\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n" % offsets[xref_number]
    return bytes(out)
