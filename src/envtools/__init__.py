"""Cross-environment tools: scripted policy server, scripted policies, offline evaluation report."""
