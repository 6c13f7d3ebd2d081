"""Verifier scripts for computer-use tasks: checks over the workspace's files, documents and
app settings, rendered into a self-contained ``tests/test.sh`` (stdlib Python only).

Check kinds (paths relative to the workspace):
- ``{"kind": "text", "path", "equals"?: str, "contains"?: [..], "lines"?: [..]}`` — file text
  (``equals`` and ``lines`` compare with trailing whitespace per line and at the end ignored);
- ``{"kind": "exists", "path"}`` / ``{"kind": "absent", "path"}``;
- ``{"kind": "csv", "path", "rows"?: [[..]], "has_row"?: [..], "cell"?: {"row", "col", "value"}}``
  (numbers compare as numbers);
- ``{"kind": "ini", "path", "section", "key", "value"}`` — a key of an INI/GSettings keyfile;
- ``{"kind": "odt", "path", "equals"?: str, "contains"?: [..], "lines"?: [..], "mimetype"?: str}`` — the
  text of an OpenDocument file (``.odt``): its paragraphs and headings (``text:p`` / ``text:h``
  in ``content.xml``, in document order; spans, links, ``text:s`` / ``text:tab`` /
  ``text:line-break`` read as text; footnotes, comments and tracked deletions left out), one
  line per paragraph with empty paragraphs dropped, compared like ``text``. Typographic
  quotes and dashes and non-breaking spaces (what LibreOffice's autocorrect may type) read as
  their ASCII forms. ``mimetype``: the package's ``mimetype`` entry must equal it (the file
  was saved in that ODF format).
Reward 1.0 only when every check passes; ``reward.json`` is numeric (``reward`` and
``check.<name>`` = 1/0, as Harbor reads it) and ``checks.json`` lists each check's outcome.
"""

from __future__ import annotations

import json
from typing import Any

