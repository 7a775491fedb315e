"""Read-only views of runs: timeline, export, search and cost."""
