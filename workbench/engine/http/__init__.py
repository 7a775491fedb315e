"""The HTTP servers: `serve-model` (replay or script as an endpoint) and the capture proxy."""
