"""What every backend adapter shares, written once: the MCP config mapping and the parts of a turn and a
child process that do not depend on the protocol."""
