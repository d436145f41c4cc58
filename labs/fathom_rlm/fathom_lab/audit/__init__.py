"""What a fair fathom-rlm must defeat, and instruments that audit its generator from outside.

* the reward audit's attacks (`attacks`, with `gold`, the gold-in-hand lookup only attacks use)
  and the code-only solvers (`code_only`, `adversary`, `keyword_solver`, the verdict attacks,
  `english_reader`, `value_tells`, `position_tell`, `sign_solver`);
* `baselines`: blind and grep answerers that must stay near chance;
* `predictability`: how well an aggregation count can be guessed from the question alone;
* `verdict_lexicon`: what word weights learned from `train`'s verdicts make of another split's.

Nothing on the environment's generation, reward or adapter path imports them.
"""
