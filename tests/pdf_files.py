"""Small PDFs written object by object, for tests that need a shape no tool writes."""

from __future__ import annotations


def pdf(objects: dict[int, bytes | tuple[bytes, bytes]], content: bytes, resources: bytes) -> bytes:
    """One page drawing `content` with `resources`; `objects` numbered from 6 (a stream is
    (dictionary entries, data))."""
    objects = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
           b"/Resources << " + (resources if b"/Font" in resources else
                                b"/Font << /F1 5 0 R >> " + resources) + b" >> >>",
        4: (b"", content),
        5: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        **objects,
    }
    bodies = []
    for number in range(1, len(objects) + 1):
        body = objects[number]
        if isinstance(body, tuple):
            entries, data = body
            body = (b"<< " + entries + b" /Length %d >>\nstream\n" % len(data) + data
                    + b"\nendstream")
        bodies.append(body)
    return pdf_bytes(bodies)


def pdf_bytes(objects: list[bytes]) -> bytes:
    """A PDF of these objects, numbered from 1 (the first is the catalog), with its xref."""
    out, offsets = bytearray(b"%PDF-1.7\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref)
    return bytes(out)
