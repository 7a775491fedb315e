"""OpenTelemetry: runs exported as spans, and spans from other agents imported as runs."""
