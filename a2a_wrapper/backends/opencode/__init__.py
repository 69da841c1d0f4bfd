"""OpenCode as a backend: `opencode serve` spawned (in the sandbox), driven over its HTTP API and one SSE event
stream; its permission requests and the plugin's pre-tool hook both reach the shield. backend (lifecycle,
sessions), turn, launch (argv, env, its config file and plugin), translate (events), client, event_stream, hook."""
