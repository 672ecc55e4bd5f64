"""A toy vLLM on 127.0.0.1 for distribution mode's served tests (`ToyVLLM`): a real HTTP server
speaking the parts of vLLM's API the workbench uses, over a tiny made-up model.

Its tokenizer writes each character as one token (or, with `grouped_digits`, runs of up to three
digits as one token, as Llama 3's does); its chat template is `<s>role:content</s>` per message.
Its "model" gives every next token a logit that is a fixed function of the sequence so far
(`logits`), so a test can compute the exact answer an agent must get. `/v1/completions` answers
as vLLM does (`allowed_token_ids`, `logprob_token_ids` up to 128, raw log-probabilities by
"token_id:N"); `/v1/chat/completions` answers the constrained greedy answer, and the start-up
check's constraint probe as a server that honours `structured_outputs`. Faults on demand:
`by_text` (log-probabilities keyed by token text, top 5 only, as servers without
`logprob_token_ids` do), `greedy_shift` (its own greedy answer differs), `fail_on` (a 500 for
node requests whose prompt contains that text).
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from workbench.llm.distribution.probe import PROBE_REQUEST
from workbench.llm.distribution.vocabulary import IntegerVocabulary
from workbench.llm.servers import PROBE_MESSAGES, PROBE_VALUE

START, END = 1, 2
"""The template's turn tokens; characters are 100 + their code point."""
GROUPED = 10_000_000
"""With grouped digits, a run of digits d is token GROUPED + 1000 * len(d) + int(d)."""


