"""The OpenCode 2 backend (`@opencode/cli` 2.x): `opencode serve` driven over its authenticated `/api`."""
