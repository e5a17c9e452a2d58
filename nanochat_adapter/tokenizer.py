"""nanochat's tokenizer: a pickled tiktoken ``Encoding`` read safely, plus chat rendering.

``tokenizer.pkl`` is a plain ``pickle.dump`` of a ``tiktoken.Encoding``. Unpickling runs
arbitrary code in general, so :func:`load_encoding` uses an unpickler that can build only
that one class, checks the state it receives field by field, and only then constructs the
``Encoding`` itself.
"""

from __future__ import annotations

import io
import logging
import pickle
from pathlib import Path

from nanoknow_common.errors import NanoKnowInputError

log = logging.getLogger(__name__)

BOS = "<|bos|>"
USER_START, USER_END = "<|user_start|>", "<|user_end|>"
ASSISTANT_START, ASSISTANT_END = "<|assistant_start|>", "<|assistant_end|>"
PYTHON_START, PYTHON_END = "<|python_start|>", "<|python_end|>"
OUTPUT_START, OUTPUT_END = "<|output_start|>", "<|output_end|>"
#: nanochat's special tokens, in the order nanochat appends them after the BPE ranks.
SPECIAL_TOKENS = (BOS, USER_START, USER_END, ASSISTANT_START, ASSISTANT_END,
                  PYTHON_START, PYTHON_END, OUTPUT_START, OUTPUT_END)
#: The ones chat rendering needs; a tokenizer without them cannot serve nanochat.
REQUIRED_SPECIAL_TOKENS = (BOS, USER_START, USER_END, ASSISTANT_START, ASSISTANT_END)

_ENCODING_FIELDS = {"name", "pat_str", "mergeable_ranks", "special_tokens"}


class _EncodingState:
    """Stand-in for ``tiktoken.core.Encoding`` while unpickling: it only keeps the state."""

    def __setstate__(self, state):
        self.state = state


class _EncodingOnlyUnpickler(pickle.Unpickler):
    def __init__(self, file, path: Path):
        super().__init__(file)
        self._path = path

    def find_class(self, module, name):
        if (module, name) == ("tiktoken.core", "Encoding"):
            return _EncodingState
        raise NanoKnowInputError(
            f"refusing to unpickle {module}.{name}: a nanochat tokenizer.pkl may only hold a "
            "tiktoken.core.Encoding", file=self._path)


def _check_encoding_state(state, path: Path) -> dict:
    if not isinstance(state, dict) or set(state) != _ENCODING_FIELDS:
        got = sorted(state) if isinstance(state, dict) else type(state).__name__
        raise NanoKnowInputError(f"tiktoken Encoding state must have the fields "
                                 f"{sorted(_ENCODING_FIELDS)}, got {got}", file=path)
    if not isinstance(state["name"], str) or not isinstance(state["pat_str"], str):
        raise NanoKnowInputError("Encoding name and pat_str must be strings", file=path)
    ranks, specials = state["mergeable_ranks"], state["special_tokens"]
    if not isinstance(ranks, dict) or not all(
            type(k) is bytes and type(v) is int for k, v in ranks.items()):
        raise NanoKnowInputError("mergeable_ranks must map bytes to int", file=path)
    if not isinstance(specials, dict) or not all(
            type(k) is str and type(v) is int for k, v in specials.items()):
        raise NanoKnowInputError("special_tokens must map str to int", file=path)
    return state


def load_encoding(path: str | Path):
    """Read a nanochat ``tokenizer.pkl`` into a ``tiktoken.Encoding`` (restricted unpickling)."""
    import tiktoken

    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise NanoKnowInputError(f"cannot read tokenizer: {err.strerror}", file=path) from err
    try:
        obj = _EncodingOnlyUnpickler(io.BytesIO(data), path).load()
    except NanoKnowInputError:
        raise
    except Exception as err:  # truncated or not a pickle at all
        raise NanoKnowInputError(f"not a readable pickle ({type(err).__name__}: {err})",
                                 file=path) from err
    if not isinstance(obj, _EncodingState) or not hasattr(obj, "state"):
        raise NanoKnowInputError(f"expected a pickled tiktoken Encoding, got {type(obj).__name__}",
                                 file=path)
    state = _check_encoding_state(obj.state, path)
    return tiktoken.Encoding(**state)


