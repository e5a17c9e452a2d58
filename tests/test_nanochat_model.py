"""nanochat model of every generation: padding invariance, KV cache vs recompute, batched vs
single greedy generation, lm-eval scoring vs a direct log-softmax. Tiny random checkpoints
written in nanochat's own format (tests/nanochat_fixtures.py), loaded through the real loader.
"""

from __future__ import annotations

import random

import pytest
import torch
from lm_eval.api.instance import Instance

from nanochat_adapter.decoding import (PREFILL_ROWS, generate_continuous, generate_greedy, generate_naive,
                                         left_pad)
from nanochat_fixtures import ALL_GENERATIONS, loaded_checkpoints, tiny_checkpoints  # noqa: F401

#: fp32 on CPU: batched (padded, masked) vs one-by-one logits differ only by float reordering.
LOGIT_ATOL = 1e-4


def _prompts(tokenizer, seed: int, lengths=(1, 5, 37, 90, 140)) -> list[list[int]]:
    rng = random.Random(seed)
    return [[tokenizer.bos_id] + [rng.randrange(256) for _ in range(n - 1)] for n in lengths]


@pytest.mark.parametrize("generation", ALL_GENERATIONS)
def test_detected_generation_and_window_sizes(loaded_checkpoints, generation):
    loaded = loaded_checkpoints[generation]
    assert loaded.generation.name == generation
    if generation != "2025-10":
        # the windows must bind on the test prompts (up to 140 tokens) for the test to mean something
        assert min(w for w in loaded.model.window_sizes) < 140


@pytest.mark.parametrize("generation", ALL_GENERATIONS)
def test_batched_logits_equal_one_by_one(loaded_checkpoints, generation):
    model, tok = loaded_checkpoints[generation].model, loaded_checkpoints[generation].tokenizer
    prompts = _prompts(tok, seed=2)
    ids, valid = left_pad(prompts)
    with torch.inference_mode():
        batched = model(ids, valid=valid)
        width = ids.shape[1]
        for row, prompt in enumerate(prompts):
            single = model(torch.tensor([prompt]))[0]
            torch.testing.assert_close(batched[row, width - len(prompt):], single, atol=LOGIT_ATOL, rtol=0)


@pytest.mark.parametrize("generation", ALL_GENERATIONS)
def test_kv_cache_generation_equals_full_recompute(loaded_checkpoints, generation):
    model, tok = loaded_checkpoints[generation].model, loaded_checkpoints[generation].tokenizer
    seen = set()
    for prompt in _prompts(tok, seed=3, lengths=(1, 20, 130)):
        cached = generate_greedy(model, [prompt], 24)[0]
        naive = generate_naive(model, prompt, 24)
        assert cached == naive
        seen.update(cached)
    assert len(seen) > 2  # the random model does not emit one token whatever the prompt


@pytest.mark.parametrize("generation", ALL_GENERATIONS)
def test_batched_generation_equals_unbatched(loaded_checkpoints, generation):
    model, tok = loaded_checkpoints[generation].model, loaded_checkpoints[generation].tokenizer
    # more prompts than PREFILL_ROWS: the batch is prefilled in parts whose caches are joined
    prompts = _prompts(tok, seed=4, lengths=(1, 5, 37, 90, 140, 12, 64, 3, 100, 7, 50))
    assert len(prompts) > PREFILL_ROWS
    batched = generate_greedy(model, prompts, 24)
    assert batched == [generate_greedy(model, [p], 24)[0] for p in prompts]


def test_generation_stops_at_stop_token_and_drops_finished_rows(loaded_checkpoints):
    model, tok = loaded_checkpoints["2026-03-14"].model, loaded_checkpoints["2026-03-14"].tokenizer
    prompts = _prompts(tok, seed=5, lengths=(3, 40, 80))
    free = generate_greedy(model, prompts, 20)
    stop_token = free[1][5]  # make row 1 stop at its 6th token
    stopped = generate_greedy(model, prompts, 20, stop_token_ids=[stop_token])
    first = free[1].index(stop_token)
    assert stopped[1] == free[1][:first + 1]
    for row in (0, 2):  # other rows are unaffected unless they emit that token themselves
        cut = free[row].index(stop_token) + 1 if stop_token in free[row] else 20
        assert stopped[row] == free[row][:cut]


@pytest.fixture(scope="module")
def nanochat_lm(tiny_checkpoints):
    from nanochat_adapter.lm_eval_model import NanoChatLM

    return NanoChatLM(pretrained=str(tiny_checkpoints["2026-03-14"]), device="cpu", batch_size=3)


def _direct_logprob(model, context_ids, continuation_ids) -> tuple[float, bool]:
    ids = torch.tensor([context_ids + continuation_ids])
    with torch.inference_mode():
        logprobs = torch.log_softmax(model(ids)[0].double(), dim=-1)
    positions = range(len(context_ids) - 1, len(context_ids) + len(continuation_ids) - 1)
    total = sum(float(logprobs[p, t]) for p, t in zip(positions, continuation_ids))
    greedy = all(int(logprobs[p].argmax()) == t for p, t in zip(positions, continuation_ids))
    return total, greedy


