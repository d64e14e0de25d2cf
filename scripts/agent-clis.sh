#!/bin/sh
# Installs the two agent CLIs the serve tests run end to end, at pinned versions, from npm:
# Claude Code (@anthropic-ai/claude-code, which speaks Anthropic's Messages API) and Codex
# (@openai/codex, which speaks OpenAI's Responses API). They are cached outside the repository
# and outside any virtual environment, so later set-ups, and a fresh clone, skip the download.
#
# Why: they are the agents most people run, they ship on their own release cadence, and each
# sends fields no SDK sends by default (thinking, system text mid-conversation, namespace and
# hosted tools). A test through the real binaries is the only check that serve takes them.
#
# Prints two lines on stdout, and nothing else: `claude PATH` and `codex PATH`, the executables.
# Skips npm when both are cached at their pinned versions. Needs node and npm (node 18 or later).
# Both ship a native binary per platform, as an optional dependency npm picks for this machine:
# on linux-x64, 358 MB downloaded once (186 MB Claude Code, 172 MB Codex), 810 MB on disk; npm's
# own cache keeps the archives too. Claude Code's postinstall copies its binary into place, so
# npm must run install scripts (its default).
# Environment: AGENT_CLIS_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/toolrouting/agent-clis).
set -eu

CLAUDE_CODE_VERSION=2.1.332
CODEX_VERSION=0.171.0
CACHE=${AGENT_CLIS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolrouting/agent-clis}
# One prefix per pinned pair: a new pin installs beside the old one instead of over it.
PREFIX=$CACHE/claude-code-$CLAUDE_CODE_VERSION-codex-$CODEX_VERSION
CLAUDE=$PREFIX/node_modules/.bin/claude
CODEX=$PREFIX/node_modules/.bin/codex

installed() {
    # The version each package.json records, so a half-written install is never taken for a cache.
    [ -x "$CLAUDE" ] && [ -x "$CODEX" ] || return 1
    node -e '
        const [prefix, claude, codex] = process.argv.slice(1);
        const version = (name) => require(prefix + "/node_modules/" + name + "/package.json").version;
        process.exit(version("@anthropic-ai/claude-code") === claude && version("@openai/codex") === codex ? 0 : 1);
    ' "$PREFIX" "$CLAUDE_CODE_VERSION" "$CODEX_VERSION" 2>/dev/null
}

for tool in node npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "agent CLIs: $tool is not installed (Claude Code and Codex are npm packages)" >&2
        exit 1
    fi
done

if ! installed; then
    mkdir -p "$CACHE"
    WORK=$(mktemp -d "$CACHE/install.XXXXXX")
    trap 'rm -rf "$WORK"' EXIT
    echo "agent CLIs: installing @anthropic-ai/claude-code@$CLAUDE_CODE_VERSION and" \
        "@openai/codex@$CODEX_VERSION from npm (about 360 MB)" >&2
    # A package.json of its own, so npm installs here and never walks up into a project.
    echo '{"private": true}' >"$WORK/package.json"
    # --no-fund, --no-audit, --no-update-notifier: nothing but the two packages is fetched.
    # Codex's platform binary is an optional dependency; --include=optional keeps it under a
    # user configuration that omits optional packages.
    (cd "$WORK" && npm install --no-fund --no-audit --no-update-notifier --include=optional \
        --loglevel=error "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" \
        "@openai/codex@$CODEX_VERSION" >&2)
    # Moved into place whole, so an interrupted install is never taken for a cache.
    rm -rf "$PREFIX"
    mv "$WORK" "$PREFIX"
    trap - EXIT
    if ! installed; then
        echo "agent CLIs: the install in $PREFIX does not hold the pinned versions" >&2
        exit 1
    fi
fi

echo "claude $CLAUDE"
echo "codex $CODEX"
