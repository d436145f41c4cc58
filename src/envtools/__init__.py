"""Cross-environment tools: scripted policy server, GDPO reference, evaluation reports."""
