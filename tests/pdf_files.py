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


# Costly pages (an outside audit's): a few kilobytes that pdfium draws for minutes or
# with gigabytes.

LINE = b"BT /F1 11 Tf 72 720 Td (The Halvorsen relay station opened in 1987.) Tj ET\n"


def slow_shading_pdf(operators: int = 200, paints: int = 10) -> bytes:
    """The page painted `paints` times with a shading whose colour is a calculator
    function of `operators` steps, worked out for every pixel."""
    steps = b" ".join([b"dup mul 0.5 add sin"] * operators)
    function = (b"/FunctionType 4 /Domain [0 1 0 1] /Range [0 1 0 1 0 1]",
                b"{ " + steps + b" exch " + steps + b" add dup dup }")
    shading = (b"<< /ShadingType 1 /ColorSpace /DeviceRGB /Domain [0 1 0 1] "
               b"/Matrix [612 0 0 792 0 0] /Function 6 0 R >>")
    return pdf({6: function, 7: shading}, LINE + b"/Sh0 sh\n" * paints,
               b"/Shading << /Sh0 7 0 R >>")


def nested_forms(fan: int = 20, levels: int = 6) -> dict[int, bytes | tuple[bytes, bytes]]:
    """Form 20 draws form 21 `fan` times, and so on `levels` deep: fan^levels drawings.
    Numbers 6 to 19 are left for what draws form 20."""
    objects: dict[int, bytes | tuple[bytes, bytes]] = {n: b"null" for n in range(6, 20)}
    form = b"/Type /XObject /Subtype /Form /BBox [0 0 612 792]"
    for number in range(20, 20 + levels - 1):
        objects[number] = (form + b" /Resources << /XObject << /X %d 0 R >> >>" % (number + 1),
                           b" ".join([b"q /X Do Q"] * fan))
    objects[20 + levels - 1] = (form, b"0 0 1 1 re f")
    return objects


def pattern_bomb_pdf() -> bytes:
    """The forms drawn by a tiling pattern, not by the page's content: not counted as
    its forms are (pdf_forms)."""
    objects = nested_forms()
    objects[6] = (b"/PatternType 1 /PaintType 1 /TilingType 1 /BBox [0 0 612 792] /XStep 612 "
                  b"/YStep 792 /Resources << /XObject << /X 20 0 R >> >>", b"/X Do")
    return pdf(objects, LINE + b"/Pattern cs /P0 scn 0 0 612 792 re f\n",
               b"/Pattern << /P0 6 0 R >>")


def type3_bomb_pdf() -> bytes:
    """The forms drawn by the glyph of a Type3 font: loaded for the page's text too."""
    objects = nested_forms()
    objects[6] = (b"", b"1000 0 0 0 1000 1000 d1 /X Do")
    objects[7] = (b"<< /Type /Font /Subtype /Type3 /FontBBox [0 0 1000 1000] "
                  b"/FontMatrix [0.001 0 0 0.001 0 0] /CharProcs << /a 6 0 R >> "
                  b"/Encoding << /Type /Encoding /Differences [97 /a] >> /FirstChar 97 "
                  b"/LastChar 97 /Widths [1000] /Resources << /XObject << /X 20 0 R >> >> >>")
    return pdf(objects, LINE + b"BT /F3 12 Tf 72 600 Td (a) Tj ET\n",
               b"/Font << /F1 5 0 R /F3 7 0 R >>")


def scanned_pattern_bomb_pdf() -> bytes:
    """A page that looks scanned (an image, no text) and fills itself with the pattern of
    nested forms: OCR draws it."""
    import zlib

    objects = nested_forms()
    objects[6] = (b"/PatternType 1 /PaintType 1 /TilingType 1 /BBox [0 0 612 792] /XStep 612 "
                  b"/YStep 792 /Resources << /XObject << /X 20 0 R >> >>", b"/X Do")
    objects[8] = (b"/Type /XObject /Subtype /Image /Width 100 /Height 100 /ColorSpace "
                  b"/DeviceGray /BitsPerComponent 8 /Filter /FlateDecode",
                  zlib.compress(bytes([200]) * 100 * 100))
    return pdf(objects, b"q 612 0 0 792 0 0 cm /Im1 Do Q /Pattern cs /P0 scn 0 0 612 792 re f\n",
               b"/XObject << /Im1 8 0 R >> /Pattern << /P0 6 0 R >>")


def inline_image_bomb_pdf(side: int = 40_000) -> bytes:
    """A page with no text whose inline image inflates to side² bytes (1.6 GB from 1.5 MB):
    pdfium decodes it when it loads the page, before anything is drawn."""
    import zlib

    image = zlib.compress(bytes(side * side), 9)
    return pdf({}, b"q 612 0 0 792 0 0 cm BI /W %d /H %d /CS /G /BPC 8 /F /Fl ID " % (side, side)
               + image + b" EI Q\n", b"")