class ToyVLLM:
    """A toy vLLM server in a thread; use as a context manager."""

    def __init__(
        self,
        *,
        grouped_digits: bool = False,
        by_text: bool = False,
        greedy_shift: int = 0,
        fail_on: str | None = None,
        batch_noise: float = 0.0,
    ) -> None:
        self.grouped_digits = grouped_digits
        self.by_text = by_text
        self.greedy_shift = greedy_shift
        self.fail_on = fail_on
        self.batch_noise = batch_noise
        self.paths: list[str] = []
        self.node_bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self._http: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._http is not None
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    # ------------------------------------------------------------------ the toy tokenizer, model

    def tokenize(self, text: str) -> list[int]:
        out, i = [], 0
        while i < len(text):
            j = i
            while self.grouped_digits and j < len(text) and j - i < 3 and text[j].isdigit():
                j += 1
            if j > i:
                out.append(GROUPED + 1000 * (j - i) + int(text[i:j]))
                i = j
            else:
                out.append(100 + ord(text[i]))
                i += 1
        return out

    def piece(self, token: int) -> str:
        if token in (START, END):
            return {START: "<s>", END: "</s>"}[token]
        if token >= GROUPED:
            width, value = divmod(token - GROUPED, 1000)
            return str(value).zfill(width)
        return chr(token - 100)

    def chat(self, messages: list[dict[str, str]], generation_prompt: bool) -> list[int]:
        out: list[int] = []
        for m in messages:
            out += [START, *self.tokenize(f"{m['role']}:{m['content']}"), END]
        if generation_prompt:
            out += [START, *self.tokenize("assistant:")]
        return out

    def candidates(self) -> list[int]:
        """The tokens an integer answer is made of, and the end."""
        if self.grouped_digits:
            digits = [GROUPED + 1000 * w + v for w in (1, 2, 3) for v in range(10**w)]
        else:
            digits = [100 + ord(c) for c in "0123456789"]
        return [END, *digits, 100 + ord("-")]

    def logits(self, sequence: list[int], tokens: list[int]) -> np.ndarray:
        """The toy model's logits of `tokens` after `sequence`: a hash of both, the end the
        likelier the longer the answer."""
        seed = int.from_bytes(hashlib.sha256(json.dumps(sequence).encode()).digest()[:8], "big")
        rng = np.random.default_rng(seed)
        table = rng.normal(0.0, 2.0, size=len(self.candidates()))
        index = {t: i for i, t in enumerate(self.candidates())}
        answer = len(sequence) - 1 - max(i for i, t in enumerate(sequence) if t == START)
        answer -= len(self.tokenize("assistant:"))
        return np.array([table[index[t]] + (1.5 * answer if t == END else 0.0) for t in tokens])

    def greedy(self, prompt: list[int], low: int, high: int) -> str:
        """The constrained greedy answer (the server's own)."""
        pieces = tuple((t, self.piece(t)) for t in self.candidates() if t != END)
        vocab = IntegerVocabulary(pieces, (END,), low, high)
        text, sequence = "", list(prompt)
        for _ in range(8):
            allowed = vocab.allowed(text).tolist()
            token = allowed[int(np.argmax(self.logits(sequence, allowed)))]
            if token == END:
                break
            text += self.piece(token)
            sequence.append(token)
            if not vocab.can_continue(text):
                break
        return text

    # ------------------------------------------------------------------ what it was asked

    def node_prompts(
        self, since: int = 0, until: int | None = None
    ) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
        """The (prompt, allowed tokens) of every node asked for by node requests `since` (up to
        `until`), the start-up probe's own nodes left out (each process that checks asks them)."""
        sent = []
        for body in self.node_bodies[since:until]:
            for prompt in body["prompt"]:
                text = "".join(self.piece(t) for t in prompt)
                if "Probe " in text or PROBE_REQUEST.messages[0]["content"] in text:
                    continue
                sent.append((tuple(prompt), tuple(body["allowed_token_ids"])))
        return sent

    def chat_of(self, node: tuple[int, ...]) -> tuple[int, ...]:
        """A node prompt's chat: its tokens up to the answer (the generation prompt's end)."""
        start = max(i for i, t in enumerate(node) if t == START)
        return node[: start + 1 + len(self.tokenize("assistant:"))]

    # ------------------------------------------------------------------ the endpoints

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        if path == "/tokenize":
            if "messages" in body:
                tokens = self.chat(body["messages"], body.get("add_generation_prompt", True))
            else:
                tokens = self.tokenize(body["prompt"])
            strs = [self.piece(t) for t in tokens] if body.get("return_token_strs") else None
            return 200, {"count": len(tokens), "max_model_len": 4096, "tokens": tokens,
                         "token_strs": strs}  # fmt: skip
        if path == "/v1/completions":
            return self.node(body)
        if path == "/v1/chat/completions":
            if body.get("messages") == list(PROBE_MESSAGES):
                text = str(PROBE_VALUE) if "structured_outputs" in body else "apple"
            else:
                regex_range = body.get("structured_outputs") and (0, 100)
                low, high = regex_range or (0, 100)
                text = self.greedy(self.chat(body["messages"], True), low, high)
                if self.greedy_shift:
                    text = str(int(text) + self.greedy_shift)
            return 200, {"choices": [{"message": {"role": "assistant", "content": text}}],
                         "usage": {"prompt_tokens": 3, "completion_tokens": 1}}  # fmt: skip
        return 404, {"error": {"message": f"no {path}"}}

    def node(self, body: dict[str, Any]) -> tuple[int, Any]:
        with self.lock:
            self.node_bodies.append(body)
        prompts = body["prompt"]
        prompts = prompts if prompts and isinstance(prompts[0], list) else [prompts]
        if self.fail_on and any(self.fail_on in "".join(self.piece(t) for t in p) for p in prompts):
            return 500, {"error": {"message": "EngineCore encountered an issue"}}
        wanted = body.get("logprob_token_ids") or []
        if len(wanted) > 128:
            return 400, {"error": {"message": "logprob_token_ids longer than 128"}}
        choices = [self.choice(i, p, wanted, body) for i, p in enumerate(prompts)]
        return 200, {"choices": choices}

    def choice(self, index: int, prompt: list[int], wanted: list[int], body: dict) -> dict:
        vocab = self.candidates()
        shift = np.logaddexp.reduce(self.logits(prompt, vocab))
        allowed = body.get("allowed_token_ids") or vocab
        sampled = allowed[int(np.argmax(self.logits(prompt, allowed)))]
        shown = sorted({sampled, *wanted})
        values = self.logits(prompt, shown) - shift
        if self.batch_noise:  # as a GPU's kernels: a row's numbers depend on its batch's size
            batch = body["prompt"] if isinstance(body["prompt"][0], list) else [body["prompt"]]
            values = values + self.batch_noise * (len(batch) - 1)
        if self.by_text:
            pairs = sorted(zip(map(self.piece, shown), values, strict=True), key=lambda kv: -kv[1])
            top = dict(pairs[:5])
            tokens = [self.piece(sampled)]
        else:
            top = {f"token_id:{t}": float(v) for t, v in zip(shown, values, strict=True)}
            tokens = [f"token_id:{sampled}"]
        logprobs = {"tokens": tokens, "top_logprobs": [top], "token_logprobs": [0.0]}
        return {"index": index, "text": self.piece(sampled), "logprobs": logprobs}

    def __enter__(self) -> ToyVLLM:
        toy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/v1/models":
                    model = {"id": "toy", "object": "model", "owned_by": "vllm"}
                    self._send(200, {"object": "list", "data": [model]})
                elif self.path == "/version":
                    self._send(200, {"version": "0.32.0"})
                else:
                    self._send(404, {"error": "not found"})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with toy.lock:
                    toy.paths.append(self.path)
                self._send(*toy.post(self.path, json.loads(raw)))

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        threading.Thread(target=self._http.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._http is not None
        self._http.shutdown()
        self._http.server_close()
