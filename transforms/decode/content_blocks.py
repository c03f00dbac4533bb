"""A trace's tool result written as content blocks, read as the text the model read (docs/traces.md).

Pattern: one pure function over one recorded value.
Role:    `otlp_json` asks it of every result a trace records (a tool span's, a chat message's).
         Strands records a tool's return as blocks (`[{"text": "[]"}]`) and an MCP server answers
         `{"content": [{"type": "text", "text": …}], "isError": …}`: the model reads the text inside,
         so the readers read that text. Google ADK records a Gemini `FunctionResponse`
         (`{"id", "name", "response": {…}}`): the model reads its `response`. Recordings never pass
         here: their values stay upstream's.
Never:   unwraps a value holding anything but text blocks (an image block, a key of its own, an
         empty list: a tool's own `[]`); such a value is read as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from footprint_audit.readers import JSONError, parse_json

__all__ = ["Unwrapped", "text_blocks", "unwrapped"]

#: The keys of an MCP `CallToolResult`.
_MCP_KEYS = frozenset({"content", "isError", "structuredContent", "_meta"})
_BLOCK_KEYS = frozenset({"type", "text"})
#: The keys of a Gemini `FunctionResponse` as Google ADK records it (`response` is what the model reads).
_FUNCTION_RESPONSE_KEYS = frozenset({"id", "name", "response", "will_continue", "scheduling"})


@dataclass(frozen=True, slots=True)
class Unwrapped:
    """What the model read of a wrapped value: the text of text blocks (several joined by a newline)
    or a `FunctionResponse`'s `response`; and whether an MCP result says the tool failed (`isError: true`)."""

    value: Any
    is_error: bool = False


def unwrapped(value: Any) -> Unwrapped | None:
    """`value` (structured, or the JSON text of it) → what the model read inside it; None: not wrapped."""
    data = value
    if type(value) is str:
        if value[:1] not in ("[", "{"):
            return None
        try:
            data = parse_json(value.encode("utf-8", "surrogatepass"))
        except JSONError:
            return None
    if type(data) is dict and type(data.get("response")) is dict and type(data.get("name")) is str \
            and data.keys() <= _FUNCTION_RESPONSE_KEYS:
        return Unwrapped(data["response"])
    return text_blocks(data)


def text_blocks(data: Any) -> Unwrapped | None:
    """A parsed value as text blocks → its text; None: not only text blocks.

    A non-empty list of `{"text"}` / `{"type": "text", "text"}` blocks, or an MCP result whose `content`
    is such a list (an empty `content`: the empty text).
    """
    if type(data) is dict:
        blocks = data.get("content")
        if type(blocks) is not list or not data.keys() <= _MCP_KEYS:
            return None
        is_error = data.get("isError") is True
    elif type(data) is list and data:
        blocks, is_error = data, False
    else:
        return None
    texts = []
    for block in blocks:
        if type(block) is not dict or type(block.get("text")) is not str or not block.keys() <= _BLOCK_KEYS \
                or block.get("type", "text") != "text":
            return None
        texts.append(block["text"])
    return Unwrapped("\n".join(texts), is_error)
