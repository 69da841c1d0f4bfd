"""Files in a workspace that make code run outside any tool call: no agent may change them, whatever the rules.

Git runs `core.fsmonitor`, `core.pager`, aliases and hooks from `.git/config` and `.git/hooks/` at the next
`git status`; OpenCode loads the plugins of a workspace's `.opencode/` and `opencode.json` at its next start;
the Copilot CLI runs `.github/hooks/` when file hooks are on. A write there is code the shield never sees run,
so this rule is a layer of its own (`built-in`): deny beats any allow, a person's included. In the sandbox
the ones that exist at start are bound read-only too, with a shield or without.
"""

from a2a_wrapper.shield.rules import Rule

PROTECTED_PATHS = (
    "**/.git/config",
    "**/.git/hooks/**",
    "**/.opencode/**",
    "**/opencode.json",
    "**/opencode.jsonc",
    "**/.github/hooks/**",
)

PROTECTED = Rule(
    name="code-outside-tool-calls",
    decision="deny",
    class_=("write", "delete"),
    paths=PROTECTED_PATHS,
    reason="This file makes code run outside any tool call (git config and hooks, OpenCode plugins and config, "
    "Copilot hooks); no agent may change it. Do not retry; say what you need changed and why.",
)
