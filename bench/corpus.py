"""A seeded generator of realistic tool results, as the readers meet them.

Role: the input of `bench/bench_readers.py`. Each `Record` is one finished tool
call: `text`, what the model read (the served text: JSON, JSON with the
framework's notes after it, JSON cut short by a cap, or plain text); `value`,
what `read_emptiness` is handed (the text, or the structured value when the
recording keeps one); `rows_at`, the app's declared rows key (or None); and
`door`, what the record says the call returned (or None: read off the value).

The mix (weights in `KINDS`) covers every route of docs/readers.md §5 and the
served-JSON shapes of §6–§8: bare arrays of rows, `{rows: [...]}` objects,
absence and coverage envelopes (incl. `coverage(absent())`), described results
with a door, dataset and placement tickets, trailing notes
(`[identical call: ...]`), several blocks, capped heads, plain text. Sizes run
from tens of bytes to a few KB. Same seed, same corpus.

    python -m bench.corpus --n 5 --seed 7     # print a few records
"""

from __future__ import annotations

import argparse
import random
import string
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

import orjson

__all__ = ["Record", "KINDS", "make_corpus", "describe"]


@dataclass(frozen=True, slots=True)
class Record:
    """One finished tool call as the readers see it."""

    kind: str
    text: str
    value: Any
    rows_at: str | None = None
    door: dict | None = None


_WORDS = (
    "host disk full queue worker region eu-west-1 us-east-2 postgres replica lag backup "
    "invoice order customer acme globex initech pending shipped failed retry timeout "
    "cpu memory p99 latency error warning ok degraded node pod deployment service"
).split()
_ALNUM = string.ascii_letters + string.digits


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode("utf-8")


