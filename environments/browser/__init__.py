"""The browser-use environment: mock websites served inside the sandbox (``sites/``,
``app.py``, ``serve.py``), Chromium over CDP via Playwright (``session.py``), the Table A3
action space (``actions.py``) and its executor (``executor.py``), the oracle replay
(``replay.py``), task builders and procedural families (``taskgen.py``, ``families.py``) and
the sandbox probe for bench/gui.py (``probe.py``). See README.md.

Importing this package is cheap (no Playwright, no Starlette): the domain registry reads
``domain`` (the sites' names and launcher).
"""
