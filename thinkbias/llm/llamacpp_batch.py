"""Batched multi-sequence generation on llama.cpp (registry ``extra.n_parallel`` > 1).

A second llama.cpp context beside the engine's own one holds ``n_parallel`` sequences, each in its
own KV stream of ``n_ctx`` cells (``kv_unified = false``: a sequence attends only to its own cells,
so attention does not grow with the number of sequences in flight). Every decode step evaluates
the next token of every running sequence in one ``llama_decode``. Continuous: when a sequence
finishes, its cells are cleared and its slot takes the next request at once.

Each sequence keeps what a sequential request has: its own sampler (greedy, or temperature / top-p
with its own seed; a JSON-schema grammar), stop strings, token budget and ``n_ctx`` limit, exactly
as ``LlamaCppEngine.generate_tokens`` applies them. A new request's prompt is prefilled in its own
``llama_decode`` calls (chunks of ``n_batch``, as the sequential path does), its first token
sampled right after; the prompt's leading tokens that a running sequence's prompt shares (the
system prompt, a study's instructions) are not prefilled again but copied from that sequence's KV
stream (``llama_memory_seq_cp``, then truncated), since a cell's numbers depend only on the tokens
before it. A finished request is handed to the caller before the next one starts (the
engine stores it in the cache then, so a kill loses only the sequences in flight). A caller's
``after`` hook reads a finished sequence's own KV cells first, through ``logits_after``: that
truncates the sequence's cells (``llama_memory_seq_rm`` on its seq_id) to the longest prefix they
share with the tokens asked for and evaluates the rest. ``generate_and_probe_many`` probes each
trace there (deepest cut first, ``prompt + trace[:cut] + cue``), ``generate_and_score_many`` scores
its second prompt there (the generation's prompt + a cue: only the cue is evaluated).

``logits_after_many`` is the same for many sequences at once: the sequences that still need
equally many tokens share ``llama_decode`` calls (a probe's cue rounds, prompts of one length); a
sequence with a remainder of its own length is evaluated alone, as a sequential prefill is, so each
result is bitwise what the engine's own context gives. A long prefill keeps a device busy by
itself; the short rounds are what sharing a call saves. ``score_many`` and ``probe_many`` of a batched engine (scores
and probes of many requests, e.g. of traces generated earlier) run there, ``n_parallel`` requests at
a time. The engine's own context, untouched by this path, still serves single ``score`` and
``probe`` calls, so those stay exactly what they are with ``n_parallel = 1``. Memory: the KV cache
of ``n_parallel x n_ctx`` cells (docs/engine.md). Results are numerically equivalent to sequential
decoding, not bitwise (a token decoded in a batch of 8 goes through other matrix shapes than one
decoded alone): see the determinism policy in docs/engine.md.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from thinkbias.llm.token_stream import TokenStream
from thinkbias.llm.types import Generation, ModelSpec, Request, Sampling

Evaluate = Callable[[list[int]], np.ndarray]  # tokens a sequence's cells must hold -> next-token logits
After = Callable[[int, "InFlight", Generation, Evaluate], object]  # (j, sequence, generation, evaluate) -> extra
Finished = Callable[[int, Generation, object], None]  # (j, generation, what ``after`` returned or None)
# Shortest shared prompt prefix copied from another sequence's KV stream instead of prefilled: a
# copy moves the whole stream (n_ctx cells; 47 MB for the embedded model at n_ctx 2048, a few ms),
# which costs less than prefilling about 16 tokens on a CPU.
MIN_SHARED_PREFIX = 16


class DecodingEngine(Protocol):
    """What the decoder uses of the engine whose model it shares (``LlamaCppEngine``): the loaded
    model, its tokenizer, samplers, length check, counters and generation record, so that a batched
    sequence follows the sequential path's rules."""

    spec: ModelSpec
    llm: Any  # llama_cpp.Llama
    _n_vocab: int

    def tokenize_prompt(self, rendered: str) -> list[int]: ...

    def token_piece(self, token: int, special: bool = False) -> bytes: ...

    def _check_len(self, n: int) -> None: ...

    def _sampler(self, sampling: Sampling) -> Any: ...

    def _count(self, **deltas: int) -> None: ...

    def _make_generation(
        self, request: Request, rendered: str, n_prompt: int, tokens: list[int], text: str, finish: str
    ) -> Generation: ...


