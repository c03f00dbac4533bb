"""A scripted fake of the OpenAI chat-completions endpoint, for recording traces offline.

Standard library only (``http.server`` + ``threading``). It listens on 127.0.0.1 on a port the
OS picks and answers ``POST /v1/chat/completions`` from a fixed *script* of model turns, so that
an OpenAI client (and any instrumentation wrapped around it) sees a plausible tool-calling model.

Use from Python::

    from fake_openai import FakeOpenAI
    script = [
        [("search_docs", {"query": "zebra"})],            # turn 1: one tool call
        [("list_hosts", {"zone": "eu"}), ("list_hosts", {"zone": "us"})],  # turn 2: parallel calls
        "All done.",                                        # turn 3: final text
    ]
    with FakeOpenAI(script) as fake:
        client = openai.OpenAI(base_url=fake.base_url, api_key="sk-fake")
        ...
        fake.requests          # every JSON body received, in order
        fake.tool_messages()   # {tool_call_id: content} of the role "tool" messages it was sent

Run alone (serves until Ctrl-C; prints the base URL)::

    python3 tools/traces/fake_openai.py [--port 0] [--script script.json]

where ``script.json`` is a JSON list whose items are either a string (final text) or a list of
``[name, arguments_object]`` pairs.

What it fakes
-------------
* ``POST /v1/chat/completions`` (also ``/chat/completions``). The request's ``messages`` tell
  which turn to answer: k = the number of ``role: "assistant"`` messages already present, and the
  answer is ``script[k]`` (turn number k+1). A client that re-sends its history therefore gets the
  next turn; retries of the same request get the same turn. With ``turn_by="request"`` (opt-in, for a
  framework that leaves a turn out of the history it re-sends, as smolagents does a step whose tool
  raised) k is instead the number of chat-completions requests received before this one.
* A tool-call turn answers ``finish_reason: "tool_calls"``, ``message.content: null`` and
  ``message.tool_calls`` with ids ``call_<turn><letter>`` (``call_1a``; ``call_8a``, ``call_8b``
  for two calls in turn 8), ``type: "function"`` and ``function.arguments`` a JSON string.
  A text turn answers ``finish_reason: "stop"`` with ``message.content`` the text.
* ``stream: true``: Server-Sent Events, ``data: {chunk}`` lines of ``object:
  "chat.completion.chunk"``: first a delta with ``role: "assistant"``; then per tool call one
  delta with ``index``, ``id``, ``type`` and ``function.name`` (``arguments: ""``) followed by the
  arguments in pieces (``index`` + ``function.arguments`` only), or the text in pieces as
  ``content`` deltas; then a chunk with an empty delta and the ``finish_reason``; then (as OpenAI
  does) only if ``stream_options.include_usage`` is true, a chunk with ``choices: []`` and
  ``usage`` (the others carry ``usage: null``); then ``data: [DONE]``. Sent with
  ``Transfer-Encoding: chunked``.
* ``usage`` (``prompt_tokens``, ``completion_tokens``, ``total_tokens``) on every non-streaming
  answer: deterministic rough counts (characters / 4), not a real tokenizer.
* ``id`` ``chatcmpl-fake-<turn>``, ``model`` echoed from the request, ``created`` a fixed time,
  ``system_fingerprint`` ``fp_fake``, ``service_tier`` ``default``.
* Every request body is kept (``.requests``, parsed JSON, in arrival order; ``.paths`` the paths).

What it does not fake
---------------------
No authentication (any API key works), no validation of the request beyond JSON parsing, no
``n > 1``, no logprobs, no JSON mode / structured outputs, no refusals, no rate limits or
error injection, no legacy ``functions``/``function_call``, no ``GET /v1/models``, no Responses
API (``POST /v1/responses`` and every other path answer 404 with an OpenAI-shaped error body),
no embeddings. A request past the end of the script answers HTTP 400 with an error body.
"""

from __future__ import annotations

import argparse
import json
import signal
import string
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CREATED = 1767225600  # 2026-01-01T00:00:00Z, fixed so answers are reproducible


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


