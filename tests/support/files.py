"""Real files for attachment tests: PNG images of any size and PDFs with given text."""

from __future__ import annotations

import hashlib
import struct
import zlib


def png_bytes(width: int = 4, height: int = 4, *, noise: int = 0) -> bytes:
    """A valid RGB PNG (a colour gradient); ``noise`` > 0 widens it with incompressible stored rows so
    the file is at least that many bytes."""
    if noise:
        width = max(width, noise // (3 * height) + 1)
    rows = []
    for y in range(height):
        if noise:
            seed = hashlib.sha256(str(y).encode()).digest()
            pixels = (seed * (width * 3 // 32 + 1))[: width * 3]
            pixels = bytes((b + i) % 256 for i, b in enumerate(pixels)) if y % 2 else pixels
        else:
            pixels = b"".join(
                bytes((x * 255 // max(width - 1, 1), y * 255 // max(height - 1, 1), 160))
                for x in range(width)
            )
        rows.append(b"\x00" + pixels)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    body = zlib.compress(b"".join(rows), 0 if noise else 6)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", body) + chunk(b"IEND", b"")


def pdf_bytes(text: str) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.multi_cell(0, 8, text)
    return bytes(pdf.output())
