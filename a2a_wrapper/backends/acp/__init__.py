"""The generic ACP backend: any Agent Client Protocol agent over stdio (see backend.py)."""
