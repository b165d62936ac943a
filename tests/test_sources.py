"""Every citation resolves inside the repository: facts cite docs/sources.md by anchor, file paths name files
that exist, and nothing cites a document a reader cannot open (a file outside the repository)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "docs" / "sources.md"
SCANNED = ("gpuwork", "docs", "tests", "scripts", "benchmarks", "notebooks")
TOP_FILES = ("README.md", "pyproject.toml", "Makefile", "environment.yml")
SUFFIXES = {".py", ".md", ".csv", ".json", ".ipynb", ".toml", ".txt", ".yml", ".yaml", ""}

# Documents outside the repository that once were cited; the character classes keep this file from matching itself.
OUTSIDE = re.compile(r"(?<![\w])(gpu[_]facts|memory[_]formulas|stack[_]facts)(?![\w])"
                     r"|\.\.[/]shared|shared[/]reference|/work[/]|(?<![\w/])(DESIGN|STYLE)[.]md")
ANCHOR_CITE = re.compile(r"docs/sources\.md#([A-Za-z0-9_-]+)")
# A page of this repository's docs, or a file of the package, named as a path from the repository root.
REPO_PATH = re.compile(r"(?<![\w./@:-])(docs/[\w-]+\.md|gpuwork/[\w/.-]*\w\.(?:py|md|csv|json))")
# On a line that also names another repository or a URL, a path may be one of that repository's files.
OTHER_REPO = re.compile(r"`(?!(?:docs|gpuwork|tests|scripts|benchmarks|notebooks)/)[\w.-]+/[\w.-]+`|github|https?:"
                        r"|\b(?!(?:docs|gpuwork|tests|scripts|benchmarks|notebooks)/)[A-Za-z][\w.-]*/[A-Za-z][\w.-]+ ")
# Pages whose subject is other repositories' files (published cases): their paths are those repositories'.
OTHER_REPOS_PAGES = re.compile(r"docs/(time_(cases|heldout)|memory_heldout)_sources.*\.md"
                               r"|gpuwork/facts/data/time_heldout\.json"
                               r"|gpuwork/measure/time_cases\.py")
# a file path written out in a page that climbs folders (not a bare `../x` shown as an example of a form)
UPWARD = re.compile(r"`((?:\.\./)+[\w-]+(?:/[^`\s]+|\.\w+))`")
MD_LINK = re.compile(r"\]\(([^)\s]+)\)")
ANCHOR_DEF = re.compile(r'<a id="([^"]+)"></a>')
REF_ID = re.compile(r"\b([SPT]\d+b?)\b")


def _texts() -> list[tuple[Path, str]]:
    paths = [ROOT / f for f in TOP_FILES if (ROOT / f).exists()]
    for top in SCANNED:
        paths += [p for p in (ROOT / top).rglob("*") if p.is_file() and p.suffix in SUFFIXES
                  and "__pycache__" not in p.parts and not p.name.startswith(".")]
    out = []
    for p in sorted(paths):
        try:
            out.append((p, p.read_text(encoding="utf-8")))
        except UnicodeDecodeError:
            continue
    return out


def _anchors() -> set[str]:
    return set(ANCHOR_DEF.findall(SOURCES.read_text(encoding="utf-8")))


def _hits(pattern: re.Pattern[str]) -> list[tuple[str, int, str]]:
    return [(str(p.relative_to(ROOT)), n, m.group(0))
            for p, text in _texts() for n, line in enumerate(text.splitlines(), 1) for m in pattern.finditer(line)]


def test_nothing_cites_a_document_outside_the_repository() -> None:
    assert _hits(OUTSIDE) == []


def test_the_outside_pattern_catches_each_old_citation() -> None:
    # built from parts so that this file does not cite them itself
    olds = (("gpu", "_facts §1a"), ("(memory", "_formulas §3.5)"), ("stack", "_facts.md"), ("..", "/shared/x"),
            ("shared", "/reference/a.md"), ("see DESIGN", ".md"), ("STYLE", ".md"), ("/work", "/main/x"))
    for old in ("".join(parts) for parts in olds):
        assert OUTSIDE.search(old), old
    for fine in ("test_without_stack_facts_the_estimate", "docs/sources.md#s-pcie", "docs/architecture.md"):
        assert not OUTSIDE.search(fine), fine


def test_every_sources_anchor_cited_exists() -> None:
    anchors = _anchors()
    missing = [(f, n, a) for f, n, a in _hits(ANCHOR_CITE) if ANCHOR_CITE.match(a).group(1) not in anchors]
    assert missing == []


def test_anchors_are_unique_and_the_page_links_only_to_its_own_anchors_and_existing_files() -> None:
    text = SOURCES.read_text(encoding="utf-8")
    ids = ANCHOR_DEF.findall(text)
    assert len(ids) == len(set(ids)) and len(ids) > 50
    anchors = set(ids)
    for target in MD_LINK.findall(text):
        if target.startswith("#"):
            assert target[1:] in anchors, target
        elif not target.startswith("http"):
            assert (SOURCES.parent / target.split("#")[0]).exists(), target


def test_every_repository_path_cited_exists() -> None:
    missing = []
    for p, text in _texts():
        if OTHER_REPOS_PAGES.fullmatch(str(p.relative_to(ROOT))):
            continue
        lines = text.splitlines()
        for n, line in enumerate(lines, 1):
            for m in REPO_PATH.finditer(line):
                before = (lines[n - 2] if n > 1 else "") + " " + line[: m.start()]
                # an output path the user chooses, a file a test creates, or another repository's own docs/
                if "--out" in before or "repo /" in before or '("' in before or OTHER_REPO.search(before):
                    continue
                if not (ROOT / m.group(1)).exists():
                    missing.append((str(p.relative_to(ROOT)), n, m.group(1)))
    assert missing == []


def test_every_relative_markdown_link_resolves_inside_the_repository() -> None:
    bad = []
    for p, text in _texts():
        if p.suffix != ".md":
            continue
        # a row quoted from a source keeps its own escaped pipes and that repository's relative links
        quoted = {m for line in text.splitlines() if "\\|" in line for m in MD_LINK.findall(line)}
        upward = [m.group(1) for m in UPWARD.finditer(text)]
        for target in MD_LINK.findall(text) + upward:
            if re.match(r"[a-z]+:", target) or target.startswith("#") or target in quoted:
                continue
            dest = (p.parent / target.split("#")[0]).resolve()
            if ROOT not in dest.parents or not dest.exists():
                bad.append((str(p.relative_to(ROOT)), target))
    assert bad == []


def test_gpu_source_ids_and_offer_note_ids_resolve_in_sources() -> None:
    anchors = _anchors()
    data = ROOT / "gpuwork" / "facts" / "data"
    with open(data / "gpus.csv", newline="", encoding="utf-8") as fh:
        gpus = list(csv.DictReader(fh))
    for row in gpus:
        ids = row["source"].split(";")
        assert ids and all(f"s-ref-{i.lower()}" in anchors for i in ids), (row["gpu_id"], ids)
        assert f"s-gpu-{row['gpu_id'].replace('_', '-')}" in anchors, row["gpu_id"]
    with open(data / "catalog.csv", newline="", encoding="utf-8") as fh:
        offers = list(csv.DictReader(fh))
    for row in offers:
        note = row["note"]
        assert ANCHOR_CITE.search(note), row["offer_id"]
        for i in REF_ID.findall(note):
            assert f"s-ref-{i.lower()}" in anchors, (row["offer_id"], i)
