"""The large catalogue and the conversation the serve shortlist tests send, and what was offered."""

from __future__ import annotations

from typing import Any

from toolrouting import ScriptedRequest


def _tool(name: str, description: str, **properties: str) -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {key: {"type": "string", "description": text} for key, text in properties.items()},
        "required": list(properties),
    }
    return {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}


#: Ten tools whose words barely overlap, so a question ranks one or two of them clearly first.
TOOLS: list[Any] = [
    _tool("get_weather", "The weather forecast for a city.", city="the city"),
    _tool("send_email", "Send an email message to a recipient.", to="the address", body="the text"),
    _tool("read_file", "Read a file from the disk.", path="the file's path"),
    _tool("list_directory", "List the entries of a directory.", path="the directory's path"),
    _tool("git_status", "The working tree status of a git repository.", repo="the repository"),
    _tool("create_event", "Create a calendar event.", title="the event's title", day="the day"),
    _tool("search_web", "Search the web for pages.", query="the search terms"),
    _tool("translate_text", "Translate text into another language.", text="the text", language="target"),
    _tool("convert_currency", "Convert an amount between currencies.", amount="how much", currency="to"),
    _tool("play_music", "Play a song or an album.", song="the song"),
]
NAMES = [tool["function"]["name"] for tool in TOOLS]
QUESTION = "What is the weather forecast in Paris, and email it to Ana?"
MESSAGES: list[Any] = [{"role": "user", "content": QUESTION}]
K = 3


def name_of(tool: dict[str, Any]) -> str:
    name: str = tool["function"]["name"]
    return name


def offered(request: ScriptedRequest) -> list[str]:
    """The tools a decision's route offers, ``none`` among them when it is."""
    schema = request.settings.json_schema
    assert schema is not None
    return [alternative["properties"]["tool"]["const"] for alternative in schema["anyOf"]]
