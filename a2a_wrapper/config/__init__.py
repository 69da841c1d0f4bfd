"""The agent's config: the sections a user writes (settings), reading files with ${VAR} (files, source), and
loading the Node a2a-wrapper's configs (node). It imports no feature package; the pure shield and guard define
the grammar of their own sections, which the settings validate at load so a bad rule names its key."""
