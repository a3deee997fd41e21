"""Same settings ⇒ bit-identical numbers, however many sessions run at once.

Every seeded computation (the toy encoder's weights and trace, the masks lab's dropout, the
float16 module, the pipeline's walkthrough) draws from a ``torch.Generator`` owned by the call.
The test runs them from many threads at once, while another thread keeps reseeding the
process-global RNG (what the old ``fork_rng`` + ``manual_seed`` did from every session), and
compares each result with the one computed alone, byte for byte. Reference values: the same
numbers torch gives when the global RNG is seeded and nothing else runs.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
from torch import nn

from transformer_core import EncoderConfig, run_toy
from transformer_core.analysis import lessons
from transformer_core.nn.attention import MultiHeadAttention, dropout
from transformer_core.nn.encoder import Encoder, EncoderLayer, build_seeded
from transformer_core.nn.masks import causal_mask

THREADS, RUNS = 8, 6
SENTENCES = ["the cat sat on the mat", "a dog ran"]
CONFIGS = [EncoderConfig(d_model=32, n_heads=4, d_ff=64, n_layers=2, seed=s) for s in (0, 1, 7)]
DROPOUT_CONFIG = EncoderConfig(d_model=32, n_heads=4, d_ff=64, dropout=0.3, seed=5)


def _bytes(tensors) -> list[bytes]:
    return [np.ascontiguousarray(t.detach().numpy() if isinstance(t, torch.Tensor) else t).tobytes() for t in tensors]


def toy(i: int) -> list[bytes]:
    trace = run_toy(SENTENCES, CONFIGS[i % len(CONFIGS)], causal=bool(i % 2))
    return _bytes(trace.stages[name] for name in sorted(trace.stages))


def lab_dropout(i: int) -> list[bytes]:
    x = run_toy(SENTENCES, DROPOUT_CONFIG).stages["embeddings"]
    stages = lessons.attention_dropout(torch.from_numpy(x.copy()), None, DROPOUT_CONFIG, training=True,
                                       dropout_seed=i % 3)
    return _bytes([stages["weights"], stages["dropped_weights"]])


def half_module(i: int) -> list[bytes]:
    generator = torch.Generator().manual_seed(i % 3)
    mha = build_seeded(lambda: MultiHeadAttention(16, 4, fill_value=-1e9), generator).half().eval()
    x = torch.randn(1, 5, 16, generator=generator).half()
    with torch.no_grad():
        out, weights = mha(x, x, x, causal_mask(5))
    ok, text = lessons.half_module_runs(16, 4, 5, seed=i % 3)
    return _bytes([out, weights]) + [text.encode()]


def walkthrough(i: int) -> list[bytes]:
    steps = lessons.encoder_walkthrough(("the", "cat", "sat"), CONFIGS[i % len(CONFIGS)], causal=True)
    return _bytes(steps[name] for name in sorted(steps))


COMPUTATIONS = {"run_toy": toy, "attention_dropout": lab_dropout, "half_module_runs": half_module,
                "encoder_walkthrough": walkthrough}
VARIANTS = 3  # argument variants per computation (i % 3)


def test_every_seeded_computation_is_bit_identical_under_threads():
    alone = {(name, i): f(i) for name, f in COMPUTATIONS.items() for i in range(VARIANTS)}
    stop = threading.Event()

    def stir_global_rng():  # another session using the global RNG the whole time
        k = 0
        while not stop.is_set():
            torch.manual_seed(k)
            torch.rand(64)
            k += 1

    def session(t: int) -> list[tuple[str, int, bool]]:
        out = []
        for r in range(RUNS):
            for name, f in COMPUTATIONS.items():
                i = (t + r) % VARIANTS
                out.append((name, i, f(i) == alone[(name, i)]))
        return out

    stirrer = threading.Thread(target=stir_global_rng)
    stirrer.start()
    try:
        with ThreadPoolExecutor(THREADS) as pool:
            results = [x for chunk in pool.map(session, range(THREADS)) for x in chunk]
    finally:
        stop.set()
        stirrer.join()
    assert len(results) == THREADS * RUNS * len(COMPUTATIONS)
    differing = [(name, i) for name, i, same in results if not same]
    assert differing == [], f"{len(differing)} of {len(results)} results differ from the sequential run"


def test_global_rng_is_neither_read_nor_changed():
    state = torch.random.get_rng_state()
    first = toy(0)
    assert torch.equal(torch.random.get_rng_state(), state)
    torch.manual_seed(12345)
    assert toy(0) == first
    lab_dropout(1)
    lessons.half_module_runs(16, 4, 5, seed=2)
    assert torch.equal(torch.random.get_rng_state(), torch.manual_seed(12345).get_state())


def test_encoder_weights_equal_torch_default_init_after_manual_seed():
    """The reference: torch's own reset_parameters, drawing from the global RNG seeded with config.seed."""
    config = CONFIGS[2]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        reference = nn.ModuleList(EncoderLayer(config) for _ in range(config.n_layers))
    ours = Encoder(config).layers
    names = [n for n, _ in reference.named_parameters()]
    assert names == [n for n, _ in ours.named_parameters()] and len(names) == 32
    for (name, a), b in zip(reference.named_parameters(), ours.parameters()):
        assert torch.equal(a, b), name


def test_dropout_equals_nn_dropout_after_manual_seed():
    x = torch.rand(2, 3, 5, 5)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(4)
        reference = nn.Dropout(0.3).train()(x)
    ours = dropout(x, 0.3, torch.Generator().manual_seed(4))
    assert torch.equal(ours, reference)
    assert int((ours == 0).sum()) == int((reference == 0).sum()) > 0
    assert torch.equal(dropout(x, 0.0), x) and torch.equal(dropout(x, 1.0), torch.zeros_like(x))


def test_lab_dropout_equals_the_module_under_manual_seed():
    """``attention_dropout`` gives what the module's own nn.Dropout gave after torch.manual_seed(dropout_seed)."""
    x = torch.from_numpy(run_toy(SENTENCES, DROPOUT_CONFIG).stages["embeddings"].copy())
    mha = Encoder(DROPOUT_CONFIG).layers[0].attention.eval()
    with torch.no_grad():
        _, weights = mha(x, x, x)  # eval mode: no draw
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(2)
        reference = nn.Dropout(DROPOUT_CONFIG.dropout).train()(weights)  # the forward pass's first draw
    ours = lessons.attention_dropout(x, None, DROPOUT_CONFIG, training=True, dropout_seed=2)
    assert torch.equal(ours["weights"], weights)
    assert torch.equal(ours["dropped_weights"], reference)
    dropped = ours["dropped_weights"]
    assert 0 < int((dropped == 0).sum()) < dropped.numel()
    torch.testing.assert_close(dropped[dropped > 0], weights[dropped > 0] / 0.7, rtol=1e-6, atol=0)