def _pretty(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode("utf-8")


class _Gen:
    """All draws from one `random.Random`, so the corpus is reproducible."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    # -- small pieces ------------------------------------------------------
    def words(self, lo: int = 1, hi: int = 6) -> str:
        return " ".join(self.r.choice(_WORDS) for _ in range(self.r.randint(lo, hi)))

    def ref(self) -> str:
        return "art_" + "".join(self.r.choice(_ALNUM) for _ in range(22))

    def row(self) -> dict:
        r = self.r
        row: dict = {"id": r.randint(1, 99_999), "name": f"{r.choice(_WORDS)}-{r.randint(1, 99)}"}
        for _ in range(r.randint(0, 5)):
            pick = r.random()
            key = r.choice(_WORDS)
            if pick < 0.3:
                row[key] = round(r.uniform(-1e4, 1e4), r.randint(0, 4))
            elif pick < 0.5:
                row[key] = r.random() < 0.5
            elif pick < 0.6:
                row[key] = None
            elif pick < 0.9:
                row[key] = self.words(1, 8)
            else:
                row[key] = [r.randint(0, 100) for _ in range(r.randint(0, 4))]
        if r.random() < 0.05:
            row["note"] = 'quoted "text" with \\ backslash, tab\t and é ✓'
        return row

    def rows(self, hi: int = 30) -> list:
        r = self.r
        n = 0 if r.random() < 0.2 else r.randint(1, hi)
        return [self.row() for _ in range(n)]

    def item(self) -> dict:
        item = {"what": self.words(1, 3), "short": self.r.choice(_WORDS)}
        if self.r.random() < 0.3:
            item["kind"] = "index"
        return item

    def absent(self) -> dict:
        r = self.r
        out: dict = {
            "af_absent": True,
            "outcome": r.choice(["nothing_found", "not_applicable"]),
            "looked_for": self.words(1, 4),
            "checked": [self.item() for _ in range(r.randint(1, 3))],
        }
        if r.random() < 0.3:
            out["not_checked"] = [self.item() for _ in range(r.randint(1, 2))]
        if r.random() < 0.2:
            out["note"] = self.words(3, 12)
        return out

    def marker(self) -> dict:
        r = self.r
        m: dict = {"checked": [self.item() for _ in range(r.randint(1, 3))]}
        if r.random() < 0.3:
            m["cannot_cover"] = [self.item()]
        return m

    def note(self) -> str:
        r = self.r
        return r.choice(
            [
                f"[identical call: {r.choice(_WORDS)}_search({{\"q\":\"{self.words(1, 2)}\"}}) returned this already]",
                f"[step {r.randint(1, 4)} of {r.randint(4, 6)}: {self.words(1, 3)}]",
                f"[effect: {self.words(2, 5)}]",
                "(cached result)",
            ]
        )

    def serve(self, value: Any) -> str:
        return _pretty(value) if self.r.random() < 0.15 else _dumps(value)

    # -- the kinds -----------------------------------------------------------
    def bare_array(self) -> Record:
        text = self.serve(self.rows())
        return Record("bare-array", text, text)

    def rows_object(self) -> Record:
        key = self.r.choice(["rows", "items", "hosts", "results"])
        rows = self.rows()
        value = {key: rows, "total": len(rows), "query": self.words(1, 3)}
        text = self.serve(value)
        rows_at = key if self.r.random() < 0.8 else None
        return Record("rows-object", text, text, rows_at)

    def absence(self) -> Record:
        text = self.serve(self.absent())
        door = {"absent": True, "bounded": False} if self.r.random() < 0.5 else None
        return Record("absence", text, text, "rows", door)

    def coverage(self) -> Record:
        r = self.r
        inner: Any = self.rows() if r.random() < 0.5 else {"rows": self.rows()}
        value = {"af_coverage": self.marker(), "result": inner}
        text = self.serve(value)
        door = {"absent": False, "bounded": True} if r.random() < 0.5 else None
        return Record("coverage", text, text, "rows", door)

    def coverage_absent(self) -> Record:
        value = {"af_coverage": self.marker(), "result": self.absent()}
        text = self.serve(value)
        door = {"absent": True, "bounded": True} if self.r.random() < 0.5 else None
        return Record("coverage-absent", text, text, None, door)

    def described(self) -> Record:
        r = self.r
        facts = [{"subject": self.words(1, 2), "value": r.randint(0, 1000)} for _ in range(r.randint(0, 8))]
        series = [[r.randint(0, 100) for _ in range(r.randint(1, 12))] for _ in range(r.randint(0, 2))]
        envelope: dict = {"af_semantics": True, "facts": facts, "series": series}
        if not facts and not series:
            envelope["clarify"] = {"question": self.words(4, 8) + "?"}
        projection = {k: v for k, v in envelope.items() if k != "af_semantics"}
        text = self.serve(projection)
        door = {"absent": False, "bounded": False, "described": envelope}
        return Record("described", text, text, None, door)

    def dataset_ticket(self) -> Record:
        r = self.r
        n = r.choice([0, r.randint(1, 5000)])
        ticket: dict = {"ref": self.ref(), "kind": "dataset/rows", "rows": n, "sourceField": "rows"}
        if r.random() < 0.1:
            del ticket["rows"]
        value = {"datasets": {"rows": ticket}, "dataset": ticket, "total": n, "sample": self.rows(3)}
        text = self.serve(value)
        return Record("dataset-ticket", text, text, "rows")

    def placement_ticket(self) -> Record:
        r = self.r
        value = {
            "placed": True,
            "ref": self.ref(),
            "kind": "tool-result",
            "mediaType": "application/json",
            "bytes": r.randint(20_000, 2_000_000),
            "reason": "result larger than the inline cap",
        }
        text = self.serve(value)
        return Record("placement-ticket", text, text, "rows")

    def noted(self) -> Record:
        r = self.r
        value: Any = self.rows() if r.random() < 0.5 else {"rows": self.rows(), "total": r.randint(0, 99)}
        text = _dumps(value) + "\n\n" + self.note()
        return Record("json+note", text, text, "rows")

    def blocks(self) -> Record:
        r = self.r
        parts = [_dumps({"rows": self.rows(8)}) for _ in range(r.randint(2, 3))]
        text = "\n".join(parts) + ("\n\n" + self.note() if r.random() < 0.5 else "")
        return Record("mcp-blocks", text, text, "rows")

    def capped(self) -> Record:
        r = self.r
        full = _dumps({"rows": self.rows(40), "total": r.randint(0, 999)})
        cap = r.randint(max(2, len(full) // 4), max(3, len(full) - 1))
        head = full[:cap]
        if r.random() < 0.5:
            return Record("capped-head", head, head, "rows")
        value = {"truncated": True, "reason": "cap", "bytes": len(full), "head": head}
        text = _dumps(value)
        return Record("capped-marker", text, text, "rows")

    def plain(self) -> Record:
        r = self.r
        text = r.choice(
            [
                f"Error: connection refused ({self.words(1, 3)}) after {r.randint(1, 30)}s",
                f"[INFO] {self.words(3, 10)}\n[WARN] {self.words(3, 10)}",
                f"  port {r.randint(1, 65535)} open  ",
                "\n".join(f"{r.choice(_WORDS)}: {self.words(2, 9)}" for _ in range(r.randint(1, 40))),
                "No results.",
            ]
        )
        return Record("plain-text", text, text, "rows" if r.random() < 0.5 else None)

    def structured(self) -> Record:
        """A recording that keeps the structured value (no text parse in read_emptiness)."""
        value = {"rows": self.rows(), "total": self.r.randint(0, 99)}
        return Record("structured", _dumps(value), value, "rows", {"absent": False, "bounded": False})


#: kind → (weight, the generator method that draws one record of that kind)
KINDS: dict[str, tuple[int, Callable[[_Gen], Record]]] = {
    "bare-array": (12, _Gen.bare_array),
    "rows-object": (16, _Gen.rows_object),
    "absence": (7, _Gen.absence),
    "coverage": (7, _Gen.coverage),
    "coverage-absent": (4, _Gen.coverage_absent),
    "described": (6, _Gen.described),
    "dataset-ticket": (5, _Gen.dataset_ticket),
    "placement-ticket": (3, _Gen.placement_ticket),
    "json+note": (10, _Gen.noted),
    "mcp-blocks": (4, _Gen.blocks),
    "capped": (8, _Gen.capped),
    "plain-text": (10, _Gen.plain),
    "structured": (8, _Gen.structured),
}


def make_corpus(n: int = 50_000, seed: int = 20240611) -> list[Record]:
    """`n` records, the same for the same seed."""
    gen = _Gen(seed)
    names = list(KINDS)
    weights = [KINDS[k][0] for k in names]
    picks = gen.r.choices(names, weights=weights, k=n)
    return [KINDS[k][1](gen) for k in picks]


def describe(corpus: list[Record]) -> str:
    """A short summary: kinds, text sizes."""
    sizes = sorted(len(rec.text.encode("utf-8")) for rec in corpus)
    kinds = Counter(rec.kind for rec in corpus)
    n = len(sizes)
    lines = [
        f"{n} records; text bytes min {sizes[0]}, median {sizes[n // 2]}, "
        f"p90 {sizes[int(n * 0.9)]}, max {sizes[-1]}, mean {sum(sizes) / n:.0f}",
        "kinds: " + ", ".join(f"{k} {v}" for k, v in kinds.most_common()),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """CLI: print a few records and the corpus summary."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--seed", type=int, default=20240611)
    args = ap.parse_args(argv)
    corpus = make_corpus(args.n, args.seed)
    for rec in corpus[:10]:
        print(f"{rec.kind:17} rows_at={rec.rows_at!r:10} door={'yes' if rec.door else 'no ':3} {rec.text[:100]!r}")
    print(describe(corpus))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
