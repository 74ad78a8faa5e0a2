"""The README's commands must run as written after `scripts/setup.sh`, which installs into ./.venv only."""
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_commands_are_on_path_after_setup():
    # A bare `tablesight` is not on PATH after setup.sh (it makes .venv and does not activate it), so every command
    # line in a README code block must call .venv/bin/tablesight.
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S)
    assert blocks
    bare = [line for block in blocks for line in block.splitlines()
            if re.match(r"\s*tablesight\s", line) or re.search(r"&&\s*tablesight\s", line)]
    assert bare == [], f"README commands not on PATH after setup: {bare}"
