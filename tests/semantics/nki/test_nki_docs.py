"""docs/nki.md's table of supported calls names every call the importer runs
(semantics/nki/calls.py), and every engine default it states is the importer's."""

from __future__ import annotations

import re
from pathlib import Path

from semantics.nki.calls import CALLS

DOC = Path(__file__).resolve().parents[3] / "docs" / "nki.md"


def _rows() -> dict[str, str]:
    """Call name -> the engine cell of its table row."""
    rows = {}
    for line in DOC.read_text().splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 3 and cells[1].startswith("`"):
            for name in re.findall(r"`([\w.]+)`", cells[1]):
                rows[name] = cells[2]
    return rows


def test_every_supported_call_is_in_the_table_with_its_engine():
    rows = _rows()
    missing = sorted(set(CALLS) - set(rows))
    assert not missing, f"docs/nki.md lacks {missing}"
    for name, call in CALLS.items():
        if call.kind != "alloc" and call.engine != "DMA":
            assert rows[name].startswith(call.engine), (name, rows[name], call.engine)
        assert ("*compiler*" in rows[name]) == call.chosen_by_compiler, name


def test_the_table_names_no_call_the_importer_lacks():
    assert set(_rows()) <= set(CALLS)
