"""A stand-in OpenAI-compatible chat-completions server on loopback: no model, scripted answers.

The tests play the ``llm`` agent against it, and ``python -m agents.external.llm_standin --rounds N`` measures
what the protocol costs in calls and prompt tokens without paying for a model (docs/llm.md).

The model name picks the script of every answer, so that a tournament in another process can be
pointed at one behaviour:

- ``legal``: the number of a legal move (read from the prompt's numbered list, picked by a hash of it);
- ``words``: the same move written out in words (a bare move);
- ``reason``: a paragraph of reasoning that names other numbers, then the final line ``Answer: N``;
- ``hidden``: ``Answer:`` and a legal move written out, worked out from the prompt's hand and table
  (for ``moves=hidden``, where no move is listed; the default rules);
- ``votes``: of the identical requests of one question, every third (the 2nd, 5th, ...) names another
  move than the others (votes that disagree; the majority is the ``legal`` move);
- ``garbage``: text that never names a move;
- ``prose``: babble with numbers in it ("You are the 2-player deck"), never a move;
- ``ramble``: move lists until ``max_tokens`` words (5,000 when the request sets none);
- ``fix-after-one``: garbage to a first question, a legal number once re-asked;
- ``e401``, ``e404``, ``e500``, ``e429``, any ``eNNN`` of 400 to 599: that HTTP status every time
  (answering ``no``; 429 with ``Retry-After: 0``); ``long400``: HTTP 400 with a 1,000-character message;
- ``flaky``: 429 with ``Retry-After: 0`` to every other request, a legal number otherwise;
- ``slow``: a legal number after ``slow_s`` seconds;
- ``drop``: the connection closed without an answer;
- ``endless``: a 200 answer whose body never ends (it stops at ``ENDLESS_BYTES`` or when the client
  hangs up; ``stream_sent`` counts what was written, ``stream_done`` says whether all of it was);
- ``drip``: a 200 answer that sends one byte every 50 ms (for at most ``DRIP_S`` seconds);
- ``echo400``: HTTP 400 with a page that echoes the request's headers, the key included;
- any other name (``legal``, ``M``): a legal number.

``fail_after = n`` makes every request from the n-th on answer HTTP 500 (an endpoint that goes down).

It counts requests, the most in flight at once, the headers and bodies it received, and answers
``usage`` with ``prompt_tokens`` = the prompt's characters // 4 and ``completion_tokens`` = 1 per
answer word. Bodies over 1 MiB are refused with 413 before they are read.
"""

from __future__ import annotations

import argparse
import json
import re
import ssl
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from escoba_env.faces.cli import add_rules_arguments, rules_from_args
from escoba_env.rulebook.capture import capture_options
from escoba_env.rulebook.cards import move_words, parse_card_words
from escoba_env.rulebook.rules import Rules

from ..tournament.report import llm_usage_fields
from ..tournament.runner import TournamentConfig, run_tournament

MAX_BODY = 1 << 20
ENDLESS_BYTES = 64 << 20
"""How much the ``endless`` script writes before it gives up (far more than any socket buffers)."""
DRIP_S = 8.0
"""How long the ``drip`` script drips before it hangs up."""


def _moves(text: str) -> list[str]:
    """Return the numbered moves listed in a prompt."""
    return re.findall(r"^\d+\. (.+)$", text.split("Your legal moves:")[-1], flags=re.M)


def _position_moves(text: str) -> list[str]:
    """Return every legal move of a prompt's hand and table, written out (the default rules)."""
    def cards(name: str) -> list[int]:
        m = re.search(rf"^{name}: (.+)\.$", text, flags=re.M)
        named = [] if m is None or m.group(1) == "nothing" else m.group(1).split(" + ")
        return [parse_card_words(c) for c in named]

    table = sum(1 << c for c in cards("Table"))
    return [move_words(c, o) for c in cards("Your hand") for o in (capture_options(c, table, Rules()) or [0])]


class _Server(ThreadingHTTPServer):
    request_queue_size = 256  # a burst of concurrent connections must not wait for SYN retries

    def handle_error(self, request, client_address) -> None:
        """Stay quiet about a TLS handshake the client broke off (one that does not trust us)."""
        if not isinstance(sys.exc_info()[1], (ssl.SSLError, ConnectionError)):
            super().handle_error(request, client_address)


