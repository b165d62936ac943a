"""The one way gpuwork reads a file someone named: regular files only, a size cap per kind, bounded parsing.

Every user-named file (``--from`` configs, ``--plan``, ``--catalog``, a model's config.json, trial records,
the tables under ``GPUWORK_DATA``) goes through ``read_text``; JSON and YAML then go through ``parse_json`` and
``parse_yaml``. What is refused, each with one line that names the file, the problem and the fix
(``ReadError``, a ``GpuworkError``; callers may re-raise its ``msg`` as their own error class):

- anything that is not a regular file: a folder, a FIFO (opened without blocking), a device such as
  ``/dev/zero``, a socket. Links are followed and their target judged; a dangling link and a link loop are
  told apart from a missing file;
- a file larger than its kind's cap (``FileKind``), judged from ``fstat`` and then by reading at most
  cap + 1 bytes, so a file that grows while read is still bounded;
- text that is not UTF-8;
- JSON nested deeper than ``MAX_DEPTH`` or with an integer longer than ``MAX_INT_DIGITS`` digits;
- YAML of more than ``MAX_YAML_NODES`` values with every alias expanded ("billion laughs"), more than
  ``MAX_YAML_ALIASES`` aliases, a value that contains itself, or nesting deeper than ``MAX_DEPTH``. The
  counts are kept while the document is composed, so parsing stops at the bound and no Python value is
  built or shown.

With the caps below, reading and parsing take about a second at most: ``docs/bounded_reads.md`` has the figures.
"""

from __future__ import annotations

import codecs
import errno
import functools
import json
import math
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuwork.errors import GpuworkError
from gpuwork.message import Msg, msg

MiB = 1 << 20


@dataclass(frozen=True)
class FileKind:
    """A kind of file and the most bytes gpuwork reads of it."""

    name: str  # catalog entry filekind.<name>: what the file is, in words
    max_bytes: int


# Real configs and plans are a few KB, a model's config.json at most a few hundred KB (label maps).
CONFIG = FileKind("config", 4 * MiB)
PLAN = FileKind("plan", 4 * MiB)
MODEL_CONFIG = FileKind("model_config", 4 * MiB)
# Tables of GPUs, offers and rates: the bundled ones are tens of KB; a user's own catalog may be far larger.
# 10 MiB is some 55,000 offers, which `gpuwork offers` ranks in well under a minute and 1 GiB
# (docs/bounded_reads.md).
TABLE = FileKind("table", 10 * MiB)
# A trial record grows with its steps (about 0.5 KB per step); 64 MiB is over 100,000 steps.
RECORD = FileKind("record", 64 * MiB)
# Texts a trial trains on or --lengths-from measures (.txt, .jsonl): a trial reads some millions of tokens,
# a few hundred MB of text at most. One document (a .txt file or one .jsonl line) is capped on its own
# (MAX_DOCUMENT_BYTES), since the tokenizer holds a whole document at once.
TEXT_DATA = FileKind("text_data", 256 * MiB)
MAX_DOCUMENT_BYTES = 8 * MiB  # a long book is 1-3 MB of text
# A tokenizer.json: the largest (250,000-entry vocabularies with merges) are 15-35 MB.
TOKENIZER = FileKind("tokenizer", 64 * MiB)
# gpuwork's own JSON tables and the user's calibration file (~/.config/gpuwork/calibration.json): KB in size.
SMALL_JSON = FileKind("table", 10 * MiB)

MAX_DEPTH = 64  # nesting of JSON/YAML values; configs use fewer than 10 levels
MAX_INT_DIGITS = 100  # digits in one integer; an int64 has 19
MAX_YAML_NODES = 50_000  # values of a YAML document, every alias expanded; configs hold a few hundred
MAX_YAML_ALIASES = 5_000  # alias uses in one YAML document

_FILE_TYPES = ((stat.S_ISFIFO, "fifo"), (stat.S_ISCHR, "char_device"), (stat.S_ISBLK, "block_device"),
               (stat.S_ISSOCK, "socket"))


# What a terminal or a page acts on instead of showing: DEL and C1 controls, and the invisible format characters
# that hide or reorder text (zero-width marks, line/paragraph separators, bidi embeddings, overrides and isolates,
# the BOM). With the C0 controls but newline and tab: text shown on a terminal (messages, CLI output); with every
# C0 control: one-line fields read from outside (a trial record's strings).
_INVISIBLE = "\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff"
UNSAFE_IN_TEXT = re.compile(f"[\x00-\x08\x0b-\x1f{_INVISIBLE}]")
UNSAFE_IN_FIELD = re.compile(f"[\x00-\x1f{_INVISIBLE}]")


