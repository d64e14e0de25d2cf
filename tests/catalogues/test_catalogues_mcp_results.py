"""What the model reads of an MCP result, how a long one is cut, and where servers are configured.

These need no server and no SDK: results are taken in their wire shape, configs as JSON.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolrouting import (
    MCPHTTPServer,
    MCPStdioServer,
    ToolOutput,
    ToolServerError,
    mcp_server,
    mcp_servers_from_config,
)
from toolrouting._catalogues.mcp_results import tool_output
from toolrouting._provider import cut_middle


def test_text_blocks_are_joined_and_is_error_is_kept() -> None:
    result = {"content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]}
    assert tool_output(result, 100) == ToolOutput("one\ntwo")
    assert tool_output({**result, "isError": True}, 100) == ToolOutput("one\ntwo", is_error=True)
    assert tool_output({"content": [], "isError": True}, 100).content == (
        "the tool reported an error and gave no content"
    )
    assert tool_output({"content": []}, 100).content == "(the tool returned no content)"


def test_structured_content_is_json_where_no_block_has_text() -> None:
    structured = {"width": 3, "unit": "m"}
    assert (
        tool_output({"content": [], "structuredContent": structured}, 100).content == '{"width":3,"unit":"m"}'
    )
    both = {"content": [{"type": "text", "text": "3 m"}], "structuredContent": structured}
    assert tool_output(both, 100).content == "3 m"  # the same data twice: the text is what was meant


def test_other_blocks_are_described_not_dropped() -> None:
    data = base64.b64encode(b"\x89PNG" + bytes(60)).decode()
    blocks = [
        {"type": "image", "data": data, "mimeType": "image/png"},
        {"type": "audio", "data": "not base64!", "mimeType": "audio/wav"},
        {"type": "resource_link", "uri": "file:///notes/M1.md", "name": "M1", "mimeType": "text/markdown"},
        {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "the text itself"}},
        {"type": "resource", "resource": {"uri": "file:///a.bin", "blob": data, "mimeType": "x/y"}},
        {"type": "hologram"},
        "not a block",
    ]
    assert tool_output({"content": blocks}, 1000).content.splitlines() == [
        "[image: image/png, 64 bytes]",
        "[audio: audio/wav, 11 characters of data that is not base64]",
        "[resource link: M1 at file:///notes/M1.md, text/markdown]",
        "the text itself",
        "[resource: file:///a.bin, x/y, 64 bytes]",
        "[hologram content]",
        "[a content block that is a str]",
    ]


def test_a_long_result_keeps_head_and_tail_around_a_marker() -> None:
    text = "HEAD" + "." * 10_000 + "TAIL"
    cut = cut_middle(text, 100)
    assert len(cut) == 100
    assert cut.startswith("HEAD")
    assert cut.endswith("TAIL")
    assert "\n[... 9939 characters cut ...]\n" in cut
    assert tool_output({"content": [{"type": "text", "text": text}]}, 100).content == cut


@given(st.text(max_size=300), st.integers(min_value=40, max_value=400))
def test_cut_middle_never_passes_its_limit_and_keeps_short_text(text: str, limit: int) -> None:
    cut = cut_middle(text, limit)
    assert len(cut) <= limit
    if len(text) <= limit:
        assert cut == text
    else:
        head, _, tail = cut.partition("\n[... ")
        assert text.startswith(head)
        assert text.endswith(tail.split(" characters cut ...]\n", 1)[1])


def test_a_server_from_one_string() -> None:
    assert mcp_server("uvx mcp-server-git --repository 'my repo'") == MCPStdioServer(
        "uvx", ("mcp-server-git", "--repository", "my repo")
    )
    assert mcp_server(" https://example.org/mcp ") == MCPHTTPServer("https://example.org/mcp")
    with pytest.raises(ToolServerError, match="the command line is empty"):
        mcp_server("   ")
    with pytest.raises(ToolServerError, match="cannot be split"):
        mcp_server("uvx 'unclosed")


def test_the_mcp_servers_config_of_claude_desktop_and_vs_code(tmp_path: Path) -> None:
    config = {
        "mcpServers": {
            "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
            "off": {"command": "uvx", "args": ["anything"], "disabled": True},
            "remote": {"url": "https://example.org/mcp", "headers": {"Authorization": "Bearer k"}},
        }
    }
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    servers = mcp_servers_from_config(path)
    assert servers == [
        MCPStdioServer("uvx", ("mcp-server-time",), env={"TZ": "UTC"}, name="time"),
        MCPHTTPServer("https://example.org/mcp", headers={"Authorization": "Bearer k"}, name="remote"),
    ]
    assert "Bearer" not in repr(servers)  # headers and env may hold keys: never shown
    vs_code = {"servers": {"git": {"type": "stdio", "command": "uvx", "args": ["mcp-server-git"]}}}
    assert mcp_servers_from_config(vs_code) == [MCPStdioServer("uvx", ("mcp-server-git",), name="git")]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"tools": []}, 'has no "mcpServers" object'),
        ({"mcpServers": {"a": {"type": "sse", "url": "http://x/sse"}}}, "SSE is the old MCP transport"),
        ({"mcpServers": {"a": {"args": ["x"]}}}, 'an entry has a "command"'),
        ({"mcpServers": {"a": {"command": "x", "args": "y"}}}, '"args" is a list of strings'),
        ({"mcpServers": {"a": {"url": "ftp://x"}}}, "is an http:// or https:// URL"),
        ({"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}, '"env" maps names to strings'),
    ],
)
def test_a_bad_config_is_a_named_error(config: dict[str, object], message: str) -> None:
    with pytest.raises(ToolServerError, match=message):
        mcp_servers_from_config(config)


def test_an_unreadable_config_file_is_a_named_error(tmp_path: Path) -> None:
    with pytest.raises(ToolServerError, match="cannot read the config"):
        mcp_servers_from_config(tmp_path / "absent.json")
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(ToolServerError, match="the config is not JSON"):
        mcp_servers_from_config(tmp_path / "bad.json")
