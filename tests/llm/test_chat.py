from thinkbias.llm.chat import prompt_opens_thinking, render_chat

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
QWQ_LIKE = CHATML.replace("<|im_start|>assistant\n{% endif %}", "<|im_start|>assistant\n<think>\n{% endif %}")


def test_render_with_prefill():
    out = render_chat(CHATML, [("user", "Hi?")], prefill="<think>\n")
    assert out == "<|im_start|>user\nHi?<|im_end|>\n<|im_start|>assistant\n<think>\n"


def test_template_that_opens_thinking_is_not_doubled():
    think = render_chat(QWQ_LIKE, [("user", "Q")], prefill="<think>\n", think_open="<think>\n")
    assert think.endswith("assistant\n<think>\n") and think.count("<think>") == 1
    nothink = render_chat(QWQ_LIKE, [("user", "Q")], prefill="<think>\n\n</think>\n\n", think_open="<think>\n")
    assert nothink.endswith("assistant\n<think>\n\n</think>\n\n") and nothink.count("<think>") == 1


def test_bos_and_raise_exception_available():
    tpl = "{{ bos_token }}{% if messages[0]['role'] == 'bad' %}{{ raise_exception('no') }}{% endif %}x"
    assert render_chat(tpl, [("user", "a")], bos_token="<s>") == "<s>x"
    try:
        render_chat(tpl, [("bad", "a")])
    except Exception as err:  # jinja2.TemplateError
        assert "no" in str(err)
    else:
        raise AssertionError("raise_exception did not raise")


def test_prompt_opens_thinking():
    assert prompt_opens_thinking("...assistant\n<think>\n", "<think>\n", "</think>")
    assert not prompt_opens_thinking("...assistant\n<think>\n\n</think>\n\n", "<think>\n", "</think>")
    assert not prompt_opens_thinking("...assistant\n", "<think>\n", "</think>")


def test_template_date_is_fixed():
    assert render_chat("{{ strftime_now('%Y-%m-%d') }}", [("user", "a")]) == "2025-01-01"