VERIFIER_PY = r'''
import configparser, csv, json, os, sys, zipfile
import xml.etree.ElementTree as ET

CHECKS = json.loads(__CHECKS__)
WS = os.environ.get("WORKSPACE") or os.getcwd()

def path(rel):
    return os.path.join(WS, rel)

def read(rel):
    with open(path(rel), encoding="utf-8") as f:
        return f.read()

def norm_text(t):
    return "\n".join(line.rstrip() for line in t.replace("\r\n", "\n").split("\n")).rstrip()

def same_cell(a, b):
    a, b = str(a).strip(), str(b).strip()
    try:
        return abs(float(a) - float(b)) < 0.005
    except ValueError:
        return a.casefold() == b.casefold()

def same_row(r, want):
    return len(r) == len(want) and all(same_cell(x, y) for x, y in zip(r, want))

ODF_TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
ODF_OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
PARA = {"{%s}p" % ODF_TEXT, "{%s}h" % ODF_TEXT}
SKIP = {"{%s}note" % ODF_TEXT, "{%s}tracked-changes" % ODF_TEXT, "{%s}annotation" % ODF_OFFICE,
        "{%s}deletion" % ODF_TEXT}
ASCII = {"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201c": '"', "\u201d": '"', "\u201e": '"',
         "\u2013": "-", "\u2014": "-", "\u00a0": " ", "\u202f": " ", "\u2011": "-"}

def odt_inline(el):
    out = [el.text or ""]
    for ch in el:
        if ch.tag == "{%s}s" % ODF_TEXT:
            out.append(" " * int(ch.get("{%s}c" % ODF_TEXT, "1")))
        elif ch.tag == "{%s}tab" % ODF_TEXT:
            out.append("\t")
        elif ch.tag == "{%s}line-break" % ODF_TEXT:
            out.append("\n")
        elif ch.tag not in SKIP:
            out.append(odt_inline(ch))
        out.append(ch.tail or "")
    return "".join(out)

def odt_paragraphs(rel):
    """The text of each non-empty paragraph/heading of an ODF document, in document order."""
    with zipfile.ZipFile(path(rel)) as z:
        root = ET.fromstring(z.read("content.xml"))
    paras = []
    def walk(el):
        for ch in el:
            if ch.tag in SKIP:
                continue
            if ch.tag in PARA:
                t = "".join(ASCII.get(x, x) for x in odt_inline(ch))
                if t.strip():
                    paras.append(t)
            else:
                walk(ch)
    walk(root)
    return paras

def odt_mimetype(rel):
    with zipfile.ZipFile(path(rel)) as z:
        return z.read("mimetype").decode("ascii", "replace").strip()

def text_ok(c, t):
    if "equals" in c and norm_text(t) != norm_text(c["equals"]):
        return False
    if any(s.casefold() not in t.casefold() for s in c.get("contains", [])):
        return False
    if "lines" in c and [l for l in norm_text(t).split("\n")] != [norm_text(l) for l in c["lines"]]:
        return False
    return True

def check(c):
    k = c["kind"]
    if k == "exists":
        return os.path.exists(path(c["path"]))
    if k == "absent":
        return not os.path.exists(path(c["path"]))
    if k == "text":
        if not os.path.isfile(path(c["path"])):
            return False
        return text_ok(c, read(c["path"]))
    if k == "odt":
        if not os.path.isfile(path(c["path"])) or not zipfile.is_zipfile(path(c["path"])):
            return False
        if "mimetype" in c and odt_mimetype(c["path"]) != c["mimetype"]:
            return False
        return text_ok(c, "\n".join(odt_paragraphs(c["path"])))
    if k == "csv":
        if not os.path.isfile(path(c["path"])):
            return False
        rows = [r for r in csv.reader(read(c["path"]).splitlines()) if any(x.strip() for x in r)]
        if "rows" in c and not (len(rows) == len(c["rows"]) and all(same_row(r, w) for r, w in zip(rows, c["rows"]))):
            return False
        if "has_row" in c and not any(same_row(r, c["has_row"]) for r in rows):
            return False
        return True
    if k == "ini":
        if not os.path.isfile(path(c["path"])):
            return False
        p = configparser.ConfigParser(interpolation=None)
        p.optionxform = str
        try:
            p.read_string(read(c["path"]))
            got = p.get(c["section"], c["key"])
        except (configparser.Error, KeyError):
            return False
        return got.strip().strip("'\"").casefold() == str(c["value"]).casefold()
    raise ValueError("unknown check kind " + k)

results = {}
for c in CHECKS:
    try:
        results[c["name"]] = bool(check(c))
    except Exception as exc:
        print("check", c["name"], "error:", type(exc).__name__, exc, file=sys.stderr)
        results[c["name"]] = False
reward = 1.0 if results and all(results.values()) else 0.0
out = os.path.join(os.environ.get("LOGS_DIR") or "/logs", "verifier")
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "reward.txt"), "w") as f:
    f.write(str(reward) + "\n")
metrics = {"reward": reward}
metrics.update({"check." + name: int(ok) for name, ok in results.items()})
with open(os.path.join(out, "reward.json"), "w") as f:
    json.dump(metrics, f, indent=1)
with open(os.path.join(out, "checks.json"), "w") as f:
    json.dump({"reward": reward, "checks": results}, f, indent=1)
for name, ok in results.items():
    print(("PASS " if ok else "FAIL ") + name)
print("reward", reward)
'''


def render_test_sh(checks: list[dict[str, Any]]) -> str:
    """A ``tests/test.sh`` running the checks with the system python3 (stdlib only)."""
    names = [c.get("name") for c in checks]
    if len(set(names)) != len(names) or not all(names):
        raise ValueError("every check needs a unique name")
    body = VERIFIER_PY.replace("__CHECKS__", repr(json.dumps(checks, sort_keys=True)))
    return ("#!/usr/bin/env bash\n# Verifier of a computer-use task: checks files, documents and app settings.\n"
            "set -u\nexec python3 - <<'OPENFORGE_VERIFIER'\n" + body + "OPENFORGE_VERIFIER\n")
