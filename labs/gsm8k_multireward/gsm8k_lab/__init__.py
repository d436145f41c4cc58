"""gsm8k-multireward's lab: its scripted policy ladder (`policies`), never shipped."""
