"""Background indexing: the repo map and duplicate index built off the UI's interpreter,
cached on disk per repository (see service.py, worker.py, cache.py; docs/performance.md)."""
