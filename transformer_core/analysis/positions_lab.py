"""The positions lab: the same tokens scored by one attention head under four ways of giving it word order.

The head: token vectors ``x`` (:func:`~transformer_core.nn.embedding.token_vector`, ``d_model`` 384, scaled by 1/√2
as :func:`~transformer_core.nn.embedding.embed_tokens` does), one pair of random projections ``W_Q``, ``W_K``
(``d_model → d_head`` 64, drawn from ``N(0, 1/d_model)`` with a local generator) shared by every scheme, and the
score ``q · k / √d_head``. What changes is where the position enters:

* ``sinusoidal`` (Vaswani et al. 2017, §3.5): ``(x_m + PE_m) W_Q · (x_n + PE_n) W_K``; PE is the package's table.
* ``learned`` (BERT, here MiniLM-L6's trained 512 × 384 table): ``(x_m + P_m) W_Q · (x_n + P_n) W_K``, with ``P``
  multiplied by one number so its root mean square is the sinusoidal table's (1/√2): the two then differ in shape,
  not in size.
* ``rope`` (Su et al. 2021): nothing is added; ``q_m = R(m) x_m W_Q`` and ``k_n = R(n) x_n W_K``, every feature
  pair turned by the angle ``position · θ_i`` (:mod:`transformer_core.nn.rotary`, base 10,000).
* ``alibi`` (Press et al. 2022): nothing is added or turned; ``x_m W_Q · x_n W_K / √d_head − slope · |m − n|`` with
  the slope of one head of eight (:mod:`transformer_core.nn.alibi`).

With the two added schemes the score of the same two tokens depends on where they stand, not only on how far apart
they are; with RoPE and ALiBi it depends only on ``m − n`` (:func:`relative_check` shows it in numbers).

Shape legend: pos, query_pos, key_pos, d_model, d_head, pair (a RoPE feature pair, features i and i + d_head/2).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import torch

from ..nn.alibi import alibi_slopes
from ..nn.embedding import sinusoidal_positions, token_vector  # noqa: F401  (sinusoidal: re-exported for tests)
from ..nn.rotary import apply_rotary, inverse_frequencies, rope_tables

SCHEMES = ("sinusoidal", "learned", "rope", "alibi")
D_MODEL, D_HEAD = 384, 64
ROPE_BASE = 10000.0
ALIBI_HEADS = 8
MAX_POSITION = 512  # MiniLM's table has 512 rows


@dataclass(frozen=True)
class LabHead:
    """The shared head: ``W_Q``, ``W_K`` ``[d_model, d_head]`` and the learned table ``[512, d_model]`` (rescaled)."""

    W_Q: torch.Tensor
    W_K: torch.Tensor
    learned: torch.Tensor
    learned_scale: float  # the number MiniLM's table was multiplied by


def minilm_position_table() -> torch.Tensor:
    """MiniLM-L6's trained position table, float32 ``[512, 384]`` (raises ``PretrainedUnavailable`` without it)."""
    from ..models.minilm import load_minilm

    model, _tokenizer = load_minilm()
    return model.embeddings.position.weight.detach().clone()


@lru_cache(maxsize=4)
def lab_head(seed: int = 0) -> LabHead:
    """The head for ``seed`` (cached per process; never mutate its tensors)."""
    generator = torch.Generator().manual_seed(seed)
    w_q = torch.randn(D_MODEL, D_HEAD, generator=generator) / math.sqrt(D_MODEL)
    w_k = torch.randn(D_MODEL, D_HEAD, generator=generator) / math.sqrt(D_MODEL)
    table = minilm_position_table()
    scale = (1 / math.sqrt(2)) / float(table.pow(2).mean().sqrt())
    return LabHead(w_q, w_k, table * scale, scale)


def token_vectors(tokens: list[str] | tuple[str, ...], seed: int = 0) -> torch.Tensor:
    """``[pos, d_model]``: each token's fixed vector scaled by 1/√2."""
    return torch.stack([token_vector(t, D_MODEL, seed) for t in tokens]) / math.sqrt(2.0)


def _check_positions(*positions: torch.Tensor) -> None:
    for p in positions:
        if p.numel() and (int(p.min()) < 0 or int(p.max()) >= MAX_POSITION):
            raise ValueError(f"positions must be in 0…{MAX_POSITION - 1} (MiniLM's table), got {p.tolist()[:8]}")


