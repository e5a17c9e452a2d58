"""nanochat lm-eval model arguments: bad values are clear errors naming the field; devices and
the context budget (truncation warning / refusal) on a real tiny checkpoint, in process."""

from __future__ import annotations

import logging

import pytest
import torch
from lm_eval.api.instance import Instance

from nanochat_adapter.lm_eval_model import NanoChatLM, choose_device
from nanochat_fixtures import tiny_checkpoints  # noqa: F401
from nanoknow_common.errors import NanoKnowInputError

NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only behaviour")


@pytest.mark.parametrize("args, field, reason", [
    ({"step": "abc"}, "model_args step", "must be a whole number, got 'abc'"),
    ({"step": 1.5}, "model_args step", "must be a whole number, got 1.5"),
    ({"max_gen_toks": "many"}, "model_args max_gen_toks", "must be a whole number"),
    ({"batch_size": "big"}, "model_args batch_size", "must be a whole number, auto or auto:N"),
    ({"batch_size": 0}, "model_args batch_size", "must be at least 1, got 0"),
    ({"truncation": "right"}, "model_args truncation", "must be one of left, error, got 'right'"),
    ({"softcap": "x"}, "model_args softcap", "must be a number"),
])
def test_bad_model_args_name_the_field(tiny_checkpoints, args, field, reason):
    with pytest.raises(NanoKnowInputError) as err:
        NanoChatLM(pretrained=str(tiny_checkpoints["2025-10"]), device="cpu", **args)
    assert err.value.field == field and reason in str(err.value)


def test_numeric_model_args_given_as_text_are_accepted(tiny_checkpoints):
    lm = NanoChatLM(pretrained=str(tiny_checkpoints["2025-10"]), device="cpu", step="1",
                    max_gen_toks="8", batch_size="auto:2", max_length="48")
    assert (lm.max_gen_toks, lm.batch_size_auto, lm.max_length) == (8, True, 48)


@NO_CUDA
def test_lm_eval_default_device_falls_back_but_a_named_cuda_device_fails(caplog):
    with caplog.at_level(logging.INFO, logger="lm_eval.models.nanochat"):
        assert choose_device("cuda:0", argv=["--model", "nanochat"]) == "cpu"
    assert "CUDA is not available; using cpu instead of lm-eval's default device cuda:0" in caplog.text
    assert choose_device(None) == "cpu"
    for device, argv in (("cuda", []), ("cuda:0", ["--device", "cuda:0"]), ("cuda:0", ["--device=cuda:0"]),
                         ("cuda:1", [])):
        with pytest.raises(NanoKnowInputError, match="requested but CUDA is not available") as err:
            choose_device(device, argv=argv)
        assert err.value.field == "device"
    with pytest.raises(NanoKnowInputError, match="unknown device 'gpu0'"):
        choose_device("gpu0", argv=[])


def _generate(lm, prompts, max_gen_toks=4):
    return lm.generate_until([Instance("generate_until", {}, (p, {"until": [], "max_gen_toks": max_gen_toks}), i)
                              for i, p in enumerate(prompts)], disable_tqdm=True)


def test_truncated_prompts_are_counted_in_one_warning_or_refused(tiny_checkpoints, caplog):
    folder = str(tiny_checkpoints["2025-10"])
    lm = NanoChatLM(pretrained=folder, device="cpu", max_length=24, batch_size=4)
    tok = lm.nanochat_tokenizer
    prompts = ["Who?", "The capital of France is Paris. Who wrote the novel? " * 2,
               "What is the name of the largest planet in the solar system?", "When?"]
    lengths = [1 + len(tok.encode(p)) for p in prompts]
    budget = 24 - 4
    over = [n for n in lengths if n > budget]
    assert len(over) == 2  # the test means something: two prompts are too long, two fit
    with caplog.at_level(logging.WARNING, logger="lm_eval.models.nanochat"):
        left = _generate(lm, prompts)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert (f"2 of 4 generate_until prompts were longer than the context budget and lost their beginning "
            f"(left truncation): longest prompt {max(over)} tokens, budget {budget} tokens "
            f"(max_length 24 - max_gen_toks 4)") in warnings[0]
    # left truncation keeps the prompt's end: same output as giving the last `budget` tokens
    kept = tok.decode(([tok.bos_id] + tok.encode(prompts[1]))[-budget:])
    assert left[1] == _generate(lm, [kept])[0]

    strict = NanoChatLM(pretrained=folder, device="cpu", max_length=24, truncation="error")
    with pytest.raises(NanoKnowInputError) as err:
        _generate(strict, prompts)
    assert err.value.field == "model_args truncation"
    assert (f"2 of 4 generate_until prompts do not fit the context: the longest has {max(over)} tokens, "
            f"the budget is {budget} (max_length 24 - max_gen_toks 4)") in str(err.value)
    assert _generate(strict, [prompts[0], prompts[3]])  # prompts that fit are served


def test_loglikelihood_over_the_context_is_warned_or_refused(tiny_checkpoints, caplog):
    folder = str(tiny_checkpoints["2025-10"])
    context = "The capital of France is Paris. Who wrote the novel? " * 2
    requests = [Instance("loglikelihood", {}, (context, " Jupiter"), 0), Instance("loglikelihood", {}, ("A", " b"), 1)]
    lm = NanoChatLM(pretrained=folder, device="cpu", max_length=16)
    with caplog.at_level(logging.WARNING, logger="lm_eval.models.nanochat"):
        lm.loglikelihood(requests, disable_tqdm=True)
    assert "1 of 2 loglikelihood prompts were longer than the context budget" in caplog.text
    assert "budget 16 tokens (max_length 16)" in caplog.text
    strict = NanoChatLM(pretrained=folder, device="cpu", max_length=16, truncation="error")
    with pytest.raises(NanoKnowInputError, match="1 of 2 loglikelihood prompts do not fit the context"):
        strict.loglikelihood(requests, disable_tqdm=True)
