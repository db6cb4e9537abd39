"""Every relative link in README.md and docs/*.md points at a file that exists, and every
`#anchor` into a Markdown file names one of its headings (GitHub's slugs). No server needed:
python -m pytest -q tests/docs/test_links.py"""
import re
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# [text](target) and ![alt](target), the target optionally in <...>, an optional "title" after it.
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>\n]*>|[^)\s]+)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
# [label]: target (reference definitions)
REFDEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>\n]*>|\S+)", re.M)
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")


def documents():
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def prose_lines(text):
    """The lines outside fenced code blocks, with their numbers."""
    fence = None
    for number, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if fence is None:
            if m:
                fence = m.group(1)
                continue
            yield number, line
        elif m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):].strip():
            fence = None


def slug(heading):
    """GitHub's anchor for a heading: links and inline code reduced to their text, lower case,
    punctuation dropped except hyphens and spaces, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = INLINE_CODE.sub(lambda m: m.group(2), text)
    text = re.sub(r"<[^>]+>", "", text)
    text = text.strip().lower()
    kept = []
    for ch in text:
        if ch in "-_ " or ch.isalnum():
            kept.append(ch)
        elif unicodedata.category(ch).startswith(("L", "N", "M")):
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen = {}
        found = set()
        for _, line in prose_lines(path.read_text(encoding="utf-8")):
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        cache[path] = found
    return cache[path]


def links(path):
    """(line number, target) of every link in the file's prose (inline code excluded)."""
    for number, line in prose_lines(path.read_text(encoding="utf-8")):
        line = INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)
        for m in INLINE.finditer(line):
            yield number, m.group(1)
        for m in REFDEF.finditer(line):
            yield number, m.group(1)


def is_external(target):
    return re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) is not None  # http:, https:, mailto:, …


def broken_links():
    problems = []
    for doc in documents():
        for number, raw in links(doc):
            target = raw[1:-1] if raw.startswith("<") and raw.endswith(">") else raw
            if not target or target.startswith("#") or is_external(target):
                continue
            where = f"{doc.relative_to(ROOT)}:{number}: {raw}"
            file_part, _, fragment = target.partition("#")
            resolved = (doc.parent / file_part.split("?")[0]).resolve()
            if not resolved.exists():
                problems.append(f"{where} (no such file: {resolved.relative_to(ROOT) if resolved.is_relative_to(ROOT) else resolved})")
                continue
            if fragment and resolved.is_file() and resolved.suffix.lower() == ".md":
                if fragment.lower() not in anchors(resolved):
                    problems.append(f"{where} (no heading with the anchor #{fragment} in {resolved.relative_to(ROOT)})")
    return problems


def test_the_documents_exist():
    assert (ROOT / "README.md").is_file()
    assert list((ROOT / "docs").glob("*.md")), "docs/ holds the chapters"


def test_every_relative_link_resolves():
    problems = broken_links()
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_the_slugs_are_githubs():
    assert slug("Payments (x402 v2)") == "payments-x402-v2"
    assert slug("On Lambda: what a serverless user pays") == "on-lambda-what-a-serverless-user-pays"
    assert slug("The local server (`verifier serve`)") == "the-local-server-verifier-serve"
    assert slug("8. Permissions") == "8-permissions"
    assert slug("Nobody waits behind someone else's request") == "nobody-waits-behind-someone-elses-request"