def scores(scheme: str, x_q: torch.Tensor, x_k: torch.Tensor, pos_q, pos_k, *, seed: int = 0,
           alibi_head: int = 3) -> torch.Tensor:
    """Raw scores ``[query_pos, key_pos]`` (float32) of queries ``x_q`` ``[query_pos, d_model]`` at positions
    ``pos_q`` against keys ``x_k`` at ``pos_k`` under ``scheme``; ``alibi_head`` (0…7) picks ALiBi's slope.

    Raises:
        ValueError: an unknown scheme, a position outside 0…511 or an ALiBi head outside 0…7.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
    if not 0 <= alibi_head < ALIBI_HEADS:
        raise ValueError(f"alibi_head must be in 0…{ALIBI_HEADS - 1}, got {alibi_head!r}")
    pos_q, pos_k = torch.as_tensor(pos_q, dtype=torch.long), torch.as_tensor(pos_k, dtype=torch.long)
    _check_positions(pos_q, pos_k)
    head = lab_head(seed)
    if scheme == "sinusoidal":
        table = sinusoidal_positions(MAX_POSITION, D_MODEL)
        x_q, x_k = x_q + table[pos_q], x_k + table[pos_k]
    elif scheme == "learned":
        x_q, x_k = x_q + head.learned[pos_q], x_k + head.learned[pos_k]
    q, k = x_q @ head.W_Q, x_k @ head.W_K  # [query_pos, d_head], [key_pos, d_head]
    if scheme == "rope":
        q = apply_rotary(q, *rope_tables(pos_q, D_HEAD, ROPE_BASE))
        k = apply_rotary(k, *rope_tables(pos_k, D_HEAD, ROPE_BASE))
    out = q @ k.T / math.sqrt(D_HEAD)
    if scheme == "alibi":
        slope = alibi_slopes(ALIBI_HEADS)[alibi_head]
        out = out - slope * (pos_q[:, None] - pos_k[None, :]).abs().float()
    return out


def score_matrices(tokens, *, seed: int = 0, alibi_head: int = 3) -> dict[str, torch.Tensor]:
    """Every scheme's ``[query_pos, key_pos]`` scores of ``tokens`` against themselves at positions 0, 1, …;
    plus ``"range"``: the (min, max) over all four, for one colour range."""
    x = token_vectors(tokens, seed)
    pos = torch.arange(len(tokens))
    out = {s: scores(s, x, x, pos, pos, seed=seed, alibi_head=alibi_head) for s in SCHEMES}
    both = torch.stack(list(out.values()))
    out["range"] = torch.tensor([float(both.min()), float(both.max())])
    return out


def score_vs_distance(query_token: str, key_token: str, *, query_positions=(40, 200), max_distance: int = 40,
                      seed: int = 0, alibi_head: int = 3) -> dict[str, torch.Tensor]:
    """The score of one query token against one key token ``d`` positions before it, ``d = 0 … max_distance``,
    with the query at each of ``query_positions``: per scheme ``[len(query_positions), max_distance + 1]``.

    For RoPE and ALiBi the rows are the same curve; for the added schemes they differ.

    Raises:
        ValueError: a key would fall before position 0 or a query after 511.
    """
    if min(query_positions) < max_distance:
        raise ValueError(f"each query position must be >= max_distance={max_distance}, got {query_positions}")
    x_q, x_k = token_vectors([query_token], seed), token_vectors([key_token], seed)
    distance = torch.arange(max_distance + 1)
    out = {}
    for scheme in SCHEMES:
        rows = [scores(scheme, x_q, x_k.expand(len(distance), -1), [m], m - distance, seed=seed,
                       alibi_head=alibi_head)[0] for m in query_positions]
        out[scheme] = torch.stack(rows)
    return out


def rope_pairs(token: str, positions, pairs=(0, 8, 16, 31), *, seed: int = 0, side: str = "query") -> dict:
    """How RoPE turns one token's query (or key) as its position grows: for every position and chosen pair ``i``,
    the coordinates ``(x_i, x_{i + d_head/2})`` after the rotation.

    Returns ``{"xy": [pos, pair, 2], "angle": [pos, pair] (radians, position · θ_i), "theta": [pair] (radians per
    position), "pairs": list, "positions": list}``. Each pair's point stays on one circle (a rotation keeps length).
    """
    head = lab_head(seed)
    positions = torch.as_tensor(positions, dtype=torch.long)
    x = token_vectors([token], seed) @ (head.W_Q if side == "query" else head.W_K)  # [1, d_head]
    rotated = apply_rotary(x.expand(len(positions), -1), *rope_tables(positions, D_HEAD, ROPE_BASE))
    idx = torch.tensor(pairs)
    theta = inverse_frequencies(D_HEAD, ROPE_BASE)[idx]
    xy = torch.stack((rotated[:, idx], rotated[:, idx + D_HEAD // 2]), dim=-1)  # [pos, pair, 2]
    return {"xy": xy, "angle": positions.float()[:, None] * theta[None], "theta": theta, "pairs": list(pairs),
            "positions": positions.tolist()}


def relative_check(query_token: str, key_token: str, m: int, n: int, shift: int, *, seed: int = 0,
                   alibi_head: int = 3) -> list[dict]:
    """``score(m, n)`` and ``score(m + shift, n + shift)`` of the same two tokens under every scheme, and their
    difference: about 0 (float32 rounding) for RoPE and ALiBi, not for the added schemes.

    Returns one ``{"scheme", "score", "shifted", "difference"}`` per scheme (plain floats).
    """
    x_q, x_k = token_vectors([query_token], seed), token_vectors([key_token], seed)
    rows = []
    for scheme in SCHEMES:
        a = float(scores(scheme, x_q, x_k, [m], [n], seed=seed, alibi_head=alibi_head)[0, 0])
        b = float(scores(scheme, x_q, x_k, [m + shift], [n + shift], seed=seed, alibi_head=alibi_head)[0, 0])
        rows.append({"scheme": scheme, "score": a, "shifted": b, "difference": b - a})
    return rows


def slowest_rope_turn(d_head: int, base: float, length: int) -> float:
    """How far RoPE's slowest pair (θ = base^(−(d_head − 2)/d_head) radians a position) has turned at position
    ``length``, in turns (1 = 2π). Below 1 the pair has not come round once: positions past a model's trained length
    give that pair angles the training never showed (SmolLM2: d_head 64, base 100,000, 8,192 tokens → 0.019 turn).
    """
    theta = base ** (-(d_head - 2) / d_head)
    return length * theta / (2 * math.pi)



def row0_ratio() -> float:
    """How much longer MiniLM's position row 0 is than its other rows on average (row norms, after the lab's
    scaling): the learned table's first position stands out."""
    norms = lab_head().learned.norm(dim=1)
    return float(norms[0] / norms[1:].mean())


