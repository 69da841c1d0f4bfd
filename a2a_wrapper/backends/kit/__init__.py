"""What every backend adapter shares, written once: the turn stream and its batching (stream), the restart loop
on the shared backoff (restarter), the bounded wait of an abort (abort), replies a backend waits on (pending),
which turn a session's callbacks reach (router), the isolated environment of a backend process (isolation), a
prompt's files decoded (prompt_files) and the MCP config mapping (mcp)."""