class NanoChatTokenizer:
    """A tiktoken ``Encoding`` with nanochat's special tokens and conversation rendering."""

    def __init__(self, encoding, source: str = ""):
        self.encoding = encoding
        self.source = source
        specials = {name: encoding.encode_single_token(name) for name in encoding.special_tokens_set}
        missing = [t for t in REQUIRED_SPECIAL_TOKENS if t not in specials]
        if missing:
            raise NanoKnowInputError(f"tokenizer lacks nanochat special tokens {missing}",
                                     file=source or None)
        self.special_ids = dict(specials)
        self.bos_id = specials[BOS]
        self.assistant_end_id = specials[ASSISTANT_END]

    @classmethod
    def from_file(cls, path: str | Path) -> "NanoChatTokenizer":
        """Load ``tokenizer.pkl`` (see :func:`load_encoding`)."""
        return cls(load_encoding(path), source=str(path))

    @property
    def vocab_size(self) -> int:
        return self.encoding.n_vocab

    def encode(self, text: str, *, allow_special: bool = True) -> list[int]:
        """Token ids of ``text``; nanochat's special-token strings become their ids if allowed."""
        if allow_special:
            return self.encoding.encode(text, allowed_special="all", disallowed_special=())
        return self.encoding.encode_ordinary(text)

    def decode(self, ids) -> str:
        return self.encoding.decode(list(ids))

    def render_chat(self, messages: list[dict], add_generation_prompt: bool = True) -> str:
        """Render chat messages the way nanochat's ``render_conversation`` does, as text.

        ``<|bos|>`` then ``<|user_start|>…<|user_end|>`` / ``<|assistant_start|>…<|assistant_end|>``
        per turn. A leading system message is merged into the first user message with a blank
        line (as nanochat does); consecutive messages of one role are merged the same way.
        With ``add_generation_prompt`` a final ``<|assistant_start|>`` primes the reply
        (nanochat's ``render_for_completion``). Encoding the result with
        :meth:`encode` gives nanochat's token ids.
        """
        turns: list[list] = []  # [role, content]
        pending_system = []
        for message in messages:
            role, content = message["role"], message["content"]
            if role == "system":
                pending_system.append(content)
                continue
            if role not in ("user", "assistant"):
                raise NanoKnowInputError(f"unknown chat role {role!r}")
            if role == "user" and pending_system:
                content = "\n\n".join(pending_system + [content])
                pending_system = []
            if turns and turns[-1][0] == role:
                turns[-1][1] += "\n\n" + content
            else:
                turns.append([role, content])
        if pending_system:  # a system message with no user message after it
            turns.insert(0, ["user", "\n\n".join(pending_system)])
        if turns and turns[0][0] != "user":
            log.warning("chat starts with an assistant turn; nanochat expects user first")
        parts = [BOS]
        for role, content in turns:
            if role == "user":
                parts += [USER_START, content, USER_END]
            else:
                parts += [ASSISTANT_START, content, ASSISTANT_END]
        if add_generation_prompt:
            parts.append(ASSISTANT_START)
        return "".join(parts)


#: A Jinja chat template equivalent to :meth:`NanoChatTokenizer.render_chat` for the usual
#: shapes (optional system message, then alternating user/assistant), for transformers.
CHAT_TEMPLATE = (
    "{{ '<|bos|>' }}"
    "{% set ns = namespace(system='') %}"
    "{% for m in messages %}"
    "{% if m['role'] == 'system' %}{% set ns.system = m['content'] + '\n\n' %}"
    "{% elif m['role'] == 'user' %}{{ '<|user_start|>' + ns.system + m['content'] + '<|user_end|>' }}"
    "{% set ns.system = '' %}"
    "{% else %}{{ '<|assistant_start|>' + m['content'] + '<|assistant_end|>' }}{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant_start|>' }}{% endif %}"
)
