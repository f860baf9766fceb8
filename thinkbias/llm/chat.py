"""Render a chat with a model's own Jinja chat template, then append a raw assistant prefill.

The template comes from the GGUF metadata (``tokenizer.chat_template``), the HF tokenizer config, or
the registry's ``chat_template`` override. It is rendered with ``add_generation_prompt=True`` in a
sandboxed Jinja environment set up like Hugging Face's (trim_blocks, lstrip_blocks, ``tojson``,
``raise_exception``, ``strftime_now``), so the prompt is the one the model was trained on.

Templates that print today's date (``strftime_now``) get a fixed date, ``TEMPLATE_DATE``, so a
rendered prompt, and with it every cache key and result, does not change from one day to the next.
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import lru_cache
from typing import Sequence

TEMPLATE_DATE = datetime(2025, 1, 1)


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _raise(message: str):
    import jinja2

    raise jinja2.TemplateError(message)


@lru_cache(maxsize=16)
def _compile(template: str):
    # jinja2 is imported here so that API-only environments (no templates) need not install it
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class _GenerationTag(jinja2.ext.Extension):
        """Pass-through for HF's ``{% generation %}`` block (used by some training templates)."""

        tags = {"generation"}

        def parse(self, parser):  # noqa: D102
            parser.stream.skip(1)
            return parser.parse_statements(("name:endgeneration",), drop_needle=True)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[_GenerationTag, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = _tojson
    return env.from_string(template)


def render_chat(
    template: str,
    messages: Sequence[tuple[str, str]],
    prefill: str = "",
    bos_token: str = "",
    eos_token: str = "",
    think_open: str = "",
) -> str:
    """The prompt text the model sees: the template applied to ``messages`` with the generation
    prompt, followed by ``prefill``.

    When the template itself already ends its generation prompt with ``think_open`` (e.g. QwQ,
    R1 distills) and the prefill starts with it too, the tag is not repeated.
    """
    rendered = _compile(template).render(
        messages=[{"role": r, "content": c} for r, c in messages],
        add_generation_prompt=True,
        bos_token=bos_token,
        eos_token=eos_token,
        raise_exception=_raise,
        strftime_now=lambda f: TEMPLATE_DATE.strftime(f),
    )
    tag = think_open.strip()
    if tag and prefill.lstrip().startswith(tag) and rendered.rstrip().endswith(tag):
        rest = prefill.lstrip()[len(tag) :]
        if rendered.endswith("\n") and rest.startswith("\n"):
            rest = rest[1:]
        prefill = rest
    return rendered + prefill


def prompt_opens_thinking(rendered: str, think_open: str, think_close: str) -> bool:
    """True when the rendered prompt (with prefill) leaves a think block open at its end."""
    tag, close = think_open.strip(), think_close.strip()
    if not tag:
        return False
    i = rendered.rfind(tag)
    return i >= 0 and rendered.find(close, i) < 0
