"""Procedural computer-use task families (files, spreadsheet, document, settings,
multi-app): seeded fixtures, varied instructions, an oracle plan of ``computer`` / ``bash``
/ ``str_replace_editor`` actions (replayed by the computer-use harness, so the oracle
drives the same action layer as the policy) and verifier checks over the workspace.

Each family is ``(rng, difficulty) -> GuiTask``; :func:`generate` makes (family, seed,
difficulty) deterministic. Apps: Mousepad (text editor; a window about a second after
launch), PCManFM (file manager) and LibreOffice Calc / Writer (spreadsheet-calc,
document-writer; about 4 s to a window). Oracles work the apps with the keyboard (plus a
click into the editor); their ``bash`` steps only wait for windows and files (``xdotool
search --sync``, polling the workspace). ``multi-app-reply`` adds a terminal window (xterm): its oracle starts a second
Mousepad from the terminal and files the saved reply there with typed shell commands.
"""

from __future__ import annotations

import io
import random
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from environments.computer import taskgen
from environments.family_registry import Difficulty, FamilyRegistry, FamilyTask
from environments.taskdir import TaskConfig

_SCALE = {"easy": 0, "medium": 1, "hard": 2}
#: Where GUI apps keep settings in settings tasks (relative to the workspace).
CONFIG_HOME = ".config"
KEYFILE = f"{CONFIG_HOME}/glib-2.0/settings/keyfile"

