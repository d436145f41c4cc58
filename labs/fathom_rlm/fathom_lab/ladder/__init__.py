"""The honest scripted reference: a planner that reads only through its tools, its slice reader,
and the weaker rungs held back to one depth or to `train`'s wordings. Nothing here sees the gold;
`fathom_lab.audit` builds its attacks on top of these, never the other way round."""
