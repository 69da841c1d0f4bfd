"""The agent's A2A request handler: a2a-sdk's DefaultRequestHandler, wrapped by composition so every binding
(JSON-RPC, REST, gRPC; 1.0 and 0.3) gets the same additions — message limits, retries that run once, whole answers
in stored tasks, bounded ListTasks pages."""