def tab_numbers(tokens, alibi_head: int, query: int, key: int, query_positions=(40, 200),
                max_tokens: int = 16) -> dict:
    """Everything the positions tab draws, for ``tokens`` (cut to ``max_tokens``) and the chosen query and key
    tokens (indices into them): ``{"tokens", "scores": {scheme: [query_pos, key_pos]}, "range": (low, high) of all
    four, "curves": {scheme: [query position][distance]} (:func:`score_vs_distance`), "pairs": RoPE feature pairs of
    the query token at positions 0–24 (:func:`rope_pairs`), "relative": :func:`relative_check` at m = 30, n = 20,
    shifted by 100, "slope": the ALiBi head's slope, "learned_scale", "row0_ratio"}``; NumPy arrays and numbers.

    Raises:
        IndexError: ``query`` or ``key`` is not an index of the cut tokens.
    """
    tokens = tuple(tokens)[:max_tokens]
    mats = score_matrices(list(tokens), alibi_head=alibi_head)
    curves = score_vs_distance(tokens[query], tokens[key], query_positions=query_positions, alibi_head=alibi_head)
    pairs = rope_pairs(tokens[query], range(25))
    return {"tokens": tokens, "scores": {s: mats[s].numpy() for s in SCHEMES},
            "range": tuple(mats["range"].tolist()), "curves": {s: c.numpy() for s, c in curves.items()},
            "pairs": {"xy": pairs["xy"].numpy(), "theta": pairs["theta"].tolist(), "pairs": pairs["pairs"],
                      "positions": pairs["positions"]},
            "relative": relative_check(tokens[query], tokens[key], 30, 20, 100, alibi_head=alibi_head),
            "slope": float(alibi_slopes(ALIBI_HEADS)[alibi_head]),
            "learned_scale": lab_head().learned_scale, "row0_ratio": row0_ratio()}
