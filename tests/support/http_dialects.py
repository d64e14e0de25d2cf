"""What each HTTP dialect is sent and answers, shared by the HTTP backends' tests: the messages,
the schema and grammar each dialect carries, and the replies of the servers that speak them."""

from __future__ import annotations

from typing import Any

from toolrouting import Settings, route_grammar
from toolrouting._backends.base import Message

MESSAGES: list[Message] = [
    {"role": "system", "content": "Route the request."},
    {"role": "user", "content": "Find the llama docs."},
]
SCHEMA: dict[str, Any] = {
    "type": "object",
    "anyOf": [
        {
            "type": "object",
            "properties": {"tool": {"const": "search"}, "arguments": {"type": "object"}},
            "required": ["tool", "arguments"],
        },
        {"type": "object", "properties": {"tool": {"const": "none"}}, "required": ["tool"]},
    ],
}
ACTION = '{"tool": "search", "arguments": {"query": "llama"}}'


def chat_completion(text: str | None = ACTION, finish: str = "stop", used: int = 12) -> dict[str, Any]:
    """An OpenAI chat.completion object, as OpenAI, llama.cpp, llama-cpp-python and KoboldCpp answer."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 30, "completion_tokens": used, "total_tokens": 30 + used},
    }


def ollama_chat(text: str = ACTION, done_reason: str = "stop", used: int = 12) -> dict[str, Any]:
    """Ollama's /api/chat answer with stream false (docs/api.md, 'Chat request (No streaming)')."""
    return {
        "model": "smollm2",
        "created_at": "2024-12-06T00:46:58.265747Z",
        "message": {"role": "assistant", "content": text},
        "done_reason": done_reason,
        "done": True,
        "prompt_eval_count": 30,
        "eval_count": used,
    }


ROUTED = Settings(json_schema=SCHEMA, json_schema_name="tool_route", max_tokens=64)


#: Our grammar as the three grammar-taking dialects send it (its text is tests/grammar/test_grammar.py's
#: subject): in the field ``grammar``, in place of the schema, never beside it.
OUR_GBNF = route_grammar(SCHEMA, bounded=True).gbnf
SAMPLED = Settings(temperature=0.0, top_p=0.9, top_k=20, seed=7, stop=("\n\n", "END"))

# The whole body of every dialect, in three states: bare, routed (schema and cap), sampled; the
# dialects that take a grammar also routed with grammar="server" (the schema as before).
EXPECTED: dict[tuple[str, str], dict[str, Any]] = {
    ("llama.cpp", "routed"): {"messages": MESSAGES, "max_tokens": 64, "grammar": OUR_GBNF},
    ("llama-cpp-python", "routed"): {"messages": MESSAGES, "max_tokens": 64, "grammar": OUR_GBNF},
    ("koboldcpp", "routed"): {"messages": MESSAGES, "max_tokens": 64, "max_length": 64, "grammar": OUR_GBNF},
    ("openai", "bare"): {"messages": MESSAGES},
    ("openai", "routed"): {
        "messages": MESSAGES,
        "max_tokens": 64,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "tool_route", "schema": SCHEMA, "strict": False},
        },
    },
    ("openai", "sampled"): {
        "messages": MESSAGES,
        "temperature": 0.0,
        "top_p": 0.9,
        "top_k": 20,
        "seed": 7,
        "stop": ["\n\n", "END"],
    },
    ("llama.cpp", "bare"): {"messages": MESSAGES},
    ("llama.cpp", "server grammar"): {
        "messages": MESSAGES,
        "max_tokens": 64,
        "response_format": {"type": "json_object", "schema": SCHEMA},
    },
    ("llama.cpp", "sampled"): {
        "messages": MESSAGES,
        "temperature": 0.0,
        "top_p": 0.9,
        "top_k": 20,
        "seed": 7,
        "stop": ["\n\n", "END"],
    },
    ("llama-cpp-python", "bare"): {"messages": MESSAGES},
    ("llama-cpp-python", "server grammar"): {
        "messages": MESSAGES,
        "max_tokens": 64,
        "response_format": {"type": "json_object", "schema": SCHEMA},
    },
    ("llama-cpp-python", "sampled"): {
        "messages": MESSAGES,
        "temperature": 0.0,
        "top_p": 0.9,
        "top_k": 20,
        "seed": 7,
        "stop": ["\n\n", "END"],
    },
    ("koboldcpp", "bare"): {"messages": MESSAGES},
    ("koboldcpp", "server grammar"): {
        "messages": MESSAGES,
        "max_tokens": 64,
        "max_length": 64,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "tool_route", "schema": SCHEMA, "strict": False},
        },
    },
    ("koboldcpp", "sampled"): {
        "messages": MESSAGES,
        "temperature": 0.0,
        "top_p": 0.9,
        "top_k": 20,
        "seed": 7,
        "stop": ["\n\n", "END"],
    },
    ("ollama", "bare"): {"model": "smollm2", "messages": MESSAGES, "stream": False},
    ("ollama", "routed"): {
        "model": "smollm2",
        "messages": MESSAGES,
        "stream": False,
        "format": SCHEMA,
        "options": {"num_predict": 64},
    },
    ("ollama", "sampled"): {
        "model": "smollm2",
        "messages": MESSAGES,
        "stream": False,
        "options": {"temperature": 0.0, "top_p": 0.9, "top_k": 20, "seed": 7, "stop": ["\n\n", "END"]},
    },
}
STATES = {
    "bare": Settings(),
    "routed": ROUTED,
    "server grammar": ROUTED.clone(grammar="server"),
    "sampled": SAMPLED,
}
DIALECT_NAMES = ("openai", "llama.cpp", "llama-cpp-python", "koboldcpp", "ollama")
