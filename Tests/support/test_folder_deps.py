"""The folders inside every target use each other one way (scripts/folder-deps), and the
scan finds a circle when there is one."""
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCAN = os.path.join(ROOT, "scripts", "folder-deps")
TARGETS = sorted(
    name for name in os.listdir(os.path.join(ROOT, "Sources"))
    if any(os.path.isdir(os.path.join(ROOT, "Sources", name, entry)) and not entry.endswith(".docc")
           for entry in os.listdir(os.path.join(ROOT, "Sources", name))))


def scan(path):
    return subprocess.run([sys.executable, SCAN, path], capture_output=True, text=True)


@pytest.mark.parametrize("target", TARGETS)
def test_no_circle_among_a_targets_folders(target):
    result = scan(os.path.join(ROOT, "Sources", target))
    assert result.returncode == 0, result.stdout


def test_the_server_is_scanned():
    assert "RefreshServer" in TARGETS and "RefreshFeed" in TARGETS


def write(root, files):
    for path, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
        with open(os.path.join(root, path), "w") as file:
            file.write(textwrap.dedent(text))


def test_a_circle_through_types_is_found(tmp_path):
    write(tmp_path, {
        "A/Alpha.swift": "struct Alpha { var beta: Beta? }\n",
        "B/Beta.swift": "// Alpha is only named in a comment here\nstruct Beta { let name = \"Alpha\" }\n",
    })
    assert scan(str(tmp_path)).returncode == 0
    write(tmp_path, {"B/Beta.swift": "struct Beta { var alpha: Alpha? }\n"})
    result = scan(str(tmp_path))
    assert result.returncode == 1 and "circle: A ⇄ B" in result.stdout


def test_a_circle_through_a_static_member_an_extension_adds_is_found(tmp_path):
    write(tmp_path, {
        "A/Alpha.swift": "struct Alpha {}\nenum Gamma {}\n",
        "B/Gamma+Parse.swift": "extension Gamma {\n    static func parse() -> Alpha { Alpha() }\n}\n",
        "A/Use.swift": "let parsed = Gamma.parse()\n",
    })
    result = scan(str(tmp_path))
    assert result.returncode == 1 and "Gamma.parse" in result.stdout


def test_strings_and_comments_are_read_as_what_they_are(tmp_path):
    write(tmp_path, {
        "A/Alpha.swift": "struct Alpha {}\n",
        # A `//` inside a string does not hide the rest of its line; an interpolation is code.
        "B/Beta.swift": 'let url = "http://example" + String(describing: Alpha.self)\nlet said = "\\(Gamma())"\n',
        "C/Gamma.swift": "struct Gamma {}\n/* Beta */ let note = #\"Beta // Alpha\"#\n",
    })
    result = scan(str(tmp_path))
    assert "B -> A: Alpha" in result.stdout and "B -> C: Gamma" in result.stdout
    assert "C -> " not in result.stdout
