"""Real files for attachment tests: PNG images of any size and PDFs with given text."""

from __future__ import annotations

import hashlib
import struct
import zlib


def png_bytes(width: int = 4, height: int = 4, *, noise: int = 0) -> bytes:
    """A valid PNG; ``noise`` bytes of incompressible rows make it as large as a test needs."""
    row_bytes = max(width * 3, noise // max(height, 1))
    width = row_bytes // 3
    raw = b"".join(
        b"\x00" + hashlib.sha256(str(y).encode()).digest() * (row_bytes // 32 + 1) for y in range(height)
    )
    raw = b"".join(raw[i * (row_bytes + 1) : i * (row_bytes + 1) + row_bytes + 1] for i in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 0))
        + chunk(b"IEND", b"")
    )


def pdf_bytes(text: str) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.multi_cell(0, 8, text)
    return bytes(pdf.output())
