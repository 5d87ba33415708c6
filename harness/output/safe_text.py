"""The one boundary between text the harness did not write and each kind of output.

A record's strings (workload, params, metric and machine names, reasons), a plugin's strings and the
environment's are data: whatever they hold, they must not steer a terminal (escape sequences), end a
Markdown table or inject markup, images and links, run as a spreadsheet formula, or be expanded by
Slurm. Each output kind takes such text through one function here: :func:`visible` for terminals
(and, through ``commands.common.SafeConsole``, everything the rich consoles print), :func:`markdown_cell` /
:func:`markdown_text` for Markdown, :func:`csv_cell` for CSV, :func:`slurm_filename` for
``#SBATCH`` paths. HTML goes through ``html.escape`` and XML through ElementTree, which are safe
already. Escaped characters stay readable (``\\x1b``, ``\\n``, ``\\ud800``), so nothing is hidden.
"""
from __future__ import annotations

import re
from typing import Any


# C0 controls but newline and tab, DEL, C1 controls, the bidirectional overrides and isolates
# ("Trojan source" reordering), and lone surrogates (not encodable: a UnicodeEncodeError later).
_UNSAFE = "\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_UNSAFE_IN_TEXT = re.compile(f"[{_UNSAFE}]")
_UNSAFE_ON_A_LINE = re.compile(f"[{_UNSAFE}\n\t]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: Any) -> str:
    """``text`` for a terminal or log: control characters, escape sequences, bidi overrides and
    lone surrogates shown as escapes; newlines and tabs kept."""
    return _UNSAFE_IN_TEXT.sub(_escape, str(text))


def one_line(text: Any) -> str:
    """:func:`visible`, newlines and tabs escaped too: text that must stay on one line (a cell)."""
    return _UNSAFE_ON_A_LINE.sub(_escape, str(text))


def has_unsafe(text: str) -> bool:
    """True when :func:`visible` would change ``text``."""
    return _UNSAFE_IN_TEXT.search(text) is not None


_TAG_OPEN = re.compile(r"<(?=[A-Za-z/!?])")


def no_tags(text: str) -> str:
    """``text`` with every '<' that could open an HTML tag, comment or autolink escaped ('<=' stays)."""
    return _TAG_OPEN.sub("&lt;", text)


def markdown_text(text: Any) -> str:
    """``text`` for one line of Markdown (a heading, a list item, a note): on one line, no raw HTML
    or autolink, no link or image (``](`` is escaped), backslashes kept literal."""
    out = one_line(text).replace("\\", "\\\\")
    return no_tags(out).replace("](", "\\](")


def code_span(text: Any) -> str:
    """``text`` as one Markdown code span (CommonMark): on one line, fenced by a run of backticks
    longer than any inside it and padded with spaces, so nothing in it ends the span early or is
    read as HTML, a heading or a link."""
    out = one_line(text)
    longest = max((len(run) for run in re.findall(r"`+", out)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {out} {fence}" if longest else f"`{out}`"


def markdown_cell(text: Any) -> str:
    """:func:`markdown_text` that also cannot split a table row (``|`` escaped)."""
    return markdown_text(text).replace("|", "\\|")


DISPLAY_CHARS = 200      # a name in a table or figure; longer ones are cut, marked and told apart


def shortened(text: str, limit: int = DISPLAY_CHARS) -> str:
    """``text`` whole up to ``limit`` characters; beyond, its head, how much was cut and a digest of
    the whole (two long names with one head stay apart). A reader's tables and figures stay linear
    in a 1 MiB name instead of laying it out."""
    if len(text) <= limit:
        return text
    import hashlib

    digest = hashlib.sha1(text.encode("utf-8", "backslashreplace")).hexdigest()[:8]
    return f"{text[:limit]}... [+{len(text) - limit} characters, #{digest}]"


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A text cell that a spreadsheet would run as a formula gets a leading apostrophe (OWASP's advice
    for CSV injection); numbers and other values are left alone."""
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value


def csv_frame(frame: Any) -> Any:
    """A pandas frame with :func:`csv_cell` applied to every body cell and every column name."""
    frame = frame.map(csv_cell) if hasattr(frame, "map") else frame.applymap(csv_cell)
    return frame.rename(columns=lambda c: csv_cell(c) if isinstance(c, str) else c)


def slurm_filename(path: Any) -> str:
    """A path for ``#SBATCH --output``/``--error``: a literal ``%`` doubled, so Slurm does not
    expand ``%j``/``%u`` in it (the caller adds the patterns it means)."""
    return str(path).replace("%", "%%")


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def surrogate_paths(value: Any, where: str = "") -> list[str]:
    """JSON paths of the strings and keys of ``value`` that hold a lone surrogate: text that is not
    valid Unicode, which no UTF-8 output can hold (a parsed str keeps a valid pair as one character)."""
    if isinstance(value, str):
        return [where or "(the value)"] if _LONE_SURROGATE.search(value) else []
    found: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            path = f"{where}.{k}" if where else str(k)
            if isinstance(k, str) and _LONE_SURROGATE.search(k):
                found.append(f"{path} (the name)")
            found += surrogate_paths(v, path)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += surrogate_paths(v, f"{where}[{i}]")
    return found


def escaped_surrogates(value: Any) -> Any:
    """``value`` with each lone surrogate written as its escape (``\\udc80``), keys included."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {escaped_surrogates(k): escaped_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [escaped_surrogates(v) for v in value]
    return value
