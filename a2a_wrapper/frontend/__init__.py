"""The A2A front end: the Starlette app and its routes (app), auth, the agent card, the executor that adapts
a2a-sdk to live turns, the live turns themselves with their per-context locks (turns), the reporter that maps
StreamEvents to A2A updates, prompts, and metrics. It knows backends only through the Backend contract."""