class FakeOpenAI:
    """The fake server. ``FakeOpenAI(script, host="127.0.0.1", port=0, turn_by="assistant")``
    (``turn_by="request"``: answer the k-th request with ``script[k]``, see the module docstring).

    Attributes: ``base_url`` (``http://127.0.0.1:PORT/v1``), ``port``, ``script``,
    ``requests`` (list of JSON bodies received on the chat-completions path),
    ``paths`` (list of every request path, in order), ``issued`` (list of
    ``{"turn", "id", "name", "arguments"}`` for every tool call it answered with).
    Start/stop with ``start()``/``stop()`` or use it as a context manager.
    """

    def __init__(self, script, host: str = "127.0.0.1", port: int = 0, turn_by: str = "assistant"):
        if turn_by not in ("assistant", "request"):
            raise ValueError(f"turn_by must be 'assistant' or 'request', not {turn_by!r}")
        self.script = [self._normalize_turn(t) for t in script]
        self.turn_by = turn_by
        self.requests: list[dict] = []
        self.paths: list[str] = []
        self.issued: list[dict] = []
        self._lock = threading.Lock()
        self._host = host
        self._port = port
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- script -----------------------------------------------------------------------
    @staticmethod
    def _normalize_turn(turn):
        if isinstance(turn, str):
            return turn
        calls = []
        for call in turn:
            name, args = call
            calls.append((str(name), dict(args)))
        if not calls:
            raise ValueError("a tool-call turn needs at least one call")
        return calls

    @staticmethod
    def call_id(turn_number: int, index: int) -> str:
        """The id given to the index-th call (0-based) of turn ``turn_number`` (1-based)."""
        letters = string.ascii_lowercase
        suffix = letters[index] if index < 26 else letters[index // 26 - 1] + letters[index % 26]
        return f"call_{turn_number}{suffix}"

    # ---- lifecycle --------------------------------------------------------------------
    def start(self) -> "FakeOpenAI":
        fake = self

        class Handler(_Handler):
            owner = fake

        self._server = ThreadingHTTPServer((self._host, self._port), Handler)
        self._server.daemon_threads = True
        self._port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> "FakeOpenAI":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self._port}/v1"

    # ---- what was received ------------------------------------------------------------
    def tool_messages(self) -> dict[str, object]:
        """``{tool_call_id: content}`` of every ``role: "tool"`` message received (first seen wins;
        content exactly as sent: normally a string, possibly a list of parts)."""
        seen: dict[str, object] = {}
        with self._lock:
            bodies = list(self.requests)
        for body in bodies:
            for msg in body.get("messages") or []:
                if isinstance(msg, dict) and msg.get("role") == "tool":
                    seen.setdefault(msg.get("tool_call_id"), msg.get("content"))
        return seen

    # ---- answers ----------------------------------------------------------------------
    def _turn_index(self, body: dict) -> int:
        if self.turn_by == "request":  # this body's place among the requests received (it was appended)
            with self._lock:
                return next((i for i, b in enumerate(self.requests) if b is body), len(self.requests))
        return sum(1 for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "assistant")

    def _usage(self, body: dict, completion: str) -> dict:
        prompt = _tokens(json.dumps(body.get("messages") or [], sort_keys=True))
        comp = _tokens(completion)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": comp,
            "total_tokens": prompt + comp,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }

    def answer(self, body: dict):
        """(turn_number, tool_calls or None, text or None) for a request body; raises IndexError
        past the end of the script."""
        k = self._turn_index(body)
        if k >= len(self.script):
            raise IndexError(f"request {k + 1} is past the end of the script ({len(self.script)} turns)")
        turn = self.script[k]
        number = k + 1
        if isinstance(turn, str):
            return number, None, turn
        calls = []
        for i, (name, args) in enumerate(turn):
            calls.append(
                {
                    "id": self.call_id(number, i),
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
            )
        with self._lock:
            known = {c["id"] for c in self.issued}
            for c in calls:
                if c["id"] not in known:
                    self.issued.append(
                        {"turn": number, "id": c["id"], "name": c["function"]["name"],
                         "arguments": json.loads(c["function"]["arguments"])}
                    )
        return number, calls, None

    def completion(self, body: dict) -> dict:
        number, calls, text = self.answer(body)
        message = {"role": "assistant", "content": text, "refusal": None, "annotations": []}
        if calls:
            message["tool_calls"] = calls
        produced = text if text is not None else json.dumps(calls)
        return {
            "id": f"chatcmpl-fake-{number}",
            "object": "chat.completion",
            "created": CREATED,
            "model": body.get("model") or "gpt-fake",
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": "tool_calls" if calls else "stop"}
            ],
            "usage": self._usage(body, produced),
            "service_tier": "default",
            "system_fingerprint": "fp_fake",
        }

    def chunks(self, body: dict):
        """The chat.completion.chunk objects of a streaming answer (without ``[DONE]``)."""
        number, calls, text = self.answer(body)
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        base = {
            "id": f"chatcmpl-fake-{number}",
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": body.get("model") or "gpt-fake",
            "service_tier": "default",
            "system_fingerprint": "fp_fake",
        }
        if include_usage:
            base["usage"] = None

        def chunk(delta, finish=None):
            c = dict(base)
            c["choices"] = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
            return c

        yield chunk({"role": "assistant", "content": "" if text is not None else None, "refusal": None})
        if calls:
            for i, call in enumerate(calls):
                yield chunk(
                    {
                        "tool_calls": [
                            {
                                "index": i,
                                "id": call["id"],
                                "type": "function",
                                "function": {"name": call["function"]["name"], "arguments": ""},
                            }
                        ]
                    }
                )
                args = call["function"]["arguments"]
                for start in range(0, len(args), 8):
                    yield chunk({"tool_calls": [{"index": i, "function": {"arguments": args[start : start + 8]}}]})
        else:
            words = text.split(" ")
            for j, word in enumerate(words):
                yield chunk({"content": word if j == 0 else " " + word})
        yield chunk({}, "tool_calls" if calls else "stop")
        if include_usage:
            c = dict(base)
            c["choices"] = []
            c["usage"] = self._usage(body, text if text is not None else json.dumps(calls))
            yield c


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    owner: FakeOpenAI = None  # set by FakeOpenAI.start
    server_version = "fake-openai/1"

    def log_message(self, format, *args):  # keep the recorder's output clean
        pass

    def _send_json(self, status: int, obj: dict) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", f"req_fake_{len(self.owner.paths)}")
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, code: str) -> None:
        self._send_json(status, {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}})

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def do_GET(self):
        with self.owner._lock:
            self.owner.paths.append(self.path)
        self._error(404, f"Unknown request URL: GET {self.path}. (fake-openai only fakes chat completions)", "unknown_url")

    def do_POST(self):
        raw = self._read_body()
        path = self.path.split("?", 1)[0].rstrip("/")
        with self.owner._lock:
            self.owner.paths.append(self.path)
        if path not in ("/v1/chat/completions", "/chat/completions"):
            self._error(404, f"Unknown request URL: POST {self.path}. (fake-openai only fakes chat completions)", "unknown_url")
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._error(400, "We could not parse the JSON body of your request.", "invalid_json")
            return
        with self.owner._lock:
            self.owner.requests.append(body)
        try:
            if body.get("stream"):
                chunks = list(self.owner.chunks(body))
            else:
                answer = self.owner.completion(body)
        except IndexError as exc:
            self._error(400, str(exc), "script_exhausted")
            return
        if not body.get("stream"):
            self._send_json(200, answer)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("x-request-id", f"req_fake_{len(self.owner.paths)}")
        self.end_headers()
        for c in chunks:
            self._write_chunk(f"data: {json.dumps(c)}\n\n".encode())
        self._write_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


DEMO_SCRIPT = [
    [("get_weather", {"city": "Paris"})],
    [("list_hosts", {"zone": "eu"}), ("list_hosts", {"zone": "us"})],
    "Paris is sunny; web-1 is the only host.",
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Serve a scripted fake of POST /v1/chat/completions on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=0, help="port (0: the OS picks)")
    parser.add_argument("--script", help="JSON file: a list of turns, each a string or a list of [name, args] pairs")
    args = parser.parse_args(argv)
    script = DEMO_SCRIPT
    if args.script:
        with open(args.script, encoding="utf-8") as f:
            script = json.load(f)
    fake = FakeOpenAI(script, port=args.port).start()

    def _interrupt(*_):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _interrupt)
    print(fake.base_url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        fake.stop()
        print(json.dumps({"requests": len(fake.requests), "tool_messages": fake.tool_messages()}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
