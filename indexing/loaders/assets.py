"""Site assets and generated code: files a folder holds that nobody asks questions about.

A documentation site's folder carries its stylesheet, scripts, fonts and images
next to the pages; indexed, `stylesheet.css` became "code" and minified bundles
one-line chunks of noise. A plain folder ingest leaves assets out (unless asked);
a repository keeps real code but not bundled or minified output.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

# Always assets in a folder of documents (images and fonts are refused anyway:
# they are listed so the rule reads whole).
STYLE_AND_MAP_EXTENSIONS = frozenset({".css", ".scss", ".sass", ".less", ".map"})
MEDIA_EXTENSIONS = frozenset(
    """.png .jpg .jpeg .gif .bmp .webp .ico .svg .ttf .otf .woff .woff2 .eot""".split()
)
SCRIPT_EXTENSIONS = frozenset({".js", ".mjs", ".cjs"})
# Folders where documentation generators put a site's own files (Sphinx's _static).
ASSET_FOLDERS = frozenset({"_static", "static", "assets", "_assets"})
# jquery.min.js, app.bundle.js, vendor-bundle.js, main.3f9a2c1d.js (a content hash).
_GENERATED_NAME = re.compile(
    r"(?:^|[.-])(?:min|bundle)\.(?:m?js|css)$|\.[0-9a-f]{8,}\.(?:m?js|css)$", re.IGNORECASE
)
# Minified text: some line this long, or lines this long on average.
_LONGEST_LINE = 1000
_MEAN_LINE = 250


def is_generated_name(name: str) -> bool:
    return bool(_GENERATED_NAME.search(name))


def looks_minified(head: str) -> bool:
    """Whether the start of a script or stylesheet is machine-written (minified, bundled)."""
    lines = [line for line in head.split("\n")[:-1] or [head] if line.strip()]
    if not lines:
        return False
    longest = max(len(line) for line in lines)
    return longest > _LONGEST_LINE or sum(map(len, lines)) / len(lines) > _MEAN_LINE


def is_generated_code(path: str, head: str) -> bool:
    """A bundled or minified script/stylesheet: a repository skips these."""
    posix = PurePosixPath(path.replace("\\", "/"))
    if posix.suffix.lower() not in SCRIPT_EXTENSIONS | {".css"}:
        return False
    return is_generated_name(posix.name) or looks_minified(head)


def is_site_asset(path: str, head: str) -> bool:
    """A file a plain folder ingest skips: styles, source maps, media, and scripts
    that are generated or live in a site's asset folder."""
    posix = PurePosixPath(path.replace("\\", "/"))
    ext = posix.suffix.lower()
    if ext in STYLE_AND_MAP_EXTENSIONS or ext in MEDIA_EXTENSIONS:
        return True
    if ext not in SCRIPT_EXTENSIONS:
        return False
    in_asset_folder = any(part.lower() in ASSET_FOLDERS for part in posix.parts[:-1])
    return in_asset_folder or is_generated_code(path, head)
