"""Gemini CLI as a backend: the ACP backend driving `gemini --acp` on a relayed Gemini API provider. backend (the
kind), launch (command and environment), turn (its shell requests read with their command)."""
