"""The ``odt`` check of the computer-use verifier (paragraph text of an OpenDocument file), run
through the rendered ``tests/test.sh`` like a real task, and document-writer's checks against
the document its oracle should leave behind (no desktop needed)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest

from environments.computer.families import (
    ODT_MIMETYPE,
    ODT_PLACEHOLDER,
    generate,
    odt_document,
)
from environments.computer.verifier import render_test_sh

HEADING = "Minutes of the office move meeting"
PARAS = ["Chair Ana Park, held on Monday in room 7.", "Open question on the desks order."]


def run_checks(tmp_path: Path, checks: list[dict[str, Any]], files: dict[str, bytes]) -> dict[str, Any]:
    ws, logs = tmp_path / "ws", tmp_path / "logs"
    ws.mkdir(parents=True, exist_ok=True)
    for rel, data in files.items():
        (ws / rel).write_bytes(data)
    script = tmp_path / "test.sh"
    script.write_text(render_test_sh(checks))
    out = subprocess.run(["bash", str(script)], cwd=ws, capture_output=True, text=True, timeout=60, check=False,
                         env={**os.environ, "WORKSPACE": str(ws), "LOGS_DIR": str(logs)})
    assert out.returncode == 0, out.stderr
    flat = json.loads((logs / "verifier" / "reward.json").read_text())
    doc = json.loads((logs / "verifier" / "checks.json").read_text())
    assert flat == {"reward": doc["reward"], **{f"check.{k}": int(v) for k, v in doc["checks"].items()}}
    return doc


def odt_from_content(body: str, mimetype: str = ODT_MIMETYPE) -> bytes:
    """An .odt whose office:text holds ``body`` (raw XML, as LibreOffice writes it)."""
    content = ('<?xml version="1.0" encoding="UTF-8"?><office:document-content '
               'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
               'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:text>'
               + body + "</office:text></office:body></office:document-content>")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype"), mimetype)
        z.writestr("content.xml", content, compress_type=zipfile.ZIP_DEFLATED)
    return buf.getvalue()


def test_odt_document_is_a_valid_odf_package() -> None:
    data = odt_document(PARAS, HEADING)
    assert data == odt_document(PARAS, HEADING)  # deterministic bytes
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        first = z.infolist()[0]
        assert first.filename == "mimetype" and first.compress_type == zipfile.ZIP_STORED
        assert z.read("mimetype").decode() == ODT_MIMETYPE
        assert {"META-INF/manifest.xml", "content.xml"} <= set(z.namelist())
    assert data[30:38] == b"mimetype" and data[38:38 + len(ODT_MIMETYPE)] == ODT_MIMETYPE.encode()


def test_correct_document_passes(tmp_path: Path) -> None:
    checks = [
        {"name": "lines", "kind": "odt", "path": "d.odt", "lines": [HEADING, *PARAS], "mimetype": ODT_MIMETYPE},
        {"name": "equals", "kind": "odt", "path": "d.odt", "equals": "\n".join([HEADING, *PARAS]) + "\n"},
        {"name": "contains", "kind": "odt", "path": "d.odt", "contains": ["room 7", "DESKS ORDER"]},
    ]
    got = run_checks(tmp_path, checks, {"d.odt": odt_document(PARAS, HEADING)})
    assert got == {"reward": 1.0, "checks": {"lines": True, "equals": True, "contains": True}}


@pytest.mark.parametrize("paras", [
    PARAS[:1],  # a paragraph missing
    [PARAS[0], "Open question on the chairs order."],  # a paragraph changed
    [*PARAS, "Action 101. Ben Silva sends the list."],  # an extra paragraph
    list(reversed(PARAS)),  # the order changed
])
def test_missing_changed_or_extra_paragraph_fails(tmp_path: Path, paras: list[str]) -> None:
    checks = [{"name": "lines", "kind": "odt", "path": "d.odt", "lines": [HEADING, *PARAS]}]
    assert run_checks(tmp_path, checks, {"d.odt": odt_document(paras, HEADING)})["reward"] == 0.0


def test_missing_or_broken_file_and_wrong_format_fail(tmp_path: Path) -> None:
    check = {"name": "c", "kind": "odt", "path": "d.odt", "contains": ["room"], "mimetype": ODT_MIMETYPE}
    assert run_checks(tmp_path / "a", [check], {})["reward"] == 0.0
    assert run_checks(tmp_path / "b", [check], {"d.odt": b"Chair Ana Park, held in room 7.\n"})["reward"] == 0.0
    docx_like = odt_from_content("<text:p>room 7</text:p>", mimetype="application/zip")
    assert run_checks(tmp_path / "c", [check], {"d.odt": docx_like})["reward"] == 0.0
    assert run_checks(tmp_path / "d", [check], {"d.odt": odt_from_content("<text:p>room 7</text:p>")})["reward"] == 1.0
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:  # no mimetype entry
        z.writestr("content.xml", "<x/>")
    assert run_checks(tmp_path / "e", [check], {"d.odt": buf.getvalue()})["reward"] == 0.0


def test_libreoffice_markup_reads_as_plain_text(tmp_path: Path) -> None:
    """Spans, links, text:s, soft page breaks, empty paragraphs, lists; autocorrect's quotes and
    dashes; footnotes and comments are not part of the paragraph."""
    body = ('<text:h text:outline-level="1">Minutes</text:h>'
            '<text:p text:style-name="P1">Action<text:s/>101. <text:span text:style-name="T1">Ben</text:span> '
            'sends the <text:a xlink:href="x" xmlns:xlink="http://www.w3.org/1999/xlink">list</text:a>.'
            '<text:note><text:note-body><text:p>a footnote</text:p></text:note-body></text:note></text:p>'
            '<text:p/><text:soft-page-break/>'
            '<text:list><text:list-item><text:p>It\u2019s \u201cdone\u201d \u2013 two<text:s text:c="2"/>spaces.</text:p>'
            '</text:list-item></text:list>'
            '<office:annotation><text:p>a comment</text:p></office:annotation>')
    checks = [{"name": "lines", "kind": "odt", "path": "d.odt",
               "lines": ["Minutes", "Action 101. Ben sends the list.", 'It\'s "done" - two  spaces.']}]
    assert run_checks(tmp_path, checks, {"d.odt": odt_from_content(body)})["reward"] == 1.0


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_document_writer_checks_accept_the_edit_and_reject_others(tmp_path: Path, difficulty: str, seed: int) -> None:
    task = generate("document-writer", seed, difficulty)  # type: ignore[arg-type]
    (name, original), = task.files.items()
    assert isinstance(original, bytes)
    want = task.checks[0]["lines"]
    heading, body = want[0], want[1:]
    # what the oracle leaves: the expected document (as Writer saves it, with styles and spans)
    assert run_checks(tmp_path / "ok", task.checks, {name: odt_document(body, heading)})["reward"] == 1.0
    # the untouched document (no-op)
    assert run_checks(tmp_path / "noop", task.checks, {name: original})["reward"] == 0.0
    # the new text in the wrong place, or the placeholder left beside it
    wrong = [body[-1], *body[:-1]]
    assert run_checks(tmp_path / "wrong", task.checks, {name: odt_document(wrong, heading)})["reward"] == 0.0
    if difficulty != "easy":
        assert ODT_PLACEHOLDER not in body
        kept = [q for p in body for q in ([ODT_PLACEHOLDER, p] if p.startswith("Summary ") else [p])]
        assert run_checks(tmp_path / "kept", task.checks, {name: odt_document(kept, heading)})["reward"] == 0.0
    # a typo in the typed paragraph
    typo = [*body[:-1], body[-1].replace(".", ",", 1)]
    assert run_checks(tmp_path / "typo", task.checks, {name: odt_document(typo, heading)})["reward"] == 0.0
