"""The embedded model reasoning in its own tags: ``chat_template=``, ``reasoning_tags`` and
``clone(reasoning_budget=N)``, driven through the real default model under templates with ``<think>``.

Each model test asserts what the code guarantees whatever the model writes: the thought is at
most ``N`` tokens and holds no close tag, the reply after it keeps its grammar (a valid route,
whole within its cap), the model's context holds the thought between the tags right before the
reply, a stream's pieces make up the completion, and both decoders do it alike.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.model import TEST_SEED, TEST_TEMPERATURE, TEST_THREADS
from support.paths import ROOT
from support.think_templates import (
    ASKED,
    OPENS_REASONING,
    STRIPS_REASONING,
    THINK,
    WEATHER,
    reasoned_then_routed,
)

from toolrouting import (
    AsyncEmbeddedLlama,
    Completion,
    EmbeddedLlama,
    ReasoningTags,
    Settings,
    TextDelta,
    parse_route,
    route_schema,
)
from toolrouting._backends.reasoning_tags import reasoning_tags

#: Far above the longest route of TOOLS (a name and a city of at most 24 characters).
CAP = 160


@pytest.mark.parametrize(
    ("template", "found"),
    [
        ("{{ '<think>' }}{{ messages[0]['content'] }}{{ '</think>' }}", THINK),
        ("{% for m in messages %}{{ m['content'] }}{% endfor %}", None),
        ("{{ '<think>' }} never closed", None),
    ],
)
def test_a_template_has_reasoning_tags_when_it_writes_both(
    template: str, found: ReasoningTags | None
) -> None:
    assert reasoning_tags(template) == found


@pytest.fixture(scope="module", params=["forced", "grammar"])
def reasoning_models(request: pytest.FixtureRequest) -> Iterator[dict[str, EmbeddedLlama]]:
    settings = Settings(temperature=TEST_TEMPERATURE, seed=TEST_SEED, max_tokens=CAP)
    models = {
        name: EmbeddedLlama(
            settings=settings,
            n_threads=TEST_THREADS,
            forced_tokens=request.param == "forced",
            chat_template=template,
        )
        for name, template in (("opens", OPENS_REASONING), ("strips", STRIPS_REASONING))
    }
    yield models
    for model in models.values():
        model.close()


def context_text(backend: EmbeddedLlama) -> str:
    """What the model's context holds, as text: the prompt and the reply evaluated after it."""
    llama: Any = backend._model.llama
    return bytes(llama.detokenize(list(llama.input_ids[: llama.n_tokens]), special=True)).decode(
        "utf-8", errors="replace"
    )


@pytest.mark.model
@pytest.mark.parametrize("layout", ["opens", "strips"])
@pytest.mark.parametrize("budget", [1, 24])
def test_the_thought_is_within_its_budget_and_the_route_after_it_keeps_its_grammar(
    reasoning_models: dict[str, EmbeddedLlama], layout: str, budget: int
) -> None:
    model = reasoning_models[layout]
    assert model.reasoning_tags == THINK
    settings = model.settings.clone(json_schema=route_schema(WEATHER))
    reasoned = model.clone(settings=settings, reasoning_budget=budget)
    reply = reasoned.complete(ASKED)
    reasoned_then_routed(reply, budget, context_text(reasoned))
    assert reply.raw is not None
    # The usage counts the thought and the tags as the reply's tokens.
    assert reply.usage.completion_tokens >= reply.raw["reasoning_tokens"] + 3


@pytest.mark.model
def test_a_streamed_thought_and_reply_make_up_the_completion(
    reasoning_models: dict[str, EmbeddedLlama],
) -> None:
    model = reasoning_models["strips"]
    reasoned = model.clone(
        settings=model.settings.clone(json_schema=route_schema(WEATHER)), reasoning_budget=16
    )
    *pieces, last = reasoned.stream(ASKED)
    assert isinstance(last, Completion)
    assert all(isinstance(piece, TextDelta) for piece in pieces)
    deltas: list[Any] = pieces
    assert "".join(p.text for p in deltas if p.reasoning) == last.reasoning
    assert "".join(p.text for p in deltas if not p.reasoning) == last.text


