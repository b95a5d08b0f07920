"""The documents a reader follows: every relative link of the project's Markdown names a file
the repository has, and every `#anchor` a heading of that file; the README stays an entry."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
SKIPPED = {".build", ".venv", "artifacts", "node_modules"}


def documents():
    return sorted(p for p in ROOT.rglob("*.md")
                  if not SKIPPED.intersection(p.relative_to(ROOT).parts)
                  and not any(part.startswith(".") for part in p.relative_to(ROOT).parts))


def slug(heading):
    """GitHub's anchor of a heading: lower case, markup and punctuation but `-` and `_`
    dropped, spaces as `-`."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path):
    text = re.sub(r"(?ms)^```.*?^```", "", path.read_text())
    return {slug(m.group(1)) for m in re.finditer(r"(?m)^#{1,6} (.+)$", text)}


def links(path):
    text = re.sub(r"(?ms)^```.*?^```", "", path.read_text())
    text = re.sub(r"`[^`\n]*`", "", text)
    found = re.findall(r"\]\(([^)\s]+)\)", text) + re.findall(r'src="([^"]+)"', text)
    return [target for target in found if not re.match(r"^[a-z]+:", target)]


def test_every_relative_link_names_a_file_and_a_heading_that_are_there():
    broken = []
    checked = 0
    for document in documents():
        for target in links(document):
            file, _, anchor = target.partition("#")
            goal = (document.parent / file).resolve() if file else document
            checked += 1
            if not goal.exists():
                broken.append(f"{document.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and goal.suffix == ".md" and anchor not in anchors(goal):
                broken.append(f"{document.relative_to(ROOT)}: {target} (no such heading)")
    assert checked > 30
    assert not broken, "\n".join(broken)


def test_the_readme_is_an_entry_and_maps_the_manual():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) <= 20 * 1024
    # The benchmarks' page is the current table and the goals; dated runs live in bench/results/.
    assert len((ROOT / "BENCHMARKS.md").read_bytes()) <= 25 * 1024
    manual = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert manual, "no manual in docs/"
    for name in manual:
        assert f"(docs/{name})" in readme, f"README's map of the manual leaves out docs/{name}"