@dataclass
class Slot:
    """A sequence used for scoring or probing only: its seq_id and the tokens its KV cells hold."""

    seq_id: int
    cells: list[int] = field(default_factory=list)


@dataclass
class InFlight:
    """One request in flight: its slot (seq_id), sampler, text so far and the tokens its KV cells hold."""

    seq_id: int
    j: int
    request: Request
    rendered: str
    prompt: list[int]
    sampler: object | None  # None: greedy, the argmax of the logits taken here (no sampler chain)
    stream: TokenStream
    cells: list[int] = field(default_factory=list)  # tokens held by this sequence's KV cells, by position
    pending: int | None = None  # the sampled token the next decode step evaluates
    finish: str = ""


class BatchedDecoder:
    """Continuous batched decoding of many requests on ``n_parallel`` sequences of one model."""

    def __init__(self, engine: DecodingEngine, n_parallel: int):
        import llama_cpp
        from llama_cpp import _internals

        self.engine, self.n_parallel = engine, n_parallel
        llm = engine.llm
        if n_parallel > llama_cpp.llama_max_parallel_sequences():
            raise ValueError(
                f"model '{engine.spec.id}': extra.n_parallel={n_parallel} exceeds llama.cpp's "
                f"limit of {llama_cpp.llama_max_parallel_sequences()} sequences"
            )
        params = type(llm.context_params).from_buffer_copy(llm.context_params)
        params.n_ctx = n_parallel * engine.spec.n_ctx
        params.n_seq_max = n_parallel
        params.kv_unified = False
        params.n_batch = max(int(params.n_batch), n_parallel)
        params.n_ubatch = max(int(params.n_ubatch), n_parallel)
        self.n_batch = int(params.n_batch)
        self.ctx = _internals.LlamaContext(model=llm._model, params=params, verbose=llm.verbose)
        self.memory = llama_cpp.llama_get_memory(self.ctx.ctx)
        self.batch = _internals.LlamaBatch(n_tokens=self.n_batch, embd=0, n_seq_max=1, verbose=llm.verbose)
        self.vocab = llm._model.vocab
        self.n_vocab = engine._n_vocab
        self._is_eog = llama_cpp.llama_vocab_is_eog
        self._seq_rm = llama_cpp.llama_memory_seq_rm
        self._seq_cp = llama_cpp.llama_memory_seq_cp
        self._logits_ith = llama_cpp.llama_get_logits_ith
        self._pieces: dict[int, bytes] = {}  # token -> its bytes (the vocabulary is fixed)

    # -- llama.cpp calls ----------------------------------------------------------------------
    def _decode(self, entries: Sequence[tuple[int, int, int, bool]]) -> None:
        """One ``llama_decode`` of (token, position, seq_id, wants logits) entries."""
        b = self.batch.batch
        b.n_tokens = len(entries)
        for i, (tok, pos, seq, logits) in enumerate(entries):
            b.token[i] = tok
            b.pos[i] = pos
            b.seq_id[i][0] = seq
            b.n_seq_id[i] = 1
            b.logits[i] = logits
        self.ctx.decode(self.batch)

    def _extend(self, seq: InFlight, tokens: Sequence[int]) -> None:
        """Evaluate ``tokens`` after the sequence's cells, in chunks of ``n_batch`` (logits of the last)."""
        for start in range(0, len(tokens), self.n_batch):
            chunk = tokens[start : start + self.n_batch]
            n0 = len(seq.cells)
            self._decode([(t, n0 + k, seq.seq_id, start + k == len(tokens) - 1) for k, t in enumerate(chunk)])
            seq.cells.extend(chunk)

    def _clear(self, seq_id: int) -> None:
        self._seq_rm(self.memory, seq_id, -1, -1)

    def _share_prefix(self, seq: InFlight, others: Sequence[InFlight]) -> None:
        """Give ``seq`` (empty cells) the longest prefix of its prompt that another sequence's prompt
        shares, copied from that sequence's stream, when it is at least ``MIN_SHARED_PREFIX`` tokens
        (the last prompt token is always evaluated: its logits give the first sample)."""
        best, n = None, 0
        for other in others:
            m = min(len(other.prompt), len(seq.prompt) - 1)
            a, b = np.asarray(other.prompt[:m]), np.asarray(seq.prompt[:m])
            diff = np.flatnonzero(a != b)
            common = int(diff[0]) if len(diff) else m
            if common > n:
                best, n = other, common
        if best is None or n < MIN_SHARED_PREFIX:
            return
        # a copy between streams takes the whole stream (applied at the next decode); the cells
        # past the shared prefix are then dropped
        self._seq_cp(self.memory, best.seq_id, seq.seq_id, -1, -1)
        self._seq_rm(self.memory, seq.seq_id, n, -1)
        seq.cells = list(seq.prompt[:n])

    def logits_after(self, seq: "Slot | InFlight", tokens: list[int]) -> np.ndarray:
        """Next-token logits once the sequence's cells hold exactly ``tokens``: the longest common
        prefix is kept (the last token re-evaluated when all are there), the rest truncated and
        evaluated, as ``LlamaCppEngine.eval_prefix(reuse_decoded=True)`` does on the engine's cache."""
        return self.logits_after_many([(seq, tokens)])[0]

    def logits_after_many(self, targets: Sequence[tuple["Slot | InFlight", list[int]]]) -> list[np.ndarray]:
        """``logits_after`` for several sequences (distinct seq_ids) at once. The sequences whose
        remaining tokens are equally many share ``llama_decode`` calls (up to ``n_batch`` tokens),
        and no sequence's remainder is split between calls unless it alone exceeds ``n_batch``: a
        batch that mixes lengths is split by llama.cpp into equal-length parts, which would leave a
        sequence's last tokens in a part of their own, computed with other kernels than a single
        sequence's prefill (measured: up to 0.01 in P(Yes)). Grouped so, each sequence's logits are
        bitwise those of the same tokens evaluated alone (tested)."""
        by_len: dict[int, list[tuple[int, "Slot | InFlight", list[int]]]] = {}
        for k, (seq, tokens) in enumerate(targets):
            self.engine._check_len(len(tokens))
            have = seq.cells
            m = min(len(have), len(tokens))
            common = next((i for i in range(m) if have[i] != tokens[i]), m)
            common = min(common, len(tokens) - 1)
            self._seq_rm(self.memory, seq.seq_id, common, -1)
            del seq.cells[common:]
            rest = tokens[common:]
            by_len.setdefault(len(rest), []).append((k, seq, rest))
            self.engine._count(prompt_tokens=len(rest), probe_tokens=len(rest))
        out: list = [None] * len(targets)
        for n, group in by_len.items():
            per_call = max(1, self.n_batch // n)
            for g0 in range(0, len(group), per_call):
                part = group[g0 : g0 + per_call]
                if n > self.n_batch:  # alone, in chunks of n_batch as a sequential prefill
                    (k, seq, rest) = part[0]
                    self._extend(seq, rest)
                    out[k] = self._logits_row(-1)
                    continue
                entries = []
                for _, seq, rest in part:
                    n0 = len(seq.cells)
                    entries += [(t, n0 + i, seq.seq_id, i == n - 1) for i, t in enumerate(rest)]
                    seq.cells.extend(rest)
                self._decode(entries)
                for j, (k, _, _) in enumerate(part):
                    out[k] = self._logits_row((j + 1) * n - 1)
        return out

    def _logits_row(self, idx: int) -> np.ndarray:
        """A copy of the logits of output ``idx`` of the last decode (-1: the last)."""
        return np.ctypeslib.as_array(self._logits_ith(self.ctx.ctx, idx), shape=(self.n_vocab,)).copy()

    def evaluate_many(
        self, targets: Sequence[Sequence[list[int]]], done: Callable[[int, list[np.ndarray]], None]
    ) -> None:
        """For each item, the next-token logits after each of its token lists in turn (a probe's
        cuts, deepest first; a score's one prompt), ``n_parallel`` items at a time, each in its own
        sequence: round r evaluates every item's r-th list in shared decode calls, keeping the
        prefix its cells already hold. ``done(j, logits)`` as each group of items finishes."""
        for g0 in range(0, len(targets), self.n_parallel):
            group = list(range(g0, min(g0 + self.n_parallel, len(targets))))
            slots = {j: Slot(k) for k, j in enumerate(group)}
            out: dict[int, list[np.ndarray]] = {j: [] for j in group}
            try:
                for r in range(max(len(targets[j]) for j in group)):
                    live = [j for j in group if r < len(targets[j])]
                    logits = self.logits_after_many([(slots[j], list(targets[j][r])) for j in live])
                    for j, row in zip(live, logits):
                        out[j].append(row)
            finally:
                for slot in slots.values():
                    self._clear(slot.seq_id)
            for j in group:
                done(j, out[j])

    # -- one sequence's decoding rules (those of LlamaCppEngine.generate_tokens) --------------
    def _advance(self, seq: InFlight, idx: int) -> bool:
        """Sample the sequence's next token from output ``idx`` of the last decode; True when it
        finished (EOG, a stop string, its budget or n_ctx), else its token waits in ``pending``."""
        budget = seq.request.sampling.max_tokens
        if len(seq.stream.tokens) >= budget or len(seq.cells) >= self.engine.spec.n_ctx:
            seq.finish = "length"
            return True
        if seq.sampler is None:  # greedy: the first largest logit, as llama.cpp's greedy sampler picks
            row = np.ctypeslib.as_array(self._logits_ith(self.ctx.ctx, idx), shape=(self.n_vocab,))
            tok = int(np.argmax(row))
        else:
            tok = seq.sampler.sample(self.ctx, idx)
        if self._is_eog(self.vocab, tok):
            seq.finish = "stop"
            return True
        piece = self._pieces.get(tok)
        if piece is None:
            piece = self._pieces[tok] = self.engine.token_piece(tok)
        if seq.stream.add(tok, piece):
            seq.finish = "stop"
            return True
        if len(seq.stream.tokens) >= budget:
            seq.finish = "length"
            return True
        seq.pending = tok
        return False

    def _start(self, j: int, request: Request, rendered: str, seq_id: int, others: Sequence[InFlight]) -> InFlight:
        """Prefill a request's prompt in slot ``seq_id`` (its shared prefix copied from ``others``)."""
        eng, sampling = self.engine, request.sampling
        prompt = eng.tokenize_prompt(rendered)
        eng._check_len(len(prompt))
        greedy = sampling.temperature <= 0 and sampling.json_schema is None
        seq = InFlight(
            seq_id, j, request, rendered, prompt, None if greedy else eng._sampler(sampling), TokenStream(sampling.stop)
        )
        self._share_prefix(seq, others)
        rest = prompt[len(seq.cells) :]
        self._extend(seq, rest)
        eng._count(prompt_tokens=len(rest))
        return seq

    def _finish(self, seq: InFlight, after: After | None, finished: Finished) -> None:
        eng, stream = self.engine, seq.stream
        eng._count(generated_tokens=len(stream.tokens), requests=1)
        text = stream.final_text()
        gen = eng._make_generation(seq.request, seq.rendered, len(seq.prompt), stream.tokens, text, seq.finish)
        extra = None if after is None else after(seq.j, seq, gen, lambda tokens: self.logits_after(seq, tokens))
        self._clear(seq.seq_id)
        finished(seq.j, gen, extra)

    # -- the loop -----------------------------------------------------------------------------
    def run(self, items: Sequence[tuple[Request, str]], finished: Finished, after: After | None = None) -> None:
        """Generate every (request, rendered), ``n_parallel`` at a time, calling
        ``finished(j, generation, extra)`` as each one finishes; ``extra`` is what
        ``after(j, sequence, generation, evaluate)`` returned on the sequence's KV cells before they
        were cleared (e.g. its fused probes), or None without ``after``."""
        queue = deque(range(len(items)))
        free = deque(range(self.n_parallel))
        running: dict[int, InFlight] = {}
        try:
            while queue or running:
                while queue and free:
                    j = queue.popleft()
                    seq = self._start(j, items[j][0], items[j][1], free.popleft(), list(running.values()))
                    if self._advance(seq, -1):
                        self._finish(seq, after, finished)
                        free.append(seq.seq_id)
                    else:
                        running[seq.seq_id] = seq
                if not running:
                    continue
                # by seq_id: llama.cpp splits a step into one graph evaluation per run of consecutive
                # seq_ids (its per-stream KV cache), so an unordered step would cost several
                order = [running[k] for k in sorted(running)]
                self._decode([(s.pending, len(s.cells), s.seq_id, True) for s in order])
                done = []
                for idx, seq in enumerate(order):  # every sample first: probes overwrite the logits
                    seq.cells.append(seq.pending)
                    seq.pending = None
                    if self._advance(seq, idx):
                        done.append(seq)
                for seq in done:
                    del running[seq.seq_id]
                    self._finish(seq, after, finished)
                    free.append(seq.seq_id)
        finally:
            for seq_id in range(self.n_parallel):
                self._clear(seq_id)

    def close(self) -> None:
        self.batch.close()
        self.ctx.close()
