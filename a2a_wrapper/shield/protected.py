"""Control files: files in a workspace that make code run outside any tool call. No agent may change them.

Git runs `core.fsmonitor`, `core.pager`, aliases, hooks and filter drivers from a repository's `.git` (its
config, its hooks, a `commondir` or `gitdir:` pointing at another config) at the next `git status`, and it
follows a new nested `.git` or `.gitmodules`; OpenCode loads a workspace's `.opencode/` and `opencode.json` at
its next start; the Copilot CLI runs `.github/hooks/`; Claude Code, Codex and Gemini read hooks and MCP
servers from `.claude/`, `.codex/`, `.gemini/` and `.mcp.json`; VS Code runs `.vscode/tasks.json` and the
settings that name programs; dev containers run `postCreateCommand`; husky and pre-commit run their hooks at
the next commit; direnv runs `.envrc` when the owner enters the folder. A write there is code the shield never
sees run, so this rule is a layer of its own (`built-in`): deny beats any allow, a person's included.

CONTROL_FILES is the one list of them: the shield denies writing it here, the sandbox binds what exists of it
read-only at each start (masks.py), and after each turn of an agent working in place the wrapper removes what
a turn created of it and restores what a turn changed (sandbox/control_files.py). Each pattern is `**/` and
literal folder names, so it matches at any depth, in any case (`.GIT` is `.git` on a case-insensitive disk).
A git directory of another name (a bare repository planted anywhere) has no name to list: the check after each
turn finds it by its shape (sandbox/git_dirs.py).

Not listed, on purpose: instructions for a model (`AGENTS.md`, `CLAUDE.md`, `.github/copilot-instructions.md`,
`.cursorrules`): text the next agent reads, whose tool calls meet that agent's own shield, and which a task may
rightly ask to edit; `.env`: data that programs read by choice; `.gitignore`: it hides files, it runs nothing.
"""

from a2a_wrapper.shield.rules import Rule

CONTROL_FILES = (
    "**/.git/**",  # the folder (or a `gitdir:` file) and all under it: config, hooks, commondir, modules
    "**/.gitmodules",
    "**/.gitattributes",  # picks the filter, diff and merge drivers git runs
    "**/.opencode/**",
    "**/opencode.json",
    "**/opencode.jsonc",
    "**/.github/hooks/**",
    "**/.claude/**",
    "**/.codex/**",
    "**/.gemini/**",
    "**/.mcp.json",
    "**/.vscode/**",
    "**/.devcontainer/**",
    "**/.devcontainer.json",
    "**/.husky/**",
    "**/.pre-commit-config.yaml",
    "**/.envrc",
    # other agents' and editors' hooks, MCP servers and language servers, run when the owner opens the folder
    "**/.cursor/**",
    "**/.amazonq/**",
    "**/.roo/**",
    "**/.kiro/**",
    "**/.windsurf/**",
    "**/.helix/**",
    "**/.zed/**",
    "**/.idea/**",
    "**/.nvim.lua",
    "**/.nvimrc",
    "**/.exrc",
    # hook managers and package managers' settings that name a program to run
    "**/lefthook.yml",
    "**/lefthook.yaml",
    "**/.lefthook.yml",
    "**/.yarnrc.yml",
    "**/.npmrc",
)
PROTECTED = Rule(
    name="code-outside-tool-calls",
    decision="deny",
    class_=("write", "delete"),
    paths=CONTROL_FILES,
    reason="This file makes code run outside any tool call (git's folder and attributes, agent and editor config, "
    "hooks); no agent may change it. Do not retry; say what you need changed and why.",
)
