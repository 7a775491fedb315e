"""Run-vs-run diffs: tool schemas, decision chains aligned by turn, word diffs of their texts."""