def test_loglikelihood_equals_direct_log_softmax(nanochat_lm):
    tok = nanochat_lm.nanochat_tokenizer
    pairs = [("The capital of France is", " Paris."), ("Question: who sang the song?\nAnswer:", " the band"),
             ("When", " was the first world war? It started in 1914"), ("", "Jupiter is large")]
    requests = [Instance("loglikelihood", {}, pair, i) for i, pair in enumerate(pairs)]
    results = nanochat_lm.loglikelihood(requests, disable_tqdm=True)
    for (context, continuation), (logprob, greedy) in zip(pairs, results):
        if context:
            whole = [tok.bos_id] + tok.encode(context + continuation)
            n_context = 1 + len(tok.encode(context))
        else:
            whole, n_context = [tok.bos_id] + tok.encode(continuation), 1
        expected, expected_greedy = _direct_logprob(nanochat_lm.model, whole[:n_context], whole[n_context:])
        assert logprob == pytest.approx(expected, abs=1e-3)
        assert greedy == expected_greedy
        assert logprob < 0


def test_loglikelihood_rolling_equals_direct_sum(nanochat_lm):
    text = "Jupiter is the largest planet. The capital of France is Paris."
    (rolling,) = nanochat_lm.loglikelihood_rolling([Instance("loglikelihood_rolling", {}, (text,), 0)],
                                                   disable_tqdm=True)
    tokens = nanochat_lm.nanochat_tokenizer.encode(text)
    expected, _ = _direct_logprob(nanochat_lm.model, [nanochat_lm.prefix_token_id], tokens)
    assert rolling == pytest.approx(expected, abs=1e-3)


def test_generate_until_cuts_at_stop_string(nanochat_lm):
    context = "Question: who sang the song?\nAnswer:"
    free = nanochat_lm.generate_until([Instance("generate_until", {}, (context, {"until": [], "max_gen_toks": 16}), 0)],
                                      disable_tqdm=True)[0]
    assert len(free) > 4
    stop = free[3:5]
    cut = nanochat_lm.generate_until([Instance("generate_until", {}, (context, {"until": [stop], "max_gen_toks": 16}), 0)],
                                     disable_tqdm=True)[0]
    assert cut == free.split(stop)[0]


def test_chat_template_renders_nanochat_conversation_tokens(nanochat_lm):
    tok = nanochat_lm.nanochat_tokenizer
    history = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Who sang?"},
               {"role": "assistant", "content": "The band."}, {"role": "user", "content": "When?"}]
    text = nanochat_lm.apply_chat_template(history, add_generation_prompt=True)
    s = tok.special_ids
    # nanochat's render_for_completion: system merged into first user turn with a blank line
    expected = ([s["<|bos|>"], s["<|user_start|>"]] + tok.encode("Be brief.\n\nWho sang?", allow_special=False)
                + [s["<|user_end|>"], s["<|assistant_start|>"]] + tok.encode("The band.", allow_special=False)
                + [s["<|assistant_end|>"], s["<|user_start|>"]] + tok.encode("When?", allow_special=False)
                + [s["<|user_end|>"], s["<|assistant_start|>"]])
    assert nanochat_lm.tok_encode(text) == expected
    assert nanochat_lm.chat_template(True) and nanochat_lm.chat_template(False) is None
    assert nanochat_lm.tokenizer_name.startswith("nanochat__")


@pytest.mark.parametrize("generation", ALL_GENERATIONS)
def test_continuous_batching_equals_one_by_one(loaded_checkpoints, generation):
    model, tok = loaded_checkpoints[generation].model, loaded_checkpoints[generation].tokenizer
    prompts = _prompts(tok, seed=6, lengths=(1, 5, 37, 90, 140, 12, 64, 3, 100, 7, 50))
    rng = random.Random(7)
    limits = [rng.randint(1, 20) for _ in prompts]  # rows end at different steps: others join
    single = [generate_greedy(model, [p], n)[0] for p, n in zip(prompts, limits)]
    static = generate_greedy(model, prompts, max(limits), stop=lambda row, tokens: len(tokens) >= limits[row])
    assert static == single  # static batch (one padded batch, lock-step) vs one by one
    stop_token = single[4][2]
    single_stopped = [generate_greedy(model, [p], n, stop_token_ids=[stop_token])[0] for p, n in zip(prompts, limits)]
    longest_first = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]))
    finished = []
    for batch_size, order, capacity in ((3, longest_first, None), (4, range(len(prompts)), None),
                                        (16, longest_first, None), (3, range(len(prompts)), 8)):
        order = list(order)
        # given order (shorter prompts first) makes the cache shift right; capacity 8 makes it drop/grow
        out = generate_continuous(model, [prompts[i] for i in order], [limits[i] for i in order],
                                  batch_size=batch_size, capacity=capacity,
                                  on_finish=lambda k, tokens: finished.append(k))
        assert [out[order.index(i)] for i in range(len(prompts))] == single, (batch_size, capacity)
        assert sorted(finished) == list(range(len(prompts)))
        finished.clear()
    out = generate_continuous(model, prompts, limits, batch_size=3, stop_token_ids=[stop_token])
    assert out == single_stopped and out[4] == single[4][:single[4].index(stop_token) + 1]