FIRST = ["Ana", "Ben", "Chloe", "Dev", "Elif", "Femi", "Gita", "Hugo", "Ines", "Jon", "Kira", "Luca", "Mona", "Nils"]
LAST = ["Park", "Silva", "Okafor", "Novak", "Haddad", "Berg", "Ito", "Costa", "Meyer", "Rossi", "Khan", "Lopez"]
REGIONS = ["north", "south", "east", "west", "central", "coastal"]
MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
ITEMS = ["laptops", "monitors", "desks", "chairs", "licenses", "travel", "catering", "printing", "cloud", "training",
         "phones", "cables"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
TOPICS = ["quarterly review", "office move", "budget freeze", "new hires", "server migration", "team offsite"]


def act(action: str, **args: Any) -> dict[str, Any]:
    """One ``computer`` action of an oracle plan."""
    return {"tool": "computer", "args": {"action": action, **args}}


def bash(command: str) -> dict[str, Any]:
    return {"tool": "bash", "args": {"command": command}}


def focus(title_regex: str) -> dict[str, Any]:
    """A ``bash`` step bringing the window whose title matches ``title_regex`` to the front.

    ``xdotool windowactivate --sync`` can wait forever when the request reaches the window
    manager before it manages the new window (seen under load), so activation is re-sent
    until ``getactivewindow`` names the window (at most ~60 s)."""
    return bash(f"w=$(xdotool search --sync --onlyvisible --name '{title_regex}' | head -1); "
                f"for i in $(seq 300); do xdotool windowactivate \"$w\" 2>/dev/null; "
                f"[ \"$(xdotool getactivewindow 2>/dev/null)\" = \"$w\" ] && break; sleep 0.2; done")


DONE = act("terminate", status="success")
#: The middle of the Mousepad window's text area (openbox centres new windows).
EDITOR_TEXT = [0.5, 0.5]


@dataclass
class GuiTask(FamilyTask):
    name_prefix: ClassVar[str] = "computer"

    files: dict[str, str | bytes]  # initial workspace files (bytes: binary, e.g. an .odt)
    apps: list[dict[str, Any]]  # desktop.json apps
    actions: list[dict[str, Any]]  # oracle plan
    checks: list[dict[str, Any]]
    keywords: list[str] = field(default_factory=list)
    config_home: str | None = None

    @property
    def fixtures(self) -> dict[str, Any]:
        """The seeded material (workspace files, apps, oracle plan), like a claw task's fixtures."""
        return {"workspace": self.files, "apps": self.apps, "oracle": self.actions}

    @property
    def services(self) -> list[str]:
        return []  # no mock services: the desktop is started by the harness

    def task_config(self, **kw: Any) -> TaskConfig:
        return taskgen.task_config(self, **kw)

    def task_files(self) -> dict[str, str | bytes]:
        return taskgen.task_files(self)


Family = Callable[[random.Random, Difficulty], GuiTask]
_REGISTRY: FamilyRegistry[GuiTask] = FamilyRegistry("computer-use", seed_prefix="computer:")
FAMILIES: dict[str, Family] = _REGISTRY.families
generate = _REGISTRY.generate


def family(name: str) -> Callable[[Family], Family]:
    return lambda fn: _REGISTRY.register(name, fn)


def _task(category: str, title: str, instruction: str, files: dict[str, str | bytes], apps: list[dict[str, Any]],
          actions: list[dict[str, Any]], checks: list[dict[str, Any]], keywords: list[str],
          config_home: str | None = None) -> GuiTask:
    return GuiTask(family="", seed=0, difficulty="easy", category=category, title=title, instruction=instruction.strip(),
                   files=files, apps=apps, actions=actions, checks=checks, keywords=keywords, config_home=config_home)


def _person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def _mousepad(path: str) -> dict[str, Any]:
    return {"argv": ["mousepad", path], "window": "mousepad"}


#: The terminal window: xterm with a fixed title (the shell may not retitle it) and an Xft
#: font (no X core fonts needed in the image).
TERMINAL_TITLE = "Terminal"
TERMINAL = {"argv": ["xterm", "-T", TERMINAL_TITLE, "-xrm", "XTerm*allowTitleOps: false", "-fa", "DejaVu Sans Mono",
                     "-fs", "11", "-geometry", "90x24", "-e", "bash"], "window": "xterm"}


def _in_terminal(command: str) -> list[dict[str, Any]]:
    """Bring the terminal window to the front and type ``command`` into its shell."""
    return [focus(f"^{TERMINAL_TITLE}$"), act("type", text=command + "\n")]


def _gui_type(text: str, *, click: bool = True, to_end: bool = False) -> list[dict[str, Any]]:
    """Click into the (centred) editor window, optionally jump to the end, type ``text``, save."""
    plan = [act("left_click", coordinate=EDITOR_TEXT)] if click else []
    if to_end:
        plan.append(act("key", text="ctrl+End"))
    return plan + [act("type", text=text), act("key", text="ctrl+s"), act("wait", duration=1.0)]


# 1 ───────────────────────────────────────────────────────────────── files: organize
def _pcmanfm_organize(n_reports: int, n_tmp: int, year: int) -> list[dict[str, Any]]:
    """Keyboard actions in PCManFM (open on inbox/): delete the .tmp files, cut the reports,
    make archive/<year> beside inbox/ and paste them there.

    In the detailed list (ctrl+4) the names sort notes-… < report-… < ~scratch… (the ~ sorts
    after letters in C collation and is ignored in glibc's locale collations), so the .tmp
    files are the last rows: End, then shift+Up. Typing ``report`` (type-ahead search; Escape closes its
    popup) selects the first report, shift+Down extends the selection over the others. A
    typed ``~`` would open the location bar instead, hence End for the .tmp files. Folders are
    entered through the location bar (ctrl+l, End, ``/name``), which does not wait for the
    view to list a new folder. The ``bash`` steps only wait (dialogs, files on disk)."""
    return [
        act("key", text="ctrl+4"), act("wait", duration=1.0),
        act("type", text="report"), act("key", text="Escape"),  # a cursor in the list
        act("key", text=" ".join(["End"] + ["shift+Up"] * (n_tmp - 1))),
        act("key", text="shift+Delete"), focus("^Confirm$"), act("key", text="Return"),  # Yes: delete
        bash("for i in $(seq 100); do ls inbox/*.tmp >/dev/null 2>&1 || break; sleep 0.2; done; ls inbox"),
        act("type", text="report"), act("key", text="Escape"),
        *([act("key", text=" ".join(["shift+Down"] * (n_reports - 1)))] if n_reports > 1 else []),
        act("key", text="ctrl+x"),
        act("key", text="alt+Up"),  # the workspace
        act("key", text="ctrl+shift+n"), focus("^Creating New Folder$"), act("type", text="archive\n"),
        bash("for i in $(seq 100); do [ -d archive ] && break; sleep 0.2; done; ls"),
        act("key", text="ctrl+l"), act("key", text="End"), act("type", text="/archive\n"), focus("^archive$"),
        act("key", text="ctrl+shift+n"), focus("^Creating New Folder$"), act("type", text=f"{year}\n"),
        bash(f"for i in $(seq 100); do [ -d archive/{year} ] && break; sleep 0.2; done; ls archive"),
        act("key", text="ctrl+l"), act("key", text="End"), act("type", text=f"/{year}\n"), focus(f"^{year}$"),
        act("key", text="ctrl+v"),
        bash(f"for i in $(seq 100); do ls inbox/report-* >/dev/null 2>&1 || break; sleep 0.2; done; "
             f"for i in $(seq 100); do [ $(ls archive/{year} | wc -l) -ge {n_reports} ] && break; sleep 0.2; done; "
             "ls -R inbox archive"),
    ]


@family("files-organize")
def files_organize(rng: random.Random, difficulty: Difficulty) -> GuiTask:
    n_reports, n_tmp = 2 + _SCALE[difficulty], 1 + _SCALE[difficulty]
    year = rng.choice([2024, 2025, 2026])
    reports = sorted({f"report-{rng.choice(REGIONS)}-{m}.txt" for m in rng.sample(MONTHS, n_reports)})
    junk = [f"~scratch{i}-{rng.randrange(100, 999)}.tmp" for i in range(n_tmp)]
    keep = f"notes-{rng.choice(TOPICS).replace(' ', '-')}.md"
    files = {f"inbox/{r}": f"{r.removesuffix('.txt')} {year}\nrevenue: {rng.randrange(1000, 99999)}\n" for r in reports}
    files.update({f"inbox/{j}": "temporary\n" for j in junk})
    files[f"inbox/{keep}"] = f"# {keep}\nkeep me\n"
    dest = f"archive/{year}"
    instruction = rng.choice([
        (f"Tidy up the inbox folder in your home workspace: move every report-*.txt file into {dest}/ (create it), "
         f"delete all .tmp files, and leave any other file in inbox/ where it is."),
        (f"Clean inbox/: the monthly report files (report-...txt) belong in {dest}/, the .tmp files should be "
         f"deleted, everything else stays."),
    ])
    actions = [act("screenshot"), *_pcmanfm_organize(len(reports), len(junk), year), DONE]
    checks = [{"name": f"moved_{r}", "kind": "text", "path": f"{dest}/{r}", "contains": [r.removesuffix('.txt')]}
              for r in reports]
    checks += [{"name": f"not_in_inbox_{r}", "kind": "absent", "path": f"inbox/{r}"} for r in reports]
    checks += [{"name": f"deleted_{j}", "kind": "absent", "path": f"inbox/{j}"} for j in junk]
    checks.append({"name": "kept_other_file", "kind": "text", "path": f"inbox/{keep}", "equals": files[f"inbox/{keep}"]})
    return _task("files", f"Organize inbox into {dest}", instruction, files,
                 [{"argv": ["pcmanfm", "--no-desktop", "inbox"], "window": "pcmanfm"}], actions, checks,
                 ["files", "file-manager", "organize"])


class _Budget(NamedTuple):
    """A spreadsheet family's budget: item names, the row to change and its new amount, the
    amounts after the change and their total, and the CSV lines before the change."""

    names: list[str]
    target: int
    new: float
    after: list[float]
    total: float
    lines: list[str]


def _budget(rng: random.Random, k: int, max_cents: int) -> _Budget:
    names = rng.sample(ITEMS, k)
    amounts = [round(rng.randrange(1000, max_cents) / 100, 2) for _ in names]
    target = rng.randrange(k)
    new = round(rng.randrange(1000, max_cents) / 100, 2)
    after = list(amounts)
    after[target] = new
    lines = ["item,amount"] + [f"{n},{a:.2f}" for n, a in zip(names, amounts, strict=True)]
    return _Budget(names, target, new, after, round(sum(after), 2), lines)


# 2 ─────────────────────────────────────────────────────────── spreadsheet: total
@family("spreadsheet-total")
def spreadsheet_total(rng: random.Random, difficulty: Difficulty) -> GuiTask:
    k = 4 + 2 * _SCALE[difficulty]
    names, target, new, after, total, lines = _budget(rng, k, 500000)
    instruction = rng.choice([
        (f"In the spreadsheet budget.csv, change the amount of \"{names[target]}\" to {new:.2f}, then add a last "
         f"row TOTAL with the sum of all amounts (two decimals)."),
        (f"Update budget.csv: {names[target]} now costs {new:.2f}. Append a final row whose item is TOTAL and whose "
         f"amount is the new sum of the amount column, with 2 decimals."),
    ])
    # Mousepad has budget.csv open: the target row is line target + 2 (after the header), so
    # ctrl+Home then Down (target + 1) times lands at its start; shift+End selects the row and
    # typing replaces it. The file ends with a newline, so ctrl+End is the start of an empty
    # last line: type the TOTAL row there, save, and wait until the file on disk has it.
    actions = [act("screenshot"), act("left_click", coordinate=EDITOR_TEXT),
               act("key", text="ctrl+Home"), act("key", text=" ".join(["Down"] * (target + 1))),
               act("key", text="shift+End"), act("type", text=f"{names[target]},{new:.2f}"),
               act("key", text="ctrl+End"), act("type", text=f"TOTAL,{total:.2f}\n"),
               act("key", text="ctrl+s"), act("wait", duration=1.0),
               bash("for i in $(seq 100); do grep -q '^TOTAL,' budget.csv && break; sleep 0.2; done; cat budget.csv"),
               act("screenshot"), DONE]
    rows = [["item", "amount"]] + [[n, f"{a:.2f}"] for n, a in zip(names, after)] + [["TOTAL", f"{total:.2f}"]]
    return _task("spreadsheet", f"Budget total ({k} items)", instruction, {"budget.csv": "\n".join(lines) + "\n"},
                 [_mousepad("budget.csv")], actions,
                 [{"name": "rows_and_total", "kind": "csv", "path": "budget.csv", "rows": rows}],
                 ["spreadsheet", "csv", "arithmetic"])


# 2b ──────────────────────────────────────────────── spreadsheet: LibreOffice Calc
@family("spreadsheet-calc")
def spreadsheet_calc(rng: random.Random, difficulty: Difficulty) -> GuiTask:
    k = 3 + 2 * _SCALE[difficulty]
    names, target, new, after, total, lines = _budget(rng, k, 200000)
    instruction = rng.choice([
        (f"budget.csv is open in LibreOffice Calc. Set the amount of {names[target]} to {new:.2f} and add a row "
         f"TOTAL below the last item whose amount is the sum of all amounts. Save the file, keeping the CSV format."),
        (f"In the Calc spreadsheet that is open (budget.csv): {names[target]} now costs {new:.2f}; append a TOTAL "
         f"row with the sum of the amount column under the items, then save it as CSV (same file)."),
    ])
    down = " ".join(["Down"] * (target + 1))
    actions = [
        act("screenshot"),
        # LibreOffice asks how to import the CSV first: accept the defaults.
        focus('Text Import'),
        act("key", text="Return"),
        focus('budget.csv - LibreOffice Calc'),
        act("key", text="ctrl+Home"), act("key", text=f"{down} Right"), act("type", text=f"{new:.2f}\n"),
        act("key", text="ctrl+Home"), act("key", text=" ".join(["Down"] * (k + 1))),
        act("type", text=f"TOTAL\t=SUM(B2:B{k + 1})\n"),
        act("key", text="ctrl+s"),
        focus('Confirm File Format|Keep current format'),
        act("key", text="Return"),  # the default button keeps the Text CSV format
        bash("for i in $(seq 100); do grep -q TOTAL budget.csv && break; sleep 0.2; done; cat budget.csv"),
        DONE,
    ]
    rows = [["item", "amount"]] + [[n, f"{a:.2f}"] for n, a in zip(names, after, strict=True)] + [["TOTAL", f"{total:.2f}"]]
    return _task("spreadsheet", f"Calc budget total ({k} items)", instruction, {"budget.csv": "\n".join(lines) + "\n"},
                 [{"argv": ["soffice", "--calc", "--norestore", "--nologo", "budget.csv"], "window": "libreoffice"}],
                 actions, [{"name": "rows_and_total", "kind": "csv", "path": "budget.csv", "rows": rows}],
                 ["spreadsheet", "libreoffice", "calc", "formula"])


# 3 ──────────────────────────────────────────────────────────── document: write
@family("document-write")
def document_write(rng: random.Random, difficulty: Difficulty) -> GuiTask:
    to, sender = _person(rng), _person(rng)
    topic = rng.choice(TOPICS)
    day = rng.choice(["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"])
    lines = [f"To: {to}", f"From: {sender}", f"Subject: {topic.capitalize()}"]
    body = [f"The {topic} meeting is on {day} at {rng.randrange(9, 17)}:00."]
    if difficulty != "easy":
        body.append(f"Please bring the {rng.choice(ITEMS)} list.")
    if difficulty == "hard":
        body.append(f"Reply by {rng.choice(['noon', 'end of day', 'Friday'])}.")
    lines += [""] + body
    text = "\n".join(lines)
    quoted = "\n".join(f"    {line}" for line in lines)
    opening = rng.choice([
        "The text editor has memo.txt open. Write this memo in it",
        "Type the following memo into memo.txt, which is open in Mousepad,",
        "Using the open text editor, put this memo into memo.txt",
    ])
    instruction = (f"{opening} exactly as shown (one line per line, the empty line included, no indentation) and "
                   f"save the file:\n\n{quoted}\n")
    return _task("document", f"Memo about {topic}", instruction, {}, [_mousepad("memo.txt")],
                 [act("screenshot"), *_gui_type(text), DONE],
                 [{"name": "memo_text", "kind": "text", "path": "memo.txt", "lines": lines}],
                 ["document", "text-editor", "typing"])


# 4 ─────────────────────────────────────────────────────────── settings: editor prefs
_SETTINGS = [
    ("tab-width", "tab width", lambda r: r.choice([2, 3, 4, 6, 8])),
    ("show-line-numbers", "line numbers shown", lambda r: "true"),
    ("word-wrap", "word wrap on", lambda r: "true"),
    ("highlight-current-line", "the current line highlighted", lambda r: "true"),
    ("show-right-margin", "the right margin shown", lambda r: "true"),
]
SCHEMA = "org.xfce.mousepad.preferences.view"
#: Keyboard focus order of the View page of Mousepad's Preferences dialog (Mousepad 0.5):
#: the page's tab label first, then these check buttons; the right-margin column spin button
#: joins the order (right after its check button) only once the margin is on.
_VIEW_FOCUS = ["show-line-numbers", "show-whitespace", "show-line-endings", "show-right-margin",
               "highlight-current-line", "match-braces", "word-wrap"]
_DEFAULT_TAB_WIDTH = 8


def _preferences_plan(values: list[tuple[str, str, Any]]) -> list[dict[str, Any]]:
    """Keyboard actions setting ``values`` in Mousepad's Preferences dialog (Edit > Preferences).

    The dialog opens on its View page with the focus on the page's tab label: Tab walks down
    the check buttons (:data:`_VIEW_FOCUS`) and space toggles one (every boolean here is off by
    default). ctrl+Page_Down then switches to the Editor page; as the focus was inside the View
    page, it moves to the Editor page's first widget, the tab-width spin button (from the tab
    label it would stay on the tabs). Its text is replaced and Tab commits it. A tab width
    equal to the default is first set to another value (an unchanged spin button writes
    nothing to the keyfile)."""
    plan = [act("key", text="alt+e"), act("key", text="End"), act("key", text="Return"),  # Edit > Preferences...
            focus("Mousepad Preferences")]
    toggles = {k for k, _, _ in values if k != "tab-width"}
    pos, margin_on = 0, False  # pos: the focused widget's index in the focus order (0: tab label)
    for key in _VIEW_FOCUS:
        if key not in toggles:
            continue
        order = _VIEW_FOCUS[:4] + (["right-margin-column"] if margin_on else []) + _VIEW_FOCUS[4:]
        target = order.index(key) + 1
        plan += [act("key", text=" ".join(["Tab"] * (target - pos))), act("key", text="space")]
        pos = target
        if key == "show-right-margin":
            margin_on = True
    width = next((v for k, _, v in values if k == "tab-width"), None)
    if width is not None:
        if pos == 0:  # still on the tab label: step into the page, so that the page switch moves the focus
            plan.append(act("key", text="Tab"))
        plan.append(act("key", text="ctrl+Page_Down"))
        steps = [width] if width != _DEFAULT_TAB_WIDTH else [width - 1, width]
        for i, w in enumerate(steps):
            if i:
                plan.append(act("key", text="shift+Tab"))  # back into the spin button
            plan += [act("key", text="ctrl+a"), act("type", text=str(w)), act("key", text="Tab")]
    return plan


@family("settings-editor")
def settings_editor(rng: random.Random, difficulty: Difficulty) -> GuiTask:
    picked = rng.sample(_SETTINGS, 1 + _SCALE[difficulty])
    values = [(key, label, fn(rng)) for key, label, fn in picked]
    wants = "; ".join(f"{label} = {v}" if key == "tab-width" else label for key, label, v in values)
    instruction = rng.choice([
        f"Change the preferences of the Mousepad text editor: {wants}.",
        f"Configure Mousepad (View preferences) so that: {wants}. The settings must persist.",
    ])
    waits = " && ".join(f"grep -q '^{key}={v}$' {KEYFILE}" for key, _, v in values)
    actions = [act("screenshot"), act("left_click", coordinate=EDITOR_TEXT), *_preferences_plan(values),
               bash(f"for i in $(seq 100); do {waits} && break; sleep 0.2; done; cat {KEYFILE}"), act("screenshot"), DONE]
    section = "/".join(SCHEMA.split("."))
    checks = [{"name": f"set_{key}", "kind": "ini", "path": KEYFILE, "section": section, "key": key, "value": str(v)}
              for key, _, v in values]
    notes = f"{rng.choice(TOPICS)} notes\n" + "\n".join(f"- {i}" for i in rng.sample(ITEMS, 3)) + "\n"
    return _task("settings", "Mousepad preferences", instruction, {"notes.txt": notes},
                 [_mousepad("notes.txt")], actions, checks, ["settings", "preferences", "text-editor"],
                 config_home=CONFIG_HOME)


# 5 ─────────────────────────────────────────────── multi-app: editor + shell/files
@family("multi-app-reply")
def multi_app_reply(rng: random.Random, difficulty: Difficulty) -> GuiTask:
    inv = f"INV-{rng.randrange(10000, 99999)}"
    total = f"{rng.randrange(100, 9999)}.{rng.randrange(0, 99):02d}"
    customer = _person(rng)
    lines = [f"Invoice {inv}", f"Customer: {customer}"]
    lines += [f"{rng.choice(ITEMS)}: {rng.randrange(10, 999)}.00" for _ in range(2 + _SCALE[difficulty])]
    lines.append(f"Total due: {total}")
    invoice = "\n".join(lines) + "\n"
    reply = [f"Dear {customer},", f"invoice {inv} totals {total}."]
    folder = "outbox" if difficulty != "hard" else f"outbox/{inv.lower()}"
    opening = rng.choice(["invoice.txt is open in the text editor, and a terminal is open. Using the editor, create",
                          "Answer the invoice shown in the text editor (a terminal is open too): with the editor, write",
                          "Read invoice.txt (open in Mousepad; there is also a terminal) and, in the text editor, make"])
    instruction = (f"{opening} reply.txt with exactly two lines: \"Dear <customer name>,\" and \"invoice <invoice "
                   f"number> totals <total due>.\" (values from invoice.txt). Save it, then move reply.txt into the "
                   f"folder {folder}/ (create it). Do not change invoice.txt.")
    # The invoice is on screen; the terminal opens a second Mousepad for the reply, which is
    # typed and saved there; back in the terminal, the reply is filed. bash only waits.
    actions = [
        act("screenshot"),
        *_in_terminal("mousepad reply.txt &"),
        focus('reply.txt'),
        *_gui_type("\n".join(reply), click=False),  # the new window is focused, not centred
        bash("for i in $(seq 100); do [ -s reply.txt ] && break; sleep 0.2; done"),
        *_in_terminal(f"mkdir -p {folder} && mv reply.txt {folder}/ && ls {folder}"),
        bash(f"for i in $(seq 100); do [ -s {folder}/reply.txt ] && break; sleep 0.2; done; ls {folder}"),
        act("screenshot"),
        DONE,
    ]
    checks = [
        {"name": "reply_moved", "kind": "text", "path": f"{folder}/reply.txt", "lines": reply},
        {"name": "reply_not_left_behind", "kind": "absent", "path": "reply.txt"},
        {"name": "invoice_unchanged", "kind": "text", "path": "invoice.txt", "equals": invoice},
    ]
    return _task("multi-app", f"Reply to invoice {inv}", instruction, {"invoice.txt": invoice},
                 [_mousepad("invoice.txt"), TERMINAL], actions, checks, ["multi-app", "text-editor", "terminal", "files"])


# 6 ──────────────────────────────────────────────────── document: LibreOffice Writer
ODT_MIMETYPE = "application/vnd.oasis.opendocument.text"
_ODT_MANIFEST = ('<?xml version="1.0" encoding="UTF-8"?>\n'
                 '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" '
                 'manifest:version="1.2">\n'
                 f' <manifest:file-entry manifest:full-path="/" manifest:version="1.2" manifest:media-type="{ODT_MIMETYPE}"/>\n'
                 ' <manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>\n'
                 '</manifest:manifest>\n')


def odt_document(paragraphs: list[str], heading: str | None = None) -> bytes:
    """A minimal OpenDocument text file: an optional level-1 heading, then one ``text:p`` per
    paragraph. The ``mimetype`` entry comes first and uncompressed (as ODF requires); entry
    dates are fixed, so the bytes depend only on the text."""
    from xml.sax.saxutils import escape

    body = [f'<text:h text:outline-level="1">{escape(heading)}</text:h>'] if heading is not None else []
    body += [f"<text:p>{escape(p)}</text:p>" for p in paragraphs]
    content = ('<?xml version="1.0" encoding="UTF-8"?>\n'
               '<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
               'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2">'
               "<office:body><office:text>" + "".join(body) + "</office:text></office:body></office:document-content>\n")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data, method in (("mimetype", ODT_MIMETYPE, zipfile.ZIP_STORED),
                                   ("META-INF/manifest.xml", _ODT_MANIFEST, zipfile.ZIP_DEFLATED),
                                   ("content.xml", content, zipfile.ZIP_DEFLATED)):
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = method
            z.writestr(info, data.encode("utf-8"))
    return buf.getvalue()


#: The placeholder paragraph of the medium and hard tasks (no words LibreOffice's autocorrect
#: or word completion would change when it is typed over).
ODT_PLACEHOLDER = "[write the summary here]"


def _writer_wait(name: str, token: str) -> dict[str, Any]:
    """A ``bash`` step waiting until the saved ``name`` (a zip) has ``token`` in content.xml."""
    probe = (f"import sys, zipfile; sys.exit(0 if {token!r}.encode() in "
             f"zipfile.ZipFile({name!r}).read('content.xml') else 1)")
    return bash(f"for i in $(seq 150); do python3 -c \"{probe}\" 2>/dev/null && break; sleep 0.2; done; ls -l {name}")


@family("document-writer")
def document_writer(rng: random.Random, difficulty: Difficulty) -> GuiTask:
    """Edit a small .odt in LibreOffice Writer: append a paragraph (easy), replace the
    placeholder paragraph (medium) or both (hard); save it as ODF.

    The typed text avoids what Writer's autocorrect rewrites while typing (no quotes, dashes,
    slashes, URLs, ordinals, list markers; every sentence starts with a capital), and every
    typed paragraph ends with a full stop, so no word-completion suggestion is pending when
    Return is pressed (Return would accept it); the verifier also reads typographic quotes and
    dashes as ASCII."""
    topic = rng.choice(TOPICS)
    name = rng.choice(["minutes.odt", "meeting.odt", "notes.odt"])
    chair, owner = _person(rng), _person(rng)
    day = rng.choice(DAYS)
    items = rng.sample(ITEMS, 3)
    heading = f"Minutes of the {topic} meeting"
    paras = [f"Chair {chair}, held on {day} in room {rng.randrange(2, 40)}.",
             f"The team went through the {items[0]} and {items[1]} figures."]
    if difficulty != "easy":
        paras.append(ODT_PLACEHOLDER)
    paras.append(f"Open question on the {items[2]} order.")
    summary = f"Summary {rng.randrange(100, 999)}. The {topic} plan stays and the {items[0]} budget grows."
    action = f"Action {rng.randrange(100, 999)}. {owner} sends the {items[1]} list by {rng.choice(DAYS)}."
    after = [p if p != ODT_PLACEHOLDER else summary for p in paras]
    if difficulty != "medium":
        after.append(action)
    steps = []
    if difficulty != "easy":
        steps.append(f"Replace the placeholder paragraph {ODT_PLACEHOLDER} with a paragraph reading exactly:\n\n"
                     f"    {summary}")
    if difficulty != "medium":
        steps.append(f"Add a new paragraph after the last paragraph, reading exactly:\n\n    {action}")
    opening = rng.choice([
        f"The document {name} is open in LibreOffice Writer. Edit it:",
        f"Edit {name} (open in LibreOffice Writer) and keep the rest of it as it is:",
    ])
    closing = rng.choice([f"Save the document in the same file and format ({name}, ODF text).",
                          f"Then save it as {name}, keeping the ODF format."])
    instruction = "\n\n".join([opening, *(f"{i + 1}. {s}" for i, s in enumerate(steps)), closing]) + "\n"
    title = f"{name} - LibreOffice Writer"
    plan: list[dict[str, Any]] = [act("screenshot"), focus(title)]
    if difficulty != "easy":
        # The placeholder is the (placeholder index + 1)th paragraph after the heading; every
        # paragraph fits on one line, so Down walks the paragraphs.
        plan += [act("key", text="ctrl+Home"), act("key", text=" ".join(["Down"] * (paras.index(ODT_PLACEHOLDER) + 1))),
                 act("key", text="Home shift+End"), act("type", text=summary)]
    if difficulty != "medium":
        plan += [act("key", text="ctrl+End"), act("key", text="Return"), act("type", text=action)]
    token = (action if difficulty != "medium" else summary).split(".")[0]  # "Action 123" / "Summary 456"
    plan += [act("key", text="ctrl+s"), act("wait", duration=1.0),
             _writer_wait(name, token), act("screenshot"), DONE]
    checks = [{"name": "document_text", "kind": "odt", "path": name, "lines": [heading] + after,
               "mimetype": ODT_MIMETYPE}]
    return _task("document", f"Writer: {topic} minutes", instruction, {name: odt_document(paras, heading)},
                 [{"argv": ["soffice", "--writer", "--norestore", "--nologo", name], "window": "libreoffice"}],
                 plan, checks, ["document", "libreoffice", "writer", "odt"])