def escape_chars(text: str, unsafe: re.Pattern[str] = UNSAFE_IN_TEXT) -> str:
    """``text`` with each character ``unsafe`` matches written as its escape (\\x1b, \\u202e): text from outside
    (a record's strings, a name a user typed) shown as data, never acted on by a terminal or page. The text itself
    when nothing needs escaping (the common case: one search, no copy)."""
    def one(match: re.Match[str]) -> str:
        code = ord(match.group())
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return unsafe.sub(one, text) if unsafe.search(text) else text


class ReadError(GpuworkError, ValueError):
    """A named file that gpuwork will not read, or cannot parse within its bounds."""

    def __init__(self, message: Msg, path: str):
        super().__init__(message)
        self.path = path


def _fail(code: str, path: str, **params: Any) -> ReadError:
    return ReadError(msg(code, path=path, **params), path)


def link_target(path: str | os.PathLike[str]) -> str:
    """Where a symbolic link points, as written in it ("?" when it cannot be read: gone, or not a link now)."""
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def _os_error(exc: OSError, path: str, missing: Msg | None) -> ReadError:
    if isinstance(exc, FileNotFoundError):
        if os.path.lexists(path):  # the name exists: a link whose target does not
            return _fail("error.read.dangling", path, target=link_target(path))
        return ReadError(missing, path) if missing is not None else _fail("error.file.not_found", path)
    if exc.errno == errno.ELOOP:
        return _fail("error.read.loop", path)
    if isinstance(exc, PermissionError):
        return _fail("error.file.permission", path)
    if isinstance(exc, IsADirectoryError):
        return _fail("error.file.is_directory", path)
    if exc.errno == errno.ENOTDIR:
        return _fail("error.read.not_dir_in_path", path)
    return _fail("error.file.os", path, reason=str(exc.strerror or exc))


def _too_large(path: str, size: int, kind: FileKind) -> ReadError:
    # rounded up, so a file just over the cap never reads as "16.0 MiB, more than 16 MiB"
    return _fail("error.read.too_large", path, size_mib=math.ceil(size * 10 / MiB) / 10,
                 limit_mib=kind.max_bytes // MiB, kind=kind.name)


def _judge(st: os.stat_result, path: str, kind: FileKind) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise _fail("error.file.is_directory", path)
    if not stat.S_ISREG(st.st_mode):
        what = next((name for test, name in _FILE_TYPES if test(st.st_mode)), "special")
        raise _fail("error.read.not_regular", path, what=what, kind=kind.name)
    if st.st_size > kind.max_bytes:
        raise _too_large(path, st.st_size, kind)


def read_bytes(path: str | os.PathLike[str], kind: FileKind, *, missing: Msg | None = None) -> bytes:
    """The bytes of a regular file, at most ``kind.max_bytes`` of them (else ``ReadError``).

    ``missing``: the message for a path that does not exist (a caller's own wording); links are followed.
    """
    name = os.fspath(path)
    if "\0" in name:  # os.stat would raise ValueError, not OSError
        raise _fail("error.read.nul_in_name", name.replace("\0", "\\0"))
    try:
        _judge(os.stat(name), name, kind)  # cheap refusal before opening (opening a device can act)
        # O_NONBLOCK: a FIFO swapped in after the stat opens at once instead of waiting for a writer
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
                     | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise _os_error(exc, name, missing) from None
    try:
        _judge(os.fstat(fd), name, kind)  # what was opened, not what the name meant a moment ago
        chunks, got = [], 0
        while got <= kind.max_bytes:
            chunk = os.read(fd, min(kind.max_bytes + 1 - got, 4 * MiB))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    except OSError as exc:
        raise _os_error(exc, name, missing) from None
    finally:
        os.close(fd)
    if got > kind.max_bytes:  # grew after fstat
        raise _too_large(name, got, kind)
    return b"".join(chunks)


def read_text(path: str | os.PathLike[str], kind: FileKind, *, missing: Msg | None = None,
              encoding: str = "utf-8") -> str:
    """The text of a regular UTF-8 file within ``kind``'s cap (``encoding="utf-8-sig"`` drops a BOM)."""
    data = read_bytes(path, kind, missing=missing)
    try:
        return codecs.decode(data, encoding)
    except UnicodeDecodeError as exc:
        raise _fail("error.file.not_utf8", os.fspath(path), byte=exc.start, reason=exc.reason) from None


# -- output paths -------------------------------------------------------------------------------------------


def _judge_existing_output(path: str, want_folder: bool) -> bool:
    """Whether ``path`` exists as what an output needs (a folder, or a regular file to replace); a dangling
    link, a link loop or the wrong kind of file is refused. False: nothing is there yet."""
    if not os.path.lexists(path):
        return False
    try:
        st = os.stat(path)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):  # a link whose target is gone: never create where it points
            raise _fail("error.write.dangling", path, target=link_target(path)) from None
        if exc.errno == errno.ELOOP:
            raise _fail("error.write.loop", path) from None
        raise _os_error(exc, path, None) from None
    if want_folder and not stat.S_ISDIR(st.st_mode):
        raise _fail("error.write.not_folder", path)
    if not want_folder:
        if stat.S_ISDIR(st.st_mode):
            raise _fail("error.write.is_folder", path)
        if not stat.S_ISREG(st.st_mode):
            what = next((name for test, name in _FILE_TYPES if test(st.st_mode)), "special")
            raise _fail("error.write.not_regular", path, what=what)
    return True


