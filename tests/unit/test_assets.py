"""Which files of a folder are site assets or generated code (indexing.loaders.assets)."""

from indexing.loaders.assets import is_generated_code, is_site_asset, looks_minified

SOURCE_JS = "\n".join(
    ["// Highlight the search words on the page.", "function highlight(words) {"]
    + [f"  const part{i} = words[{i}];" for i in range(40)]
    + ["}"]
)
MINIFIED_JS = "!function(e,t){" + ";".join(f"var a{i}=e[{i}]" for i in range(400)) + "}();\n"


def test_minified_text_is_recognised_by_its_lines():
    assert looks_minified(MINIFIED_JS)
    assert not looks_minified(SOURCE_JS)
    assert not looks_minified("")


def test_a_repository_keeps_source_scripts_but_not_bundles():
    assert not is_generated_code("src/search.js", SOURCE_JS)
    assert is_generated_code("src/search.js", MINIFIED_JS)
    assert is_generated_code("vendor/jquery.min.js", SOURCE_JS)
    assert is_generated_code("dist/app.bundle.js", SOURCE_JS)
    assert is_generated_code("build/main.3f9a2c1d.js", SOURCE_JS)
    assert not is_generated_code("src/tides.py", MINIFIED_JS)


def test_a_plain_folder_treats_styles_maps_and_static_scripts_as_assets():
    assert is_site_asset("stylesheet.css", "body { color: black; }\n")
    assert is_site_asset("_static/pygments.css", "")
    assert is_site_asset("app.js.map", "{}")
    assert is_site_asset("_static/searchtools.js", SOURCE_JS)
    assert is_site_asset("js/app.min.js", SOURCE_JS)
    assert is_site_asset("js/app.js", MINIFIED_JS)
    assert not is_site_asset("tools/highlight.js", SOURCE_JS)
    assert not is_site_asset("library/json.html", "<html>")
    assert not is_site_asset("static/notes.md", "# Notes")
