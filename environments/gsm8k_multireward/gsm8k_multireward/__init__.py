"""gsm8k-multireward: GSM8K with a correctness reward and a correctness-gated length reward."""