@pytest.mark.model
def test_a_free_reply_after_the_thought_keeps_its_cap(reasoning_models: dict[str, EmbeddedLlama]) -> None:
    model = reasoning_models["opens"]
    reply = model.clone(settings=model.settings.clone(max_tokens=8), reasoning_budget=8).complete(ASKED)
    assert reply.raw is not None
    assert reply.raw["reasoning_tokens"] <= 8
    assert reply.usage.completion_tokens <= 8 + 8 + 3 + 3  # thought, tags (open, close), reply
    assert reply.reasoning is not None


@pytest.mark.model
def test_without_a_reasoning_budget_the_reply_has_no_reasoning_and_the_template_given_is_used(
    reasoning_models: dict[str, EmbeddedLlama],
) -> None:
    model = reasoning_models["opens"]
    reply = model.clone(settings=model.settings.clone(json_schema=route_schema(WEATHER))).complete(ASKED)
    assert reply.reasoning is None
    assert "<|im_start|>assistant\n<think>\n" in context_text(model)  # the template given, not the GGUF's


@pytest.mark.model
def test_a_reasoning_budget_is_refused_by_name_where_it_cannot_be_served(
    reasoning_models: dict[str, EmbeddedLlama],
) -> None:
    model = reasoning_models["opens"]
    for bad in (0, -1, True, 1.5, "8"):
        with pytest.raises(ValueError, match="reasoning_budget is the most tokens of a thought"):
            model.clone(reasoning_budget=bad)
    plain = EmbeddedLlama(n_threads=TEST_THREADS)
    try:
        assert plain.reasoning_tags is None
        with pytest.raises(ValueError, match=r"template has none \(no <think> and </think>\); give one"):
            plain.clone(reasoning_budget=8)
    finally:
        plain.close()
    with pytest.raises(ValueError, match="chat_template is a Jinja chat template's text"):
        EmbeddedLlama(chat_template=" ")


@pytest.mark.model
def test_the_async_backend_reasons_as_the_one_it_wraps(reasoning_models: dict[str, EmbeddedLlama]) -> None:
    wrapped = AsyncEmbeddedLlama(reasoning_models["strips"].clone())
    assert wrapped.reasoning_tags == THINK
    assert wrapped.reasoning_budget is None
    reasoned = wrapped.clone(reasoning_budget=4)
    assert reasoned.reasoning_budget == 4
    assert reasoned.backend.reasoning_budget == 4
    reply = anyio.run(reasoned.complete, ASKED)
    assert reply.raw is not None
    assert reply.raw["reasoning_tokens"] <= 4
    with pytest.raises(ValueError, match="reasoning_budget is the most tokens"):
        wrapped.clone(reasoning_budget=0)


@pytest.mark.model
def test_the_command_line_gives_the_template_and_names_a_file_it_cannot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolrouting._cli.entry import main
    from toolrouting._cli.parser import build_parser
    from toolrouting._cli.run import model_backend

    template = tmp_path / "think.jinja"
    template.write_text(OPENS_REASONING, encoding="utf-8")
    argv = ["run", "hello", "--threads", str(TEST_THREADS), "--quiet", "--chat-template"]
    backend = model_backend(build_parser().parse_args([*argv, str(template)]))
    assert isinstance(backend, EmbeddedLlama)
    with backend:
        assert backend.reasoning_tags == THINK
    assert main([*argv, str(tmp_path / "absent.jinja")]) == 2
    assert f"--chat-template {tmp_path / 'absent.jinja'}: no such file" in capsys.readouterr().err
    template.write_bytes(b"\xff\xfe")
    assert main([*argv, str(template)]) == 2
    assert "--chat-template" in (err := capsys.readouterr().err)
    assert "not UTF-8 text" in err


@pytest.mark.model
def test_the_pages_example_reasons_and_routes(capsys: pytest.CaptureFixture[str]) -> None:
    page = (ROOT / "docs" / "embedded.md").read_text(encoding="utf-8")
    section = page[page.index("## Reasoning in the model's own tags") :]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/embedded.md", "exec"), {})
    thought, action = capsys.readouterr().out.rsplit("\n", 2)[-3:-1]
    assert parse_route(action, ["get_weather"]).ok
    assert "</think>" not in thought
