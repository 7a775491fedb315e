"""Regression suites: cases, samples, judging, baselines, reports and the tool lint."""