def test_greedy_forward_equals_argmax_of_softcapped_logits(loaded_checkpoints):
    model, tok = loaded_checkpoints["2026-03-14"].model, loaded_checkpoints["2026-03-14"].tokenizer
    ids, valid = left_pad(_prompts(tok, seed=8, lengths=(3, 30, 70)))
    with torch.inference_mode():
        assert torch.equal(model(ids, valid=valid, greedy=True), model(ids, valid=valid).argmax(-1))
    # saturated softcap: raw logits far above the cap all become 15.0, the first of them wins
    raw = torch.tensor([[1.0, 400.0, 2.0, 300.0, 500.0] + [0.5] * 20,
                        [3.0, 2.0, 9.0, 1.0, 8.0] + [0.5] * 20])
    expected = (model.softcap * torch.tanh(raw / model.softcap)).argmax(-1)
    assert model._softcapped_argmax(raw, k=2).tolist() == expected.tolist() == [1, 2]


def _reference_answer(lm, context: str, until: list[str], max_new: int) -> str:
    """Today's semantics, one request alone with no cache: stop token or an until string in the text."""
    decode = lm.nanochat_tokenizer.decode
    prompt = lm.tok_encode(context)[-(lm.max_length - max_new):]
    tokens = generate_naive(lm.model, prompt, max_new, stop_token_ids=lm.stop_token_ids,
                            stop=lambda out: any(u in decode(out) for u in until))
    if tokens and tokens[-1] in lm.stop_token_ids:
        tokens = tokens[:-1]
    text = decode(tokens)
    for u in until:
        text = text.split(u)[0]
    return text


def _mixed_requests(lm, n: int = 10):
    rng = random.Random(9)
    words = "the capital of France is Paris who wrote novel question answer planet 1914 band sang".split()
    contexts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 40))) for _ in range(n)]
    free = lm.generate_until([Instance("generate_until", {}, (c, {"until": [], "max_gen_toks": 12}), i)
                              for i, c in enumerate(contexts)], disable_tqdm=True)
    # stop strings cut from the free answers: several tokens long, met mid-generation
    settings = [{"until": [free[i][3:9]] if i % 2 and len(free[i]) > 9 else ["Question:"],
                 "max_gen_toks": rng.randint(2, 12)} for i in range(n)]
    return [Instance("generate_until", {}, (c, g), i) for i, (c, g) in enumerate(zip(contexts, settings))]


def test_generate_until_batched_and_continuous_equals_todays_one_by_one(tiny_checkpoints):
    from nanochat_adapter.lm_eval_model import NanoChatLM

    folder = str(tiny_checkpoints["2026-03-14"])
    lm = NanoChatLM(pretrained=folder, device="cpu", batch_size=3)
    requests = _mixed_requests(lm)
    expected = [_reference_answer(lm, c, g["until"], g["max_gen_toks"]) for c, g in (r.args for r in requests)]
    uncut = [_reference_answer(lm, c, [], g["max_gen_toks"]) for c, g in (r.args for r in requests)]
    assert sum(e != u for e, u in zip(expected, uncut)) >= 2  # stop strings end some answers early
    assert lm.generate_until(requests, disable_tqdm=True) == expected
    auto = NanoChatLM(pretrained=folder, device="cpu", batch_size="auto")
    assert auto.generate_until(requests, disable_tqdm=True) == expected


def test_out_of_memory_halves_the_batch_and_keeps_finished_rows(tiny_checkpoints, monkeypatch, caplog):
    # A GPU is unreachable here: the out-of-memory error CUDA raises is injected once, after three
    # requests have finished, into the real continuous-batching call.
    import logging

    import nanochat_adapter.lm_eval_model as lm_module
    from nanochat_adapter.lm_eval_model import NanoChatLM

    lm = NanoChatLM(pretrained=str(tiny_checkpoints["2025-10"]), device="cpu", batch_size=8)
    requests = _mixed_requests(lm)
    expected = lm.generate_until(requests, disable_tqdm=True)
    real = lm_module.generate_continuous
    calls = []

    def failing_once(model, prompts, limits, *, batch_size, on_finish, **kwargs):
        calls.append((len(prompts), batch_size))
        if len(calls) > 1:
            return real(model, prompts, limits, batch_size=batch_size, on_finish=on_finish, **kwargs)
        seen = []

        def finish_then_fail(k, tokens):
            on_finish(k, tokens)
            seen.append(k)
            if len(seen) == 3:
                raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

        return real(model, prompts, limits, batch_size=batch_size, on_finish=finish_then_fail, **kwargs)

    monkeypatch.setattr(lm_module, "generate_continuous", failing_once)
    with caplog.at_level(logging.WARNING, logger="lm_eval.models.nanochat"):
        assert lm.generate_until(requests, disable_tqdm=True) == expected
    assert calls == [(10, 8), (7, 4)]  # the three finished requests are not run again
    assert "out of memory, batch size -> 4" in caplog.text
