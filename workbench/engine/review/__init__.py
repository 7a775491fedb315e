"""Review: people's and judges' annotations on runs, turns and tool calls (`notes`). The
contract and its files are `traces.annotations`; the store reads them (`traces.store.notes`)."""