def _output_name(path: str | os.PathLike[str]) -> str:
    name = os.fspath(path)
    if not name.strip():
        raise _fail("error.write.empty", repr(name))
    if "\0" in name:
        raise _fail("error.read.nul_in_name", name.replace("\0", "\\0"))
    return os.path.expanduser(name)


def output_folder(path: str | os.PathLike[str]) -> Path:
    """The folder an output goes into, resolved: an existing folder, or one that can be made below an existing
    folder. A dangling link or a link loop (the path itself or a folder above it), a file where a folder
    belongs, or an empty name is refused (``ReadError``): nothing is ever created where a stale link points."""
    name = _output_name(path)
    if not _judge_existing_output(name, want_folder=True):
        above = os.path.dirname(os.path.abspath(name))
        while not _judge_existing_output(above, want_folder=True):
            above = os.path.dirname(above)
    return Path(os.path.realpath(name))


def output_file(path: str | os.PathLike[str]) -> Path:
    """A file an output is written to, resolved: its folder exists; the file is new or a regular file to replace
    (a folder, a FIFO, a device, a dangling link or a link loop is refused, ``ReadError``)."""
    name = _output_name(path)
    _judge_existing_output(name, want_folder=False)
    folder = os.path.dirname(os.path.abspath(name))
    if not os.path.isdir(folder):
        _judge_existing_output(folder, want_folder=True)  # a dangling link or a file names itself
        raise _fail("error.write.no_folder", name, folder=folder)
    return Path(os.path.realpath(name))


def inside_folder(folder: Path, names: Iterable[str]) -> None:
    """Refuse (``ReadError``) when one of ``names`` under the resolved ``folder`` leads out of it (a link to
    elsewhere) or is not a regular file or folder: what an output writes stays in the folder the user chose."""
    root = os.path.realpath(folder)
    for name in names:
        path = os.path.join(root, name)
        if not os.path.lexists(path):
            continue
        real = os.path.realpath(path)
        if os.path.commonpath([root, real]) != root:
            raise _fail("error.write.leaves_folder", path, target=real, folder=root)


# -- JSON ---------------------------------------------------------------------------------------------------


class _TooManyDigits(ValueError):
    pass


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _TooManyDigits(len(text.lstrip("-")))
    return int(text)


def _json_depth(text: str) -> int:
    """The deepest bracket nesting of JSON text, strings left out (a linear scan, no recursion)."""
    import itertools
    import re

    brackets = re.sub(r'"[^"\\]*(?:\\.[^"\\]*)*"|[^\[\]{}"]+', "", text)
    steps = map({"[": 1, "{": 1, "]": -1, "}": -1, '"': 0}.__getitem__, brackets)
    return max(itertools.accumulate(steps, initial=0))


def parse_json(text: str, path: str | os.PathLike[str]) -> Any:
    """JSON text as Python values: nesting at most ``MAX_DEPTH``, integers at most ``MAX_INT_DIGITS`` digits.

    A syntax error is re-raised as ``json.JSONDecodeError`` (callers word it for their kind of file).
    """
    name = os.fspath(path)
    depth = _json_depth(text)
    if depth > MAX_DEPTH:
        raise _fail("error.read.too_deep", name, depth=depth, limit=MAX_DEPTH)
    try:
        return json.loads(text, parse_int=_parse_int)
    except _TooManyDigits as exc:
        raise _fail("error.read.long_integer", name, digits=exc.args[0], limit=MAX_INT_DIGITS) from None
    except RecursionError:  # the scan above should make this unreachable; keep the clear line if not
        raise _fail("error.read.too_deep", name, depth=depth, limit=MAX_DEPTH) from None