class StandIn:
    """The server: ``url`` is its ``/v1`` base URL; ``close()`` stops it."""

    def __init__(self, slow_s: float = 2.0, tls: ssl.SSLContext | None = None):
        """``tls``: a server-side context to serve HTTPS with (``url`` then starts ``https://``)."""
        self.slow_s = slow_s
        self.fail_after: int | None = None
        """From this request number on, every answer is HTTP 500 (None: never)."""
        self.raw_answer: bytes | None = None
        """When set, every answer is HTTP 200 with this body as it is (a broken endpoint's words)."""
        self.lock = threading.Lock()
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.headers: list[dict[str, str]] = []
        self.bodies: list[dict] = []
        self.seen: dict[int, int] = {}
        """Requests seen per question (the hash of its first user message), for ``votes``."""
        self.stream_sent = 0
        """Bytes the ``endless`` / ``drip`` scripts wrote before they stopped."""
        self.stream_done = False
        """True when a stream was written whole (the client never hung up)."""
        self.hung_up_at: float | None = None
        """``time.monotonic()`` when a client hung up on a stream (None: none did)."""
        self.server = _Server(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        if tls is not None:  # the handshake runs in the request's thread, at its first read
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True,
                                                 do_handshake_on_connect=False)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        scheme = "http" if tls is None else "https"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        """Stop serving."""
        self.server.shutdown()
        self.server.server_close()

    def answer(self, model: str, chat: list[dict], n: int,
               max_tokens: int | None = None) -> tuple[int, dict, str]:
        """Return (status, extra headers, answer text) for request number ``n`` of ``model``."""
        first_user = next((m["content"] for m in chat if m.get("role") == "user"), "")
        moves = _moves(first_user)
        question = zlib.crc32(first_user.encode())
        pick = question % max(len(moves), 1) + 1
        if self.fail_after is not None and n >= self.fail_after:
            return 500, {}, "down"
        if re.fullmatch(r"e[45]\d\d", model) and model != "e429":
            return int(model[1:]), {}, "no"
        if model == "long400":
            return 400, {}, "why " * 250
        if model == "e429" or (model == "flaky" and n % 2 == 1):
            return 429, {"Retry-After": "0"}, "slow down"
        if model == "slow":
            time.sleep(self.slow_s)
        if model == "garbage":
            return 200, {}, "I would rather not say."
        if model == "prose":
            return 200, {}, ("You are the 2-player deck" if n % 2 == 0 else "You are the Spanish 40-")
        if model == "ramble":
            words = ("1.", "7", "de", "oros", "takes")
            return 200, {}, " ".join(words[k % 5] for k in range(max_tokens or 5000))
        if model == "fix-after-one" and sum(m.get("role") == "user" for m in chat) == 1:
            return 200, {}, "Let me think about the velo."
        if model == "words" and moves:
            return 200, {}, moves[pick - 1]
        if model == "reason" and moves:
            return 200, {}, (f"Move 1 keeps the 7 de oros for later, and {len(moves)} moves are listed.\n"
                             f"Taking more cards matters, so I choose this one.\nAnswer: {pick}")
        if model == "hidden":
            written = _position_moves(first_user)
            return 200, {}, f"Answer: {written[question % len(written)]}" if written else "no move"
        if model == "votes" and moves:
            with self.lock:
                k = self.seen.get(question, 0)
                self.seen[question] = k + 1
            return 200, {}, str(pick if k % 3 != 1 else pick % len(moves) + 1)
        return 200, {}, str(pick)

    def _handler(self):
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                try:
                    length = int(self.headers.get("Content-Length") or 0)
                except ValueError:
                    length = -1
                if not 0 <= length <= MAX_BODY or not self.path.endswith("/chat/completions"):
                    self.send_error(404 if 0 <= length <= MAX_BODY else 413)
                    return
                try:
                    body = json.loads(self.rfile.read(length))
                    if not isinstance(body, dict):
                        raise ValueError
                except ValueError:
                    self.send_error(400)
                    return
                with standin.lock:
                    n = standin.requests
                    standin.requests += 1
                    standin.in_flight += 1
                    standin.max_in_flight = max(standin.max_in_flight, standin.in_flight)
                    standin.headers.append(dict(self.headers))
                    standin.bodies.append(body)
                if body.get("model") in ("endless", "drip", "echo400"):
                    with standin.lock:
                        standin.in_flight -= 1
                    standin._hostile(self, body["model"])
                    return
                if body.get("model") == "drop":  # hang up without an answer
                    with standin.lock:
                        standin.in_flight -= 1
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                try:
                    time.sleep(0.005)  # long enough for concurrent requests to overlap
                    cap = body.get("max_tokens")
                    status, extra, text = standin.answer(body.get("model", ""), body.get("messages", []), n,
                                                         cap if isinstance(cap, int) else None)
                finally:
                    with standin.lock:
                        standin.in_flight -= 1
                chars = sum(len(str(m.get("content", ""))) for m in body.get("messages", []))
                data = {"id": f"standin-{n}", "object": "chat.completion", "model": body.get("model"),
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": text}}],
                        "usage": {"prompt_tokens": chars // 4, "completion_tokens": len(text.split()),
                                  "total_tokens": chars // 4 + len(text.split())}}
                raw = json.dumps(data if status == 200 else {"error": {"message": text}}).encode()
                if standin.raw_answer is not None:
                    status, raw = 200, standin.raw_answer
                try:
                    self.send_response(status)
                    for k, v in extra.items():
                        self.send_header(k, v)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except OSError:  # the client gave up (a timeout test)
                    pass

        return Handler

    def _hostile(self, h: BaseHTTPRequestHandler, model: str) -> None:
        """Answer as a hostile endpoint: an endless body, a drip, or a 400 page echoing the headers."""
        if model == "echo400":
            # the Authorization header first, placed so that a client cutting the page at 200
            # characters before scrubbing it would keep 27 of a 29-character key (the probe)
            head = "<html><head><title>400 Bad Request</title></head><body><h1>Bad Request</h1><pre>"
            auth = f"Authorization: {h.headers.get('Authorization', '')}"
            pad = " " * max(0, 173 - len(head) - len("Authorization: Bearer "))
            rest = "".join(f"\n{k}: {v}" for k, v in h.headers.items() if k.lower() != "authorization")
            page = f"{head}{pad}{auth}{rest}</pre></body></html>"
            raw = page.encode()
            h.send_response(400)
            h.send_header("Content-Type", "text/html")
            h.send_header("Content-Length", str(len(raw)))
            h.end_headers()
            h.wfile.write(raw)
            return
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        if model == "drip":
            h.send_header("Content-Length", str(1 << 20))
        h.end_headers()
        chunk, pause, limit = ((b"1" * (64 << 10), 0.0, ENDLESS_BYTES) if model == "endless"
                               else (b" ", 0.05, int(DRIP_S / 0.05)))
        try:
            h.wfile.write(b'{"choices": [{"message": {"role": "assistant", "content": "')
            sent = 0
            while sent < limit:
                h.wfile.write(chunk)
                h.wfile.flush()
                sent += len(chunk)
                with self.lock:
                    self.stream_sent = sent
                if pause:
                    time.sleep(pause)
            self.stream_done = True
        except OSError:  # the client hung up: what the test wants to see
            self.hung_up_at = time.monotonic()
        h.close_connection = True


def measure(rounds: int, rules: Rules | None = None, seed: int = 0) -> dict:
    """Return what the ``llm`` agent spends over ``rounds`` duplicate deals (every seat rotation) at a
    table of ``rules`` against greedy (and expert, at 3 players), the stand-in always answering a legal
    number: rounds played, calls, calls per round and prompt tokens per call."""
    rules = Rules() if rules is None else rules
    standin = StandIn()
    try:
        spec = f"llm:base_url={standin.url},model=legal"
        others = ("greedy", "expert")[: rules.num_sides - 1]
        run = run_tournament(TournamentConfig(agents=others, vs=spec, rules=rules, deals=rounds, seed=seed,
                                              workers=1))
        u = llm_usage_fields(run)["llm_usage"][spec]
    finally:
        standin.close()
    played = rounds * rules.num_sides
    return {"rounds": played, "calls": u["calls"], "calls_per_round": u["calls"] / played,
            "prompt_tokens_per_call": u["tokens_in"] / u["calls"]}


def main(argv: list[str] | None = None) -> int:
    """Serve until stopped, or (``--rounds N``) print what N duplicate deals cost in calls and tokens."""
    p = argparse.ArgumentParser(prog="python -m agents.external.llm_standin",
                                description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, help="measure N deals (each from every seat rotation) against "
                                              "greedy (and expert at 3 players), then exit")
    p.add_argument("--seed", type=int, default=0)
    add_rules_arguments(p)
    args = p.parse_args(argv)
    if args.rounds:
        m = measure(args.rounds, rules_from_args(args), seed=args.seed)
        print(f"{m['rounds']} rounds: {m['calls']} calls, {m['calls_per_round']:.2f} calls per round, "
              f"{m['prompt_tokens_per_call']:.0f} prompt tokens per call (characters / 4)")
        return 0
    s = StandIn()
    print(s.url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        s.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
