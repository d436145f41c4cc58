"""Instruments that audit the fathom-rlm generator and its reward from outside the environment.

* `grammar_reader`: `read_facts` and `read_aliases`, a perfect reader of the grammar (the
  inverse of the renderer), which the slice reader and the tests read documents with;
* `answering`: the answer, count or next hop a perfect reader gives from the facts it read;
* `baselines`: blind and grep answerers that must stay near chance, and the answer type a
  question asks for;
* `predictability`: how well an aggregation count can be guessed from the question alone;
* `verdict_lexicon`: what word weights or part signs learned from `train`'s verdicts make of
  another split's.

Nothing on the environment's generation, reward or adapter path imports them.
"""