def load_json(path: str | os.PathLike[str], kind: FileKind, *, missing: Msg | None = None) -> Any:
    """``parse_json(read_text(path, kind))``."""
    return parse_json(read_text(path, kind, missing=missing), path)


# -- YAML ---------------------------------------------------------------------------------------------------


@functools.cache
def _bounded_loader() -> type:
    """A safe YAML loader that counts while it composes: libyaml's parser (when built) under PyYAML's composer.

    Each composed node adds one to the document's total and each alias adds the size of what it stands for,
    so a "billion laughs" file stops at ``MAX_YAML_NODES`` after a few lines, before any value is built.
    """
    import yaml

    # libyaml's parser when PyYAML was built with it (several times faster), else the pure-Python one
    parser: type[Any] = yaml.parser.Parser
    try:
        import yaml.cyaml

        parser = yaml.cyaml.CParser  # type: ignore[attr-defined]  # not in the module's typed exports
    except ImportError:
        pass
    scanner = () if parser is not yaml.parser.Parser else (yaml.reader.Reader, yaml.scanner.Scanner)

    # Composer first: its get_single_node (which calls compose_node below), not CParser's own in C.
    # The bases are chosen at run time, which a type checker cannot follow.
    class BoundedLoader(yaml.composer.Composer, *scanner, parser,  # type: ignore[misc]
                        yaml.constructor.SafeConstructor, yaml.resolver.Resolver):
        def __init__(self, stream: str, name: str):
            if scanner:
                yaml.reader.Reader.__init__(self, stream)
                yaml.scanner.Scanner.__init__(self)
                parser.__init__(self)
            else:
                parser.__init__(self, stream)
            yaml.composer.Composer.__init__(self)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)
            self._name, self._total, self._depth, self._aliases = name, 0, 0, 0
            self._sizes: dict[int, int] = {}

        def _count(self, n: int) -> None:
            self._total += n
            if self._total > MAX_YAML_NODES:
                raise _fail("error.read.yaml_expansion", self._name, limit=MAX_YAML_NODES)

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.events.AliasEvent):
                event = self.peek_event()
                assert isinstance(event, yaml.events.AliasEvent)
                target = self.anchors.get(event.anchor)
                if target is not None:
                    if id(target) not in self._sizes:  # its own value is still being composed
                        raise _fail("error.read.yaml_recursive", self._name)
                    self._aliases += 1
                    if self._aliases > MAX_YAML_ALIASES:
                        raise _fail("error.read.yaml_aliases", self._name, limit=MAX_YAML_ALIASES)
                    self._count(self._sizes[id(target)])
                return super().compose_node(parent, index)
            self._depth += 1
            if self._depth > MAX_DEPTH:
                raise _fail("error.read.too_deep", self._name, depth=self._depth, limit=MAX_DEPTH)
            start = self._total
            node = super().compose_node(parent, index)
            self._depth -= 1
            if isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:int":
                digits = sum(c.isdigit() for c in node.value)
                if digits > MAX_INT_DIGITS:
                    raise _fail("error.read.long_integer", self._name, digits=digits, limit=MAX_INT_DIGITS)
            self._count(1)
            self._sizes[id(node)] = self._total - start
            return node

    return BoundedLoader


def parse_yaml(text: str, path: str | os.PathLike[str]) -> Any:
    """YAML text as Python values (safe types only) within the bounds above.

    PyYAML's own errors (syntax) pass through as ``yaml.YAMLError`` for callers to word.
    """
    name = os.fspath(path)
    loader = _bounded_loader()(text, name)
    try:
        node = loader.get_single_node()
        return None if node is None else loader.construct_document(node)
    finally:
        loader.dispose()


def load_yaml(path: str | os.PathLike[str], kind: FileKind, *, missing: Msg | None = None) -> Any:
    """``parse_yaml(read_text(path, kind))``."""
    return parse_yaml(read_text(path, kind, missing=missing), path)


__all__ = ["CONFIG", "MAX_DEPTH", "MAX_DOCUMENT_BYTES", "MAX_INT_DIGITS", "MAX_YAML_NODES", "MODEL_CONFIG", "PLAN",
           "RECORD", "SMALL_JSON", "TABLE", "TEXT_DATA", "TOKENIZER", "UNSAFE_IN_FIELD", "UNSAFE_IN_TEXT", "FileKind", "ReadError", "escape_chars", "inside_folder",
           "link_target", "load_json", "load_yaml", "output_file", "output_folder", "parse_json", "parse_yaml", "read_bytes",
           "read_text"]
